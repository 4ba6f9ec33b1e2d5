"""Masked-LM selection over whole-word units.

A sequence arrives as token ids plus a parallel list `starts`:
   1  the token begins a whole-word unit (a Chinese word's first character,
      a WordPiece word's first piece),
   0  the token continues the unit before it (later characters of a jieba
      word, "##" pieces),
  -1  special token ([CLS], [SEP]): never chosen.
The "continuation" mark only decides grouping: ids are always the plain
token's id, so `masked_lm_ids` never hold a "##X" id for Chinese text.
"""
import re

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


def whole_word_units(starts, do_whole_word_mask=True):
    """Groups positions into units: list of lists of contiguous positions.

    Special positions (-1) belong to no unit and break any unit.
    """
    units = []
    previous = -2
    for position, start in enumerate(starts):
        if start < 0:
            continue
        if start == 1 or not do_whole_word_mask or previous != position - 1 or not units:
            units.append([position])
        else:
            units[-1].append(position)
        previous = position
    return units


def _draw_n(rng, cumulative):
    draw = rng.random()
    for n_minus_1, bound in enumerate(cumulative):
        if draw < bound:
            return n_minus_1 + 1
    return len(cumulative)


def _select_units(units, num_to_predict, rng):
    """Whole units in random order while they fit the budget (google-research/bert)."""
    order = list(range(len(units)))
    rng.shuffle(order)
    chosen = []
    for unit_index in order:
        if len(chosen) >= num_to_predict:
            break
        unit = units[unit_index]
        if len(chosen) + len(unit) > num_to_predict:
            continue
        chosen.extend(unit)
    return chosen


def _select_ngrams(units, num_to_predict, rng, cumulative):
    """ALBERT n-gram selection: spans of n contiguous units, P(n) ∝ 1/n."""
    order = list(range(len(units)))
    rng.shuffle(order)
    covered = set()
    chosen = []
    for unit_index in order:
        if len(chosen) >= num_to_predict:
            break
        if units[unit_index][0] in covered:
            continue
        n = _draw_n(rng, cumulative)
        span = []
        last = unit_index + n
        for index in range(unit_index, min(last, len(units))):
            unit = units[index]
            if span and unit[0] != span[-1] + 1:  # do not cross [SEP]
                break
            if unit[0] in covered or len(chosen) + len(span) + len(unit) > num_to_predict:
                break
            span.extend(unit)
        if not span:
            continue
        covered.update(span)
        chosen.extend(span)
    return chosen


def create_masked_lm_predictions(ids, starts, rng, config):
    """Chooses and corrupts MLM positions.

    Args:
      ids: list of int, the sequence (with [CLS]/[SEP], no padding), length L.
      starts: list of int in {1, 0, -1}, length L (see module doc).
      rng: random.Random, the chunk's seeded generator.
      config: MaskingConfig.

    Returns:
      (output_ids, positions, labels): output_ids is a new length-L list with
      the chosen positions corrupted (80% [MASK], 10% random real token,
      10% unchanged); positions are sorted; labels[i] = ids[positions[i]].
    """
    num_to_predict = min(config.max_predictions_per_seq,
                         max(1, int(round(len(ids) * config.masked_lm_prob))))
    units = whole_word_units(starts, config.do_whole_word_mask)
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


def token_boundary(starts):
    """ALBERT's token_boundary: 1 at [CLS]/[SEP] and at each unit's first token."""
    return [0 if start == 0 else 1 for start in starts]
