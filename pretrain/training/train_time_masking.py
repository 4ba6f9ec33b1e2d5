"""Whole-word masks drawn as records are read: the record reader of data made with
`data_gen --train_time_masking` (unmasked records carrying word_ids,
data_gen.records.record_schema.TRAIN_TIME_MASKING_FEATURES).

Each read of a record draws a new mask (RoBERTa's dynamic masking) over its whole words:
words in a random order while they fit round(rate x real tokens), capped by
--max_predictions_per_seq; then each masked token becomes [MASK] (--mask_replace_prob), a
random token (--random_replace_prob; the ids data_gen would draw, from the sidecar) or
stays. The rate may move linearly from --mlm_probability to --final_mlm_probability over
training. The draws are stateless, keyed by the run's seed, the input pipeline and the
record's place in its stream, which the saved input position carries on: a resumed run
draws what the unbroken one would have. Evals draw at the final rate from a key that is
the record's place alone, so every eval of a run, and of any run, scores the same targets.
"""
import dataclasses

import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from data_gen.records import metadata, record_schema
from pretrain.models.family import RecordInputError

DEFAULT_MLM_PROBABILITY = 0.15     # google-research/bert's rate, transformers' default
DEFAULT_MASK_REPLACE_PROB = 0.8    # the 80/10/10 rule
DEFAULT_RANDOM_REPLACE_PROB = 0.1
MAX_MLM_PROBABILITY = 0.5
# The flags only these records take (run_pretraining refuses them with static records).
FLAGS = ("mlm_probability", "final_mlm_probability", "mask_replace_prob",
         "random_replace_prob")
_EVAL_KEY = (20240611, 0)          # any constant: eval masks depend on the record alone


@dataclasses.dataclass(frozen=True)
class MaskingPlan:
    """What the reader draws with.

    rate, final_rate: masking rate at the first and the last record of training.
    total_records: records of the whole run (all pipelines): the schedule's length.
    mask_id: [MASK]'s id; replacement_ids: ids a random replacement is drawn from.
    mask_replace_prob, random_replace_prob: shares of the masked tokens.
    max_predictions: P, the prediction slots.
    fixed: eval: the final rate, keys from the record's place alone.
    """
    rate: float
    final_rate: float
    total_records: int
    mask_id: int
    replacement_ids: tuple
    mask_replace_prob: float
    random_replace_prob: float
    max_predictions: int
    fixed: bool = False


def needed_slots(rate, max_seq_length):
    """Prediction slots a rate may fill in a full sequence (round half to even, as drawn)."""
    return int(round(rate * max_seq_length))


def parse_replacement_ids(text, where):
    """The ids of a sidecar's "first-last,first-last" replacement ranges."""
    try:
        ids = []
        for piece in text.split(","):
            first, last = (int(value) for value in piece.split("-"))
            ids.extend(range(first, last + 1))
    except (AttributeError, ValueError):
        raise RecordInputError(f"{where}: replacement_ids={text!r} is not first-last ranges; remake "
                        "the data with data_gen --train_time_masking") from None
    return tuple(ids)


def is_unmasked(meta, record):
    """Whether a file holds train-time-masked records: its sidecar says so, or without one,
    its first record ({name: values}) has word_ids and no masks."""
    if meta is not None:
        return bool(meta.get("train_time_masking"))
    return "word_ids" in record and "masked_lm_ids" not in record


def refuse_flags_for_static(opts):
    """UserError naming the first masking flag given for records that carry their masks."""
    for name in FLAGS:
        if getattr(opts, name) is not None:
            raise UserError(f"--{name}: the input records were masked when made (static "
                            "masks); it applies to records made with data_gen "
                            "--train_time_masking. Drop it, or remake the data so")


def slots_default(opts):
    """--max_predictions_per_seq when not given: the slots the largest rate needs."""
    rate = max(_rate(opts.mlm_probability), _rate(opts.final_mlm_probability,
                                                  opts.mlm_probability))
    return needed_slots(rate, opts.max_seq_length)


def _rate(value, fallback=None):
    if value is not None:
        return value
    return fallback if fallback is not None else DEFAULT_MLM_PROBABILITY


class WholeWordMaskingRecords:
    """The record reader of --train_time_masking data (the input pipeline's protocol, as
    pretrain.models.xlnet.record_input's)."""

    @staticmethod
    def lengths(max_seq_length, max_predictions_per_seq):
        """{feature: (dtype, length)} of one record (no prediction slots yet)."""
        del max_predictions_per_seq
        return record_schema.feature_lengths(
            max_seq_length, None, features=record_schema.TRAIN_TIME_MASKING_FEATURES)

    @staticmethod
    def prepare(sidecars, opts):
        """(MaskingPlan, a log line) from the records' sidecars and the run's options;
        UserError naming the flag when they do not fit."""
        rate = _rate(opts.mlm_probability)
        final_rate = _rate(opts.final_mlm_probability, rate)
        mask_share = (DEFAULT_MASK_REPLACE_PROB if opts.mask_replace_prob is None
                      else opts.mask_replace_prob)
        random_share = (DEFAULT_RANDOM_REPLACE_PROB if opts.random_replace_prob is None
                        else opts.random_replace_prob)
        for flag, value in (("mlm_probability", rate), ("final_mlm_probability", final_rate)):
            if not 0.0 < value <= MAX_MLM_PROBABILITY:
                raise UserError(f"--{flag}={value}: must be in (0, {MAX_MLM_PROBABILITY}]")
        for flag, value in (("mask_replace_prob", mask_share),
                            ("random_replace_prob", random_share)):
            if not 0.0 <= value <= 1.0:
                raise UserError(f"--{flag}={value}: must be in [0, 1]")
        if mask_share + random_share > 1.0:
            raise UserError(f"--mask_replace_prob={mask_share} + --random_replace_prob="
                            f"{random_share} exceed 1: they are shares of the masked tokens")
        needed = needed_slots(max(rate, final_rate), opts.max_seq_length)
        if opts.max_predictions_per_seq < needed:
            raise UserError(
                f"--max_predictions_per_seq={opts.max_predictions_per_seq} holds fewer masked "
                f"tokens than a rate of {max(rate, final_rate)} draws in a {opts.max_seq_length}-"
                f"token sequence ({needed}): give --max_predictions_per_seq={needed} or more, "
                "or leave it unset (it then fits the rate)")
        plan = MaskingPlan(
            rate, final_rate,
            opts.num_train_steps * opts.gradient_accumulation_steps * opts.train_batch_size,
            *_vocab_fields(sidecars), mask_share, random_share, opts.max_predictions_per_seq)
        schedule = (f"{rate}" if rate == final_rate
                    else f"{rate} -> {final_rate} linearly over {plan.total_records} records")
        return plan, (f"train-time whole-word masking: rate {schedule}; [MASK] {mask_share}, "
                      f"random {random_share}; {plan.max_predictions} slots; evals at "
                      f"{final_rate} with fixed masks")

    @staticmethod
    def prepared_for(plan, is_training):
        """The plan of the training input, or of an eval's (final rate, fixed masks)."""
        if is_training:
            return plan
        return dataclasses.replace(plan, rate=plan.final_rate, fixed=True)

    @staticmethod
    def features(decoded, plan, key, position):
        """The masked-LM features (record_schema.FEATURES' required ones) of one decoded
        record; key [2] int64 (seed, pipeline, place), position: the record's place in the
        run's stream (int64 scalar)."""
        return masked_features(decoded, plan, key, position)


RECORDS = WholeWordMaskingRecords()


def _vocab_fields(sidecars):
    """(mask_id, replacement_ids) the sidecars agree on; UserError naming a file when not."""
    found = {}
    for path, meta in sidecars:
        where = metadata.metadata_path(path)
        if not meta or "mask_id" not in meta or "replacement_ids" not in meta:
            raise RecordInputError(f"{path}: train-time-masked records need their sidecar's mask_id "
                            f"and replacement_ids ({where}); remake the data with data_gen "
                            "--train_time_masking")
        fields = (int(meta["mask_id"]), meta["replacement_ids"])
        found.setdefault(fields, where)
    if len(found) > 1:
        (_, one), (_, other) = list(found.items())[:2]
        raise RecordInputError(f"{one} and {other} name different [MASK] ids or replacement tokens "
                        "(data made with two vocabs): train on data of one vocab")
    (mask_id, text), where = found.popitem()
    return mask_id, parse_replacement_ids(text, where)


def masked_features(decoded, plan, key, position):
    """decoded: input_ids, input_mask, segment_ids, word_ids [S] int32, next_sentence_labels
    [1]. Returns input_ids (masked), input_mask, segment_ids [S], masked_lm_positions,
    masked_lm_ids [P] int32, masked_lm_weights [P] float32, next_sentence_labels [1]."""
    position = tf.cast(position, tf.int64)
    if plan.fixed:
        key = tf.random.experimental.stateless_fold_in(tf.constant(_EVAL_KEY, tf.int64),
                                                       position)
    rate = _scheduled_rate(plan, position)
    word_ids = decoded["word_ids"]
    real_tokens = tf.reduce_sum(decoded["input_mask"])
    chosen = whole_word_mask(word_ids, rate, real_tokens, plan.max_predictions,
                             tf.random.experimental.stateless_fold_in(key, 1))
    input_ids = decoded["input_ids"]
    new_ids = _replace(input_ids, chosen, plan, tf.random.experimental.stateless_fold_in(key, 2))
    positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)               # [n]
    padding = [[0, plan.max_predictions - tf.shape(positions)[0]]]
    masked_positions = tf.pad(positions, padding)
    masked_ids = tf.pad(tf.gather(input_ids, positions), padding)
    weights = tf.pad(tf.ones_like(positions, tf.float32), padding)
    for tensor in (masked_positions, masked_ids, weights):
        tensor.set_shape([plan.max_predictions])
    return {"input_ids": new_ids, "input_mask": decoded["input_mask"],
            "segment_ids": decoded["segment_ids"], "masked_lm_positions": masked_positions,
            "masked_lm_ids": masked_ids, "masked_lm_weights": weights,
            "next_sentence_labels": decoded["next_sentence_labels"]}


def _scheduled_rate(plan, position):
    """The rate at `position` of the run's stream: linear from plan.rate to final_rate."""
    if plan.rate == plan.final_rate:
        return tf.constant(plan.rate, tf.float32)
    progress = tf.minimum(tf.cast(position, tf.float64) / float(max(plan.total_records, 1)),
                          1.0)
    return tf.cast(plan.rate + (plan.final_rate - plan.rate) * progress, tf.float32)


def whole_word_mask(word_ids, rate, real_tokens, max_predictions, key):
    """[S] bool: the tokens of whole words drawn in a random order while they fit
    n = min(P, max(1, round(rate * real_tokens))); a word that does not fit is passed over
    and the rest of the budget goes to the next words that do (one more pass).

    word_ids: [S] int32, 1-based word of each token, 0 never masked. key: [2] int64."""
    slots = tf.shape(word_ids)[0] + 1                                    # word ids 0..S
    budget = tf.cast(tf.round(rate * tf.cast(real_tokens, tf.float32)), tf.int32)
    budget = tf.minimum(tf.maximum(budget, 1), max_predictions)
    lengths = tf.math.unsorted_segment_sum(tf.ones_like(word_ids), word_ids, slots)  # [S+1]
    lengths = lengths * tf.cast(tf.range(slots) > 0, tf.int32)           # word 0: never
    draw = tf.random.stateless_uniform([slots], seed=key, dtype=tf.float32)
    order = tf.argsort(tf.where(lengths > 0, draw, tf.fill([slots], 2.0)), stable=True)
    ordered = tf.gather(lengths, order)                                  # [S+1], 0s last
    first = (tf.cumsum(ordered) <= budget) & (ordered > 0)
    left = budget - tf.reduce_sum(tf.where(first, ordered, tf.zeros_like(ordered)))
    fits = (~first) & (ordered > 0) & (ordered <= left)
    second = fits & (tf.cumsum(tf.where(fits, ordered, tf.zeros_like(ordered))) <= left)
    chosen_words = tf.scatter_nd(order[:, None], tf.cast(first | second, tf.int32), [slots])
    return (tf.gather(chosen_words, word_ids) > 0) & (word_ids > 0)


def _replace(input_ids, chosen, plan, key):
    """input_ids [S] with the chosen tokens replaced by [MASK], a random token, or kept."""
    length = tf.shape(input_ids)
    share = tf.random.stateless_uniform(length, seed=key, dtype=tf.float32)
    pick = tf.random.stateless_uniform(
        length, seed=tf.random.experimental.stateless_fold_in(key, 1),
        maxval=len(plan.replacement_ids), dtype=tf.int32)
    random_ids = tf.gather(tf.constant(plan.replacement_ids, tf.int32), pick)
    to_mask = chosen & (share < plan.mask_replace_prob)
    to_random = chosen & (share >= plan.mask_replace_prob) & (
        share < plan.mask_replace_prob + plan.random_replace_prob)
    return tf.where(to_mask, tf.fill(length, plan.mask_id),
                    tf.where(to_random, random_ids, input_ids))
