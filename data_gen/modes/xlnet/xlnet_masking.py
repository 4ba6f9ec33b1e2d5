"""XLNet's positions to predict: spans of whole words, then single words, exactly G in all.

A part of a record (its reuse window, or A <sep> B <sep> <cls>) arrives as its
maskable units: whole words as (begin, end) position ranges, in order, never a
special token, never a word cut by the part's edges. `fill_part` chooses from them
as zihangdai/xlnet's _sample_mask means to, over words instead of pieces:

  1. Spans. From a cursor at the part's start: draw n in 1..MAX_SPAN_WORDS with
     P(n) ~ 1/n (at most the count still wanted), a context of
     c = n * mask_alpha // mask_beta tokens and a left share l, uniform in [0, c);
     the span is the n adjacent words from the first word that begins at
     cursor + l or later (fewer when a special token or the part's end comes
     first, or when more would pass the count); the cursor moves to the span's
     end + c - l. Stops at the part's end, at the count, or when the next word
     alone would pass it.
  2. Top-up with single words to exactly the count: free words drawn uniformly,
     a word kept only when it fits what is still wanted and the rest can still
     be made of whole free words (a subset-sum test over the free words'
     lengths); words that fail are dropped from the draw. So the count is exact
     whenever any set of whole words makes it up; otherwise the shortfall is
     returned (the caller moves it to the other part, or drops the record).

Everything is drawn from the chunk's random.Random, so the choice is reproducible.
"""
import bisect
import collections

MAX_SPAN_WORDS = 5


def _span_cumulative():
    """Running sums of P(n) ~ 1/n, n = 1..MAX_SPAN_WORDS, ending at exactly 1.0."""
    weights = [1.0 / n for n in range(1, MAX_SPAN_WORDS + 1)]
    running, cumulative = 0.0, []
    for weight in weights:
        running += weight / sum(weights)
        cumulative.append(running)
    cumulative[-1] = 1.0
    return cumulative


_SPAN_CUMULATIVE = _span_cumulative()


def _draw_words(random):
    draw = random()
    for n_minus_1, bound in enumerate(_SPAN_CUMULATIVE):
        if draw < bound:
            return n_minus_1 + 1
    return MAX_SPAN_WORDS


def sample_spans(units, part_begin, part_end, goal, rng, mask_alpha, mask_beta, taken):
    """Step 1: returns [(begin, end, words)] of the spans chosen; marks their units in
    `taken` (a bytearray, one byte per unit)."""
    begins = [begin for begin, _ in units]
    random = rng.random
    spans, count, cursor = [], 0, part_begin
    while count < goal and cursor < part_end:
        n = min(_draw_words(random), goal - count)
        context = n * mask_alpha // mask_beta
        left = int(random() * context)
        first = bisect.bisect_left(begins, cursor + left)
        if first == len(units):
            break
        span_begin = span_end = units[first][0]
        last = first
        while last < len(units) and last - first < n:
            begin, end = units[last]
            if (begin != span_end and last != first) or count + end - span_begin > goal:
                break
            span_end = end
            last += 1
        if last == first:
            break
        taken[first:last] = b"\x01" * (last - first)
        count += span_end - span_begin
        spans.append((span_begin, span_end, last - first))
        cursor = span_end + context - left
    return spans


def _can_make(lengths, total):
    """True if some sub-multiset of `lengths` (Counter length -> how many) sums to total."""
    if total <= 0 or lengths[1] >= total:
        return total >= 0
    reachable = 1  # bit s: sum s can be made
    limit = (1 << (total + 1)) - 1
    for length, how_many in lengths.items():
        for _ in range(min(how_many, total // length)):
            reachable = (reachable | (reachable << length)) & limit
    return bool(reachable >> total & 1)


def top_up(units, taken, need, rng):
    """Step 2: marks whole free units in `taken` adding up to `need` tokens; returns
    (their (begin, end) ranges, shortfall): shortfall 0, or `need` when no set of free
    words makes it up exactly (then nothing is marked)."""
    if need <= 0:
        return [], 0
    free = [index for index in range(len(units)) if not taken[index]]
    lengths = collections.Counter([units[index][1] - units[index][0] for index in free])
    if not _can_make(lengths, need):
        return [], need
    random = rng.random
    chosen = []
    while need:
        pick = int(random() * len(free))
        index = free[pick]
        free[pick] = free[-1]
        free.pop()
        length = units[index][1] - units[index][0]
        lengths[length] -= 1
        if length <= need and _can_make(lengths, need - length):
            taken[index] = 1
            chosen.append(units[index])
            need -= length
    return chosen, 0


def fill_part(units, part_begin, part_end, goal, rng, mask_alpha, mask_beta):
    """Steps 1 and 2 over one part -> (taken bytearray, spans, shortfall)."""
    taken = bytearray(len(units))
    spans = sample_spans(units, part_begin, part_end, goal, rng, mask_alpha, mask_beta, taken)
    _, shortfall = top_up(units, taken, goal - sum(end - begin for begin, end, _ in spans), rng)
    return taken, spans, shortfall


def choose_is_masked(length, reuse_units, rest_units, reuse_length, goal, rng, mask_alpha,
                     mask_beta):
    """is_masked (a list of 0/1, `length` long) with exactly `goal` ones, or None.

    goal - goal // 2 are chosen in the reuse window [0, reuse_length) and goal // 2 in
    the rest, each with fill_part (as upstream halves its num_predict); what a part
    cannot make up moves to the other part's top-up; None when the record's words
    cannot make up `goal` (the caller drops it).
    """
    reuse_goal = goal - goal // 2
    reuse_taken, _, short = fill_part(reuse_units, 0, reuse_length, reuse_goal, rng,
                                      mask_alpha, mask_beta)
    rest_taken, _, short = fill_part(rest_units, reuse_length, length, goal // 2 + short, rng,
                                     mask_alpha, mask_beta)
    if short:
        _, short = top_up(reuse_units, reuse_taken, short, rng)
        if short:
            return None
    is_masked = [0] * length
    for units, taken in ((reuse_units, reuse_taken), (rest_units, rest_taken)):
        for (begin, end), chosen in zip(units, taken):
            if chosen:
                is_masked[begin:end] = [1] * (end - begin)
    return is_masked
