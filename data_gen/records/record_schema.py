"""The features of a pretraining record, and of a fine-tuning record, declared once
(docs/architecture.md §1 and §10).

The data_gen -> pretrain contract: data_gen's encoder writes these features
(its C twin, data_gen.native._records, writes the same bytes; a test parses
both against this table), pretrain.training.input_pipeline builds its tf.io parse spec
from it, pretrain.training.data_checks and data_gen.tools.inspect_records check records
against it. A data mode with records of another shape declares its own table beside
its code (data_gen.modes: DataMode.features).

It lives in data_gen, the lowest stage: the stage that writes the files owns
their format, and pretrain may import it (pretrain -> data_gen, never back).
It is plain Python without TensorFlow or numpy, so data_gen's writer, which
must not need TensorFlow, can use it too.
"""
import dataclasses

SEQ = "max_seq_length"
PREDICTIONS = "max_predictions_per_seq"


@dataclasses.dataclass(frozen=True)
class Feature:
    """One feature of the tf.train.Example.

    dtype: "int64" (an Int64List) or "float32" (a FloatList).
    length: SEQ or PREDICTIONS (the flag of that name gives the length) or 1.
    optional: written in some modes only; readers need not parse it.
    """
    name: str
    dtype: str
    length: object
    meaning: str
    optional: bool = False


FEATURES = (
    Feature("input_ids", "int64", SEQ, "token ids, 0-padded"),
    Feature("input_mask", "int64", SEQ, "1 for real tokens, 0 for padding"),
    Feature("segment_ids", "int64", SEQ, "0 for segment A, 1 for segment B"),
    Feature("masked_lm_positions", "int64", PREDICTIONS, "positions of the predictions, 0-padded"),
    Feature("masked_lm_ids", "int64", PREDICTIONS, "original token ids there, 0-padded"),
    Feature("masked_lm_weights", "float32", PREDICTIONS, "1.0 for real predictions, 0.0 padding"),
    Feature("next_sentence_labels", "int64", 1, "the sentence-task label (see below)"),
    Feature("token_boundary", "int64", SEQ, "1 where a word starts (modes with token_boundary)",
            optional=True),
    Feature("masked_lm_span_left", "int64", PREDICTIONS, "position just before the masked "
            "span of each prediction, 0-padded (--masking=span only)", optional=True),
    Feature("masked_lm_span_right", "int64", PREDICTIONS, "position just after the masked "
            "span of each prediction, 0-padded (--masking=span only)", optional=True),
)
# Records made with --train_time_masking (the sidecar says train_time_masking: true): no masks
# yet; run_pretraining draws them as it reads each record (pretrain.training.train_time_masking),
# whole words together, from word_ids. next_sentence_labels means what it means above.
TRAIN_TIME_MASKING_FEATURES = FEATURES[:3] + (
    Feature("word_ids", "int64", SEQ, "1-based index of the whole word each token belongs to; "
            "0 for [CLS], [SEP] and padding, which are never masked"),
    FEATURES[6],
)
# The optional features written together, by what the sidecar says of the data.
TOKEN_BOUNDARY = ("token_boundary",)
SPAN_BOUNDARIES = ("masked_lm_span_left", "masked_lm_span_right")

# What `next_sentence_labels` means, by the sidecar's "sentence_task" field (a data
# mode's DataMode.sentence_task, data_gen.modes).
SENTENCE_LABEL_MEANINGS = {
    "sop": "SOP: 1 = segments swapped (B before A), 0 = original order",
    "nsp": "NSP: 1 = B is a random sentence, 0 = B follows A",
    "none": "no sentence task (always 0)",
}


# Fine-tuning records (finetune.features writes and reads them; feature caches of
# finetune.run_finetune). CONDITION is the model config's layer_norm_cond_size. The SEQ
# features are written at the record's true length (at most max_seq_length, no padding):
# the reader pads each batch (finetune.features.Batching).
CONDITION = "layer_norm_cond_size"
SEQUENCE_CLASSIFICATION_FEATURES = (
    Feature("input_ids", "int64", SEQ, "[CLS] a [SEP] (b [SEP]) token ids"),
    Feature("input_mask", "int64", SEQ, "1 for real tokens, 0 for padding"),
    Feature("segment_ids", "int64", SEQ, "0 for [CLS] a [SEP], 1 for b [SEP]"),
    Feature("label_ids", "int64", 1, "the label's index in the task's label list"),
    Feature("condition", "float32", CONDITION, "the condition vector of a conditional-"
            "LayerNorm model", optional=True),
)
TOKEN_CLASSIFICATION_FEATURES = (
    Feature("input_ids", "int64", SEQ, "[CLS] window of one sentence [SEP]"),
    Feature("input_mask", "int64", SEQ, "1 for real tokens, 0 for padding"),
    Feature("segment_ids", "int64", SEQ, "all 0"),
    Feature("label_ids", "int64", SEQ, "tag index at the first piece of each input "
            "character (word), 0 elsewhere"),
    Feature("label_weights", "float32", SEQ, "1.0 where a tag is trained and predicted "
            "(first pieces), 0.0 elsewhere"),
)
FINE_TUNING_FEATURES = {"sequence": SEQUENCE_CLASSIFICATION_FEATURES,
                        "token": TOKEN_CLASSIFICATION_FEATURES}


def fine_tuning_feature_lengths(kind, max_seq_length, condition_size=None):
    """{name: (dtype, length)} of a fine-tuning record: kind "sequence" or "token";
    condition_size (sequence only): C of a conditional model, else the feature is left out."""
    sizes = {SEQ: max_seq_length, 1: 1, CONDITION: condition_size}
    return {feature.name: (feature.dtype, sizes[feature.length])
            for feature in FINE_TUNING_FEATURES[kind]
            if not feature.optional or condition_size is not None}


def fine_tuning_token_features(kind):
    """The names of a fine-tuning record's per-token (SEQ) features, in the table's order."""
    return tuple(feature.name for feature in FINE_TUNING_FEATURES[kind] if feature.length == SEQ)


def feature_lengths(max_seq_length, max_predictions_per_seq, with_optional=False,
                    features=FEATURES):
    """{name: (dtype, length)} of the features of a table (default FEATURES), in its order.

    with_optional: True (every optional feature), False (none), or the names
      of the optional ones to include (e.g. SPAN_BOUNDARIES).
    """
    sizes = {SEQ: max_seq_length, PREDICTIONS: max_predictions_per_seq, 1: 1}
    wanted = (lambda name: with_optional) if isinstance(with_optional, bool) else (
        lambda name: name in with_optional)
    return {feature.name: (feature.dtype, sizes[feature.length]) for feature in features
            if not feature.optional or wanted(feature.name)}


def required_names(features=FEATURES):
    """Names of the features every record of a table (default: FEATURES) has."""
    return [feature.name for feature in features if not feature.optional]


def length_flag(name):
    """The flag that sets the length of feature `name` ("--max_seq_length"), or None."""
    length = next(feature.length for feature in FEATURES if feature.name == name)
    return f"--{length}" if isinstance(length, str) else None


def example_values(example):
    """{name: list of numbers} of a parsed tf.train.Example (any features it has)."""
    values = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        values[name] = list(getattr(feature, kind).value) if kind else []
    return values
