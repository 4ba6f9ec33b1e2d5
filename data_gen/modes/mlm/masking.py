"""Masked-LM selection over whole-word units.

A sequence arrives as token ids plus a parallel list `starts`:
   1  the token begins a whole-word unit (a Chinese word's first character,
      a WordPiece word's first piece),
   0  the token continues the unit before it (later characters of a jieba
      word, "##" pieces),
  -1  special token ([CLS], [SEP]): never chosen.
The "continuation" mark only decides grouping: ids are always the plain
token's id, so `masked_lm_ids` never hold a "##X" id for Chinese text.

The functions below take `use_native` (None = the C module when built, True,
False = pure Python; see example_proto.records_module). The C code makes the
same rng.random() calls and returns the same values; the Python code is the
reference and the fallback.
"""
import bisect
import functools
import itertools
import re

from data_gen.records.example_proto import records_module

# Tokens that must never be drawn as a random replacement.
_BRACKETED = re.compile(r"^\[[^\[\]]+\]$|^<[^<>]+>$")

# --masking recipes (auto: wwm for roberta/bert, ngram for albert).
MASKINGS = ("auto", "wwm", "ngram", "span", "macbert")
SPAN_GEOMETRIC_P = 0.2          # SpanBERT: span length in words ~ Geometric(0.2),
SPAN_MAX_WORDS = 10             # truncated at 10 words
MACBERT_NGRAM_SHARES = (0.4, 0.3, 0.2, 0.1)  # MacBERT: 1- to 4-word n-grams
# How the C MaskEncoder decides: 0 per token, 1 per span ([MASK]), 2 per span (similar words).
PER_SPAN_CODES = {"wwm": 0, "ngram": 0, "span": 1, "macbert": 2}


def replacement_ids(vocab):
    """Sorted ids of real tokens: no [special]/[unused*]/<S>-style, no "##" pieces."""
    ids = [token_id for token, token_id in vocab.items()
           if not _BRACKETED.match(token) and not token.startswith("##")
           and token.strip()]
    if not ids:
        raise ValueError("vocab has no ordinary token to use as random replacement")
    return sorted(ids)


def train_time_sidecar(vocab):
    """The sidecar fields of --train_time_masking records: no masks and no prediction slots
    yet, [MASK]'s id, and the random replacements (replacement_ids) as "first-last" id
    ranges joined by commas, which run_pretraining draws from."""
    ranges = []
    for token_id in replacement_ids(vocab):
        if ranges and ranges[-1][1] == token_id - 1:
            ranges[-1][1] = token_id
        else:
            ranges.append([token_id, token_id])
    return {"train_time_masking": True, "max_predictions_per_seq": None,
            "has_token_boundary": False, "mask_id": vocab["[MASK]"],
            "replacement_ids": ",".join(f"{first}-{last}" for first, last in ranges)}


def _cumulative(weights):
    """Running sums of `weights` normalised to end at exactly 1.0."""
    total = sum(weights)
    running, cumulative = 0.0, []
    for weight in weights:
        running += weight / total
        cumulative.append(running)
    cumulative[-1] = 1.0
    return cumulative


def span_length_weights(recipe, ngram=1):
    """Unnormalised P(n) of a span of n whole words, n = 1.. (None: single units)."""
    if recipe == "ngram":
        return [1.0 / n for n in range(1, ngram + 1)] if ngram > 1 else None
    if recipe == "span":
        return [SPAN_GEOMETRIC_P * (1 - SPAN_GEOMETRIC_P) ** (n - 1)
                for n in range(1, SPAN_MAX_WORDS + 1)]
    if recipe == "macbert":
        return list(MACBERT_NGRAM_SHARES)
    return None


class MaskingConfig:
    """Parameters of MLM selection.

    Attributes:
      masked_lm_prob: fraction of the sequence length to predict.
      max_predictions_per_seq: cap on predictions per sequence.
      mask_id: id of [MASK].
      replacement_ids: ids allowed as random replacement (see replacement_ids()).
      do_whole_word_mask: group continuation tokens with their unit.
      ngram: largest n of ALBERT n-gram masking over units (recipe "ngram").
      recipe: wwm | ngram | span | macbert (None: ngram when ngram > 1, else wwm).
      similar_words: macbert: {word ids tuple: tuple of same-length id tuples}.
      ngram_cumulative: cumulative P(n) of spans of n units, None for single units.
      per_span: one 80/10/10 decision per span instead of per token (span, macbert).
      span_boundaries: records carry each prediction's span boundaries (span).
    """

    def __init__(self, masked_lm_prob, max_predictions_per_seq, mask_id, replacement_ids,
                 do_whole_word_mask=True, ngram=1, recipe=None, similar_words=None):
        if not 0.0 <= masked_lm_prob <= 1.0:
            raise ValueError(f"--masked_lm_prob={masked_lm_prob}: must be within [0, 1]")
        if max_predictions_per_seq < 1:
            raise ValueError(f"--max_predictions_per_seq={max_predictions_per_seq}: must be >= 1")
        if ngram < 1:
            raise ValueError(f"--ngram={ngram}: must be >= 1")
        recipe = recipe or ("ngram" if ngram > 1 else "wwm")
        if recipe not in MASKINGS[1:]:
            raise ValueError(f"--masking={recipe!r}: choose one of {', '.join(MASKINGS)}")
        if recipe == "macbert" and similar_words is None:
            raise ValueError("--masking=macbert needs --similar_words_file")
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_id = mask_id
        self.replacement_ids = list(replacement_ids)
        self.do_whole_word_mask = do_whole_word_mask
        self.ngram = ngram
        self.recipe = recipe
        self.similar_words = similar_words if recipe == "macbert" else None
        weights = span_length_weights(recipe, ngram)
        self.ngram_cumulative = _cumulative(weights) if weights else None
        self.per_span = recipe in ("span", "macbert")
        self.span_boundaries = recipe == "span"


def whole_word_units(starts, do_whole_word_mask=True, use_native=None):
    """Groups positions into units: a list of (begin, end) ranges, in order.

    Special positions (-1) belong to no unit. Without whole-word masking every
    non-special position is a unit of its own.
    """
    module = records_module(use_native)
    if module is not None:
        units = module.whole_word_units(starts, do_whole_word_mask)
        if units is not NotImplemented:
            return units
    if not do_whole_word_mask:
        return [(position, position + 1) for position, start in enumerate(starts) if start >= 0]
    # Every non-zero entry opens a range; ranges opened by -1 (specials) are dropped.
    bounds = list(itertools.compress(range(len(starts)), starts))
    bounds.append(len(starts))
    units = list(zip(bounds, bounds[1:]))
    specials = []
    position = -1
    while True:
        try:
            position = starts.index(-1, position + 1)
        except ValueError:
            break
        specials.append(bisect.bisect_left(bounds, position))
    for index in reversed(specials):
        if index < len(units):
            del units[index]
    return units


def _draw_n(random, cumulative):
    draw = random()
    for n_minus_1, bound in enumerate(cumulative):
        if draw < bound:
            return n_minus_1 + 1
    return len(cumulative)


def _select_units(units, num_to_predict, rng):
    """Whole units in random order while they fit the budget (google-research/bert).

    The random order is a Fisher-Yates shuffle done lazily: only as many
    swaps as units visited before the budget is spent.
    """
    pool = list(units)
    size = len(pool)
    random = rng.random
    chosen = []
    for i in range(size):
        if len(chosen) >= num_to_predict:
            break
        j = i + int(random() * (size - i))
        pool[i], pool[j] = pool[j], pool[i]
        begin, end = pool[i]
        if len(chosen) + end - begin > num_to_predict:
            continue
        chosen.extend(range(begin, end))
    return chosen


def _select_ngrams(units, num_to_predict, rng, cumulative, spans=None):
    """N-gram selection: spans of n adjacent units, n drawn from `cumulative`.

    A span stops early at a gap between units ([SEP]), a covered unit or the
    budget. Appends (begin, end, first unit, end unit) of each span to `spans`
    when given.
    """
    size = len(units)
    order = list(range(size))
    random = rng.random
    covered = bytearray(units[-1][1] if units else 0)
    chosen = []
    for i in range(size):
        if len(chosen) >= num_to_predict:
            break
        j = i + int(random() * (size - i))
        order[i], order[j] = order[j], order[i]
        first = order[i]
        if covered[units[first][0]]:
            continue
        n = _draw_n(random, cumulative)
        span_begin = units[first][0]
        span_end = span_begin
        last = first
        for index in range(first, min(first + n, size)):
            begin, end = units[index]
            if begin != span_end and index != first:  # not adjacent: do not cross [SEP]
                break
            if covered[begin] or len(chosen) + (end - span_begin) > num_to_predict:
                break
            span_end = end
            last = index + 1
        if span_end == span_begin:
            continue
        covered[span_begin:span_end] = b"\x01" * (span_end - span_begin)
        chosen.extend(range(span_begin, span_end))
        if spans is not None:
            spans.append((span_begin, span_end, first, last))
    return chosen


def create_masked_lm_predictions(ids, starts, rng, config, units=None, use_native=None):
    """Chooses and corrupts MLM positions.

    Args:
      ids: list of int, the sequence (with [CLS]/[SEP], no padding), length L.
      starts: list of int in {1, 0, -1}, length L (see module doc).
      rng: random.Random, the chunk's seeded generator.
      config: MaskingConfig.
      units: optional precomputed whole_word_units(starts, ...) (reused by dupes).

    Returns:
      (output_ids, positions, labels): output_ids is a new length-L list with
      the chosen positions corrupted (80% [MASK], 10% random real token,
      10% unchanged); positions are sorted; labels[i] = ids[positions[i]].
    """
    if config.per_span:
        return mask_spans(ids, starts, rng, config, units)[:3]
    num_to_predict = _num_to_predict(ids, config)
    module = records_module(use_native)
    if module is not None:
        result = module.create_masked_lm_predictions(
            ids, starts, rng.random, num_to_predict, units, config.do_whole_word_mask,
            config.ngram_cumulative, config.mask_id,
            config.replacement_ids)
        if result is not NotImplemented:  # else inputs the C path does not take, no draw made
            return result
    if units is None:
        units = whole_word_units(starts, config.do_whole_word_mask, use_native=False)
    if config.ngram_cumulative is not None:
        chosen = _select_ngrams(units, num_to_predict, rng, config.ngram_cumulative)
    else:
        chosen = _select_units(units, num_to_predict, rng)
    chosen.sort()
    output_ids = list(ids)
    labels = []
    replacements = config.replacement_ids
    random = rng.random
    for position in chosen:
        labels.append(ids[position])
        draw = random()
        if draw < 0.8:
            output_ids[position] = config.mask_id
        elif draw >= 0.9:
            _random_tokens(output_ids, position, position + 1, replacements, random)
    return output_ids, chosen, labels


def _num_to_predict(ids, config):
    return min(config.max_predictions_per_seq,
               max(1, int(round(len(ids) * config.masked_lm_prob))))


def _random_tokens(output_ids, begin, end, replacements, random):
    for position in range(begin, end):
        output_ids[position] = replacements[int(random() * len(replacements))]


def mask_spans(ids, starts, rng, config, units=None):
    """The per-span recipes (span, macbert): n-grams of whole words, one decision each.

    Spans are chosen as _select_ngrams does. Then, span by span in position
    order, one draw decides: below 0.8 every token becomes [MASK] (span) or
    each word of the span becomes one of its similar words, drawn uniformly,
    or random tokens when it has none (macbert); from 0.9 every token becomes
    a random token; otherwise the span is kept. Word lengths never change.

    Returns (output_ids, positions, labels, span_left, span_right): the first
    three as create_masked_lm_predictions; span_left[i] / span_right[i] are the
    positions just before and just after the span of positions[i].
    """
    if units is None:
        units = whole_word_units(starts, config.do_whole_word_mask, use_native=False)
    spans = []
    _select_ngrams(units, _num_to_predict(ids, config), rng, config.ngram_cumulative, spans)
    spans.sort()
    output_ids = list(ids)
    positions, labels, span_left, span_right = [], [], [], []
    replacements = config.replacement_ids
    similar = config.similar_words
    random = rng.random
    for begin, end, first, last in spans:
        positions.extend(range(begin, end))
        labels.extend(ids[begin:end])
        span_left.extend([begin - 1] * (end - begin))
        span_right.extend([end] * (end - begin))
        draw = random()
        if draw >= 0.9:
            _random_tokens(output_ids, begin, end, replacements, random)
        elif draw < 0.8 and similar is None:
            output_ids[begin:end] = [config.mask_id] * (end - begin)
        elif draw < 0.8:
            for word_begin, word_end in units[first:last]:
                candidates = similar.get(tuple(ids[word_begin:word_end]))
                if candidates:
                    output_ids[word_begin:word_end] = candidates[
                        int(random() * len(candidates))]
                else:
                    _random_tokens(output_ids, word_begin, word_end, replacements, random)
    return output_ids, positions, labels, span_left, span_right


def token_boundary(starts, use_native=None):
    """ALBERT's token_boundary: 1 at [CLS]/[SEP] and at each unit's first token."""
    module = records_module(use_native)
    if module is not None:
        boundary = module.token_boundary(starts)
        if boundary is not NotImplemented:
            return boundary
    return [0 if start == 0 else 1 for start in starts]


def mask_and_encode(ids, starts, segment_ids, label, units, rng, config, encoder,
                    use_native=None):
    """One instance of ChunkProcessor.process: mask, then serialize.

    Returns (record, num_masked, max_id): the Example bytes of
    encoder.encode(...), len(positions), and the largest id in the output ids
    and labels. The reference of make_mask_and_encode(), which is faster.
    """
    span_left = span_right = None
    if config.per_span:
        output_ids, positions, labels, span_left, span_right = mask_spans(
            ids, starts, rng, config, units)
    else:
        output_ids, positions, labels = create_masked_lm_predictions(
            ids, starts, rng, config, units, use_native=use_native)
    boundary = token_boundary(starts, use_native) if encoder.with_token_boundary else None
    record = encoder.encode(output_ids, segment_ids, positions, labels, label, boundary,
                            span_left, span_right)
    return record, len(positions), max(max(output_ids), max(labels, default=0))


def make_mask_and_encode(config, encoder, use_native=None):
    """fn(ids, starts, segment_ids, label, units, rng) -> mask_and_encode(...).

    With the C module it is one C call per instance; it reads config and
    encoder once, here (build a new one if they change). Inputs the C path
    does not take (no draw made yet) go to the Python mask_and_encode.
    """
    python = functools.partial(mask_and_encode, config=config, encoder=encoder,
                               use_native=False)
    module = records_module(use_native)
    if module is None or type(config.masked_lm_prob) not in (float, int):
        return python
    try:
        return module.MaskEncoder(
            config.max_predictions_per_seq, config.masked_lm_prob, config.mask_id,
            config.replacement_ids, config.do_whole_word_mask, config.ngram_cumulative,
            encoder.max_seq_length, encoder.max_predictions_per_seq,
            encoder.with_token_boundary, python, PER_SPAN_CODES[config.recipe],
            config.similar_words, encoder.with_span_boundaries)
    except (TypeError, ValueError, OverflowError):  # parameters the C path does not take
        return python
