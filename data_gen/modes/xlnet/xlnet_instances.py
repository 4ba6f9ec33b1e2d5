"""XLNet's pretraining instances from one chunk's token stream (zihangdai/xlnet's layout).

The stream is the chunk's documents laid end to end, each followed by the
end-of-document token (it belongs to the document's last sentence, as upstream's
<eod> line does). Pass 0 keeps the chunk's document order; every further
--dupe_factor pass draws a new order (upstream permutes its input files per pass).

Record r of a pass (R = reuse length, S = max_seq_length, T = S - R - 3):

  input   = stream[rR, (r+1)R) + A + <sep> + B + <sep> + <cls>    (exactly S tokens)
  seg_id  = 0 for the window, A and the first <sep>; 1 for B and the second <sep>; 2 for <cls>
  target  = each position's next stream token: the window's and A's from the stream (so
            A's last token is followed by the stream's next token), the first <sep>'s is
            B's first token, B's from the stream; <cls> for the last two positions
  label   = 1 when B begins where A ends in the stream, else 0

A begins at (r+1)R, where the next record's window begins, so consecutive records
of a pass tile the stream with their windows. Sentence starts inside [(r+1)R,
(r+1)R + T) are the possible ends of A. With none, or half the time, B is random
text (label 0): A ends at a drawn sentence start (or runs on), B is drawn anywhere
in the stream, about T - len(A) tokens widened to whole sentences, and the longer
of A and B loses tokens at its right end until A + B = T. Otherwise (label 1) A
ends at a drawn sentence start, B continues the stream, and A + B is the stream's
next T tokens. Records stop where the stream has fewer than S - 2 tokens left.
"""
import bisect

from data_gen.modes.mlm import masking
from data_gen.modes.xlnet import xlnet_masking


class XLNetStream:
    """One pass's stream: ids, sentence starts (sorted, 0 first) and whole-word units."""

    def __init__(self, documents, eod_id, whole_words=True):
        ids, starts, sentence_starts = [], [], []
        for document in documents:
            for sentence_ids, sentence_word_starts in document:
                sentence_starts.append(len(ids))
                ids.extend(sentence_ids)
                starts.extend(sentence_word_starts)
            ids.append(eod_id)
            starts.append(-1)
        self.ids = ids
        self.sentence_starts = sentence_starts
        self.units = masking.whole_word_units(starts, whole_words, use_native=False)
        self.unit_begins = [begin for begin, _ in self.units]
        self.unit_ends = [end for _, end in self.units]

    def units_within(self, begin, end, shift):
        """The units inside [begin, end), moved by `shift` (record positions)."""
        inside = self.units[bisect.bisect_left(self.unit_begins, begin):
                            bisect.bisect_right(self.unit_ends, end)]
        return [(first + shift, last + shift) for first, last in inside]


def split_a_and_b(stream, begin, total, rng):
    """(a_end, b_begin, b_end) of A = [begin, a_end), B = [b_begin, b_end), len A + len B
    = total (see the module doc); needs begin + total < len(stream.ids)."""
    size = len(stream.ids)
    starts = stream.sentence_starts
    low = bisect.bisect_right(starts, begin)
    high = bisect.bisect_left(starts, begin + total)
    cuts = starts[low:high]
    run_on = starts[high] if high < len(starts) else size
    if cuts and rng.random() >= 0.5:
        a_end = cuts[int(rng.random() * len(cuts))]
        return a_end, a_end, begin + total
    a_end = cuts[int(rng.random() * len(cuts))] if cuts else run_on
    b_length = max(1, total - (a_end - begin))
    b_begin = rng.randint(0, size - 1 - b_length)
    b_end = b_begin + b_length
    b_begin = starts[bisect.bisect_right(starts, b_begin) - 1]
    if b_end < size - 1:
        following = bisect.bisect_left(starts, b_end)
        b_end = min(starts[following] if following < len(starts) else size, size - 1)
    a_length, b_length = a_end - begin, b_end - b_begin
    while a_length + b_length > total:  # the longer loses its last token
        if a_length > b_length:
            a_length -= 1
        else:
            b_length -= 1
    return begin + a_length, b_begin, b_begin + b_length


class XLNetRecipe:
    """The settings of a run's records."""

    def __init__(self, max_seq_length, reuse_length, max_predictions, special, mask_alpha,
                 mask_beta):
        self.max_seq_length = max_seq_length
        self.reuse_length = reuse_length
        self.max_predictions = max_predictions
        self.special = special  # {"sep", "cls", "eod", ...: id}
        self.mask_alpha = mask_alpha
        self.mask_beta = mask_beta


def stream_instances(stream, recipe, rng, counts):
    """The records of one pass: [(input, target, seg_id, is_masked, label)], in stream order.

    A record whose words cannot make up exactly max_predictions positions is
    dropped (counted as xlnet_records_skipped_few_words); the next one still
    begins R tokens further on.
    """
    ids = stream.ids
    seq, reuse = recipe.max_seq_length, recipe.reuse_length
    total = seq - reuse - 3
    sep, cls = recipe.special["sep"], recipe.special["cls"]
    records = []
    window = 0
    while window + reuse + total < len(ids):
        begin = window + reuse
        a_end, b_begin, b_end = split_a_and_b(stream, begin, total, rng)
        a_length = a_end - begin
        b_shift = reuse + a_length + 1 - b_begin
        reuse_units = stream.units_within(window, begin, -window)
        rest_units = (stream.units_within(begin, a_end, reuse - begin)
                      + stream.units_within(b_begin, b_end, b_shift))
        is_masked = xlnet_masking.choose_is_masked(
            seq, reuse_units, rest_units, reuse, recipe.max_predictions, rng,
            recipe.mask_alpha, recipe.mask_beta)
        if is_masked is None:
            counts["xlnet_records_skipped_few_words"] += 1
        else:
            inputs = ids[window:a_end] + [sep] + ids[b_begin:b_end] + [sep, cls]
            target = ids[window + 1:a_end + 1] + ids[b_begin:b_end + 1] + [cls, cls]
            seg_id = [0] * (reuse + a_length + 1) + [1] * (b_end - b_begin + 1) + [2]
            records.append((inputs, target, seg_id, is_masked, int(b_begin == a_end)))
        window += reuse
    count_pass(counts, len(ids), window)
    return records


def count_pass(counts, stream_length, window_end, skipped=0):
    """Adds a pass's stream tokens (and records skipped, when given) to `counts`."""
    if skipped:
        counts["xlnet_records_skipped_few_words"] += skipped
    counts["xlnet_stream_tokens"] += stream_length
    if stream_length > window_end:  # the tail no window starts in: at most S - 3 tokens a pass
        counts["xlnet_stream_tokens_after_last_window"] += stream_length - window_end


def pass_documents(documents, dupe_factor, rng):
    """Each pass's documents: the chunk's order, then a new rng.shuffle of it before every
    further pass (drawn when that pass is reached)."""
    order = list(range(len(documents)))
    for dupe in range(dupe_factor):
        if dupe:
            rng.shuffle(order)
        yield [documents[index] for index in order]
