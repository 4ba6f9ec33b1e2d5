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

from data_gen.example_proto import records_module

# Tokens that must never be drawn as a random replacement.
_BRACKETED = re.compile(r"^\[[^\[\]]+\]$|^<[^<>]+>$")


def replacement_ids(vocab):
    """Sorted ids of real tokens: no [special]/[unused*]/<S>-style, no "##" pieces."""
    ids = [token_id for token, token_id in vocab.items()
           if not _BRACKETED.match(token) and not token.startswith("##")
           and token.strip()]
    if not ids:
        raise ValueError("vocab has no ordinary token to use as random replacement")
    return sorted(ids)


class MaskingConfig:
    """Parameters of MLM selection.

    Attributes:
      masked_lm_prob: fraction of the sequence length to predict.
      max_predictions_per_seq: cap on predictions per sequence.
      mask_id: id of [MASK].
      replacement_ids: ids allowed as random replacement (see replacement_ids()).
      do_whole_word_mask: group continuation tokens with their unit.
      ngram: largest n of ALBERT n-gram masking over units (1 = off).
    """

    def __init__(self, masked_lm_prob, max_predictions_per_seq, mask_id, replacement_ids,
                 do_whole_word_mask=True, ngram=1):
        if not 0.0 <= masked_lm_prob <= 1.0:
            raise ValueError(f"--masked_lm_prob={masked_lm_prob}: must be within [0, 1]")
        if max_predictions_per_seq < 1:
            raise ValueError(f"--max_predictions_per_seq={max_predictions_per_seq}: must be >= 1")
        if ngram < 1:
            raise ValueError(f"--ngram={ngram}: must be >= 1")
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_id = mask_id
        self.replacement_ids = list(replacement_ids)
        self.do_whole_word_mask = do_whole_word_mask
        self.ngram = ngram
        # Cumulative weights of n = 1..ngram, proportional to 1/n (ALBERT).
        weights = [1.0 / n for n in range(1, ngram + 1)]
        total = sum(weights)
        running = 0.0
        self.ngram_cumulative = []
        for weight in weights:
            running += weight / total
            self.ngram_cumulative.append(running)
        self.ngram_cumulative[-1] = 1.0


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


def _select_ngrams(units, num_to_predict, rng, cumulative):
    """ALBERT n-gram selection: spans of n adjacent units, P(n) proportional to 1/n."""
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
        for index in range(first, min(first + n, size)):
            begin, end = units[index]
            if begin != span_end and index != first:  # not adjacent: do not cross [SEP]
                break
            if covered[begin] or len(chosen) + (end - span_begin) > num_to_predict:
                break
            span_end = end
        if span_end == span_begin:
            continue
        covered[span_begin:span_end] = b"\x01" * (span_end - span_begin)
        chosen.extend(range(span_begin, span_end))
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
    num_to_predict = min(config.max_predictions_per_seq,
                         max(1, int(round(len(ids) * config.masked_lm_prob))))
    module = records_module(use_native)
    if module is not None:
        result = module.create_masked_lm_predictions(
            ids, starts, rng.random, num_to_predict, units, config.do_whole_word_mask,
            config.ngram_cumulative if config.ngram > 1 else None, config.mask_id,
            config.replacement_ids)
        if result is not NotImplemented:  # else inputs the C path does not take, no draw made
            return result
    if units is None:
        units = whole_word_units(starts, config.do_whole_word_mask, use_native=False)
    if config.ngram > 1:
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
            output_ids[position] = replacements[int(random() * len(replacements))]
    return output_ids, chosen, labels


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
    output_ids, positions, labels = create_masked_lm_predictions(
        ids, starts, rng, config, units, use_native=use_native)
    boundary = token_boundary(starts, use_native) if encoder.with_token_boundary else None
    record = encoder.encode(output_ids, segment_ids, positions, labels, label, boundary)
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
            config.replacement_ids, config.do_whole_word_mask,
            config.ngram_cumulative if config.ngram > 1 else None, encoder.max_seq_length,
            encoder.max_predictions_per_seq, encoder.with_token_boundary, python)
    except (TypeError, ValueError, OverflowError):  # parameters the C path does not take
        return python
