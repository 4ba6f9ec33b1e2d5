"""Sequence classification: one label per text (`classification`) or per pair (`pair`).

Reading: finetune.formats (TSV/CSV with a header, CLUE JSON lines, and for
pairs the header-less LCQMC layout). Labels are strings; their list, in id
order, comes from the training file (numbers by value, else sorted).

Records (record_schema "sequence"), as google-research/bert's classifier
builds them: `[CLS] a [SEP]` (segment 0) and for pairs `b [SEP]` (segment 1),
the longer text truncated first; for XLNet as zihangdai/xlnet's does, `a [SEP] b [SEP]
[CLS]` (finetune.tasks.layout). A conditional-LayerNorm model (config
`layer_norm_cond_size` = C) also needs a condition per example: the 4th field
of an LCQMC line or a `condition` column, a class id in [0, C) (one-hot) or C
comma-separated numbers (data_gen.tools.lcqmc_format.parse_condition).

Head: the pooled output -> `classifier/output_weights` [N, H],
`classifier/output_bias` [N] (pretrain.models.task_heads) -> softmax cross-entropy.
BERT's and ALBERT's pooled output is their pretrained pooler (dense + tanh over
[CLS]). ELECTRA has no pooler: its pooled output is the [CLS] state itself, and the
classifier reads it directly (dropout, then the one output layer), as
google-research/electra's own classification tasks do, rather than through a new
dense + tanh: that would be an untrained layer the checkpoint cannot supply, and
upstream's recipe (and its published scores) has none. XLNet's pooled output is
upstream's sequence summary: dense + tanh over the last real token, [CLS]
(`model/sequnece_summary/summary`, new when fine-tuning starts, as upstream's is).
"""
import numpy as np
import tensorflow.compat.v1 as tf

from data_gen.tools import lcqmc_format
from finetune import formats, metrics
from finetune.tasks import layout as layout_lib
from finetune.tasks.base import (COLLAPSE_SHARE, Task, TaskDataError, check_known_labels,
                                 majority_share, sorted_labels)
from pretrain.models import registry, task_heads


def truncate_pair(tokens_a, tokens_b, max_tokens):
    """Pops tokens from the end of the longer list (b on a tie) until both fit.

    Returns True if anything was removed. Lists are modified in place.
    """
    truncated = False
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        longer.pop()
        truncated = True
    return truncated


def encode_texts(texts, tokenizer, max_seq_length, layout=layout_lib.BERT_LAYOUT):
    """(input_ids, input_mask, segment_ids: lists of max_seq_length ints, truncated: bool),
    special tokens placed as `layout` says (finetune.tasks.layout), padding on the right
    (the tokenizer's pad id, layout.pad_id). Each text is tokenised alone, as upstream's
    classifiers do (a sentencepiece model puts its "▁" before each)."""
    special = layout_lib.special_token_count(len(texts))
    if max_seq_length < special + len(texts):
        raise TaskDataError(f"--max_seq_length={max_seq_length} leaves no room for "
                            f"{len(texts)} text(s) and {special} special tokens")
    tokens_a = tokenizer.tokenize(texts[0])
    tokens_b = tokenizer.tokenize(texts[1]) if len(texts) > 1 else []
    if len(texts) > 1:
        truncated = truncate_pair(tokens_a, tokens_b, max_seq_length - special)
    else:
        truncated = len(tokens_a) > max_seq_length - special
        del tokens_a[max_seq_length - special:]
    tokens, segment_ids = layout_lib.wrap([tokens_a, tokens_b][:len(texts)], layout)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = max_seq_length - len(input_ids)
    return (input_ids + [layout_lib.pad_id(tokenizer)] * padding,
            [1] * len(input_ids) + [0] * padding,
            segment_ids + [0] * padding, truncated)


def parse_conditions(examples, path, condition_size):
    """The condition of each example: a tuple of C floats, or None each when
    condition_size is None. Raises TaskDataError naming PATH:LINE of the first
    example whose condition is missing, malformed, or given to a model without one."""
    expected = (f"a class id in [0, {condition_size}) or {condition_size} comma-separated "
                "numbers (the 4th field of an LCQMC line, or a `condition` column)")
    conditions, problems = [], []
    for example in examples:
        condition = None
        if condition_size is None:
            if example.condition is not None:
                problems.append((example.line, (
                    f"a condition ({example.condition!r}) but the model config has no "
                    "layer_norm_cond_size: to condition the model, set layer_norm_cond_size "
                    "to the condition width C in the model config (--bert_config_file); "
                    "otherwise drop the condition field")))
        elif example.condition is None:
            problems.append((example.line, (
                f"no condition: the model config sets layer_norm_cond_size={condition_size} "
                f"(conditional LayerNorm), so every example needs one: {expected}")))
        else:
            try:
                condition = lcqmc_format.parse_condition(example.condition, condition_size)
            except ValueError as error:
                problems.append((example.line, (
                    f"bad condition: {error} (layer_norm_cond_size={condition_size})")))
        conditions.append(condition)
    if problems:
        line, reason = problems[0]
        more = f" [{len(problems) - 1} more line(s) with a condition problem]" if len(
            problems) > 1 else ""
        raise TaskDataError(f"{path}:{line}: {reason}{more}")
    return conditions


def create_classifier(bert_config, is_training, input_ids, input_mask, segment_ids, labels,
                      num_labels, condition=None, compute_type=tf.float32):
    """The classifier graph.

    Args:
      input_ids, input_mask, segment_ids: int32 [B, S].
      labels: int32 [B] or None (prediction).
      condition: float32 [B, C] for a conditional config, else None.
      compute_type: the encoder's (pretrain.training.mixed_precision).
    Returns:
      (loss scalar or None, per_example_loss [B] or None, logits [B, N], probabilities [B, N]).
    """
    # Only a conditional config's encoder takes a condition (ELECTRA's takes none).
    options = {} if condition is None else {"condition": condition}
    model = registry.create_encoder(bert_config, is_training, input_ids, input_mask=input_mask,
                                    token_type_ids=segment_ids, compute_type=compute_type,
                                    **options)
    logits, probabilities = task_heads.get_classifier_output(
        bert_config, model.get_pooled_output(), num_labels, is_training)
    if labels is None:
        return None, None, logits, probabilities
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot * log_probs, axis=-1)  # [B]
    return tf.reduce_mean(per_example_loss), per_example_loss, logits, probabilities


class ClassificationTask(Task):
    """`classification` (one text) and `pair` (two texts)."""
    record_kind = "sequence"
    metric_kind = "classification"
    metrics = ("accuracy", "macro_f1")

    def __init__(self, name, num_texts):
        self.name = name
        self.num_texts = num_texts

    def read(self, path, options, require_labels, log_fn):
        text_fields = options.get("text_fields") or None
        if isinstance(text_fields, str):
            text_fields = [field.strip() for field in text_fields.split(",") if field.strip()]
        examples, account = formats.read_text_examples(
            path, self.name, format=options.get("input_format") or None,
            text_fields=text_fields, label_field=options.get("label_field") or None,
            require_labels=require_labels, log_fn=log_fn,
            max_malformed_share=options.get("max_malformed_share"))
        return examples, account

    def label_list(self, train_examples, options, path=None):
        return sorted_labels(example.label for example in train_examples)

    def check_labels(self, examples, labels, path, allow_unseen):
        return check_known_labels(((e.line, e.label) for e in examples), labels, path,
                                  allow_unseen)

    def featurize(self, examples, tokenizer, max_seq_length, labels, condition_size=None,
                  path=None, layout=layout_lib.BERT_LAYOUT):
        """Returns (feature dicts, plan = None, counts); one record per example, in order,
        laid out as the model family wants (finetune.tasks.layout)."""
        index = {label: i for i, label in enumerate(labels)}
        conditions = parse_conditions(examples, path, condition_size)
        features, truncated = [], 0
        for example, condition in zip(examples, conditions):
            input_ids, input_mask, segment_ids, cut = encode_texts(
                example.texts, tokenizer, max_seq_length, layout)
            truncated += cut
            record = {"input_ids": input_ids, "input_mask": input_mask,
                      "segment_ids": segment_ids, "label_ids": [index.get(example.label, 0)]}
            if condition is not None:
                record["condition"] = list(condition)
            features.append(record)
        return features, None, {"examples": len(examples), "records": len(features),
                                "truncated": truncated}

    def build_model(self, config, is_training, features, label_tensor, num_labels,
                    compute_type=tf.float32):
        loss, per_example_loss, _, probabilities = create_classifier(
            config, is_training, features["input_ids"], features["input_mask"],
            features["segment_ids"], label_tensor, num_labels,
            condition=features.get("condition"), compute_type=compute_type)
        outputs = {"probabilities": probabilities}
        if "condition" in features:  # a conditional model's predictions say what they were given
            outputs["condition"] = features["condition"]
        return loss, per_example_loss, outputs

    def collect(self, examples, plan, predictions, labels):
        """{predicted label per example, probabilities [E, N], mean cross-entropy or None,
        conditions: the condition vector fed per example (conditional models) or None}."""
        probabilities = np.array([p["probabilities"] for p in predictions], dtype=np.float64)
        if len(probabilities) != len(examples):
            raise RuntimeError(f"got {len(probabilities)} predictions for {len(examples)} "
                               "examples")
        predicted = [labels[i] for i in probabilities.argmax(axis=1)]
        index = {label: i for i, label in enumerate(labels)}
        known = [(row, index[e.label]) for row, e in enumerate(examples) if e.label in index]
        loss = None
        if known:
            rows, ids = map(np.array, zip(*known))
            loss = float(-np.log(np.maximum(probabilities[rows, ids], 1e-12)).mean())
        conditions = [p["condition"] for p in predictions] if (
            predictions and "condition" in predictions[0]) else None
        return {"predicted": predicted, "probabilities": probabilities, "loss": loss,
                "conditions": conditions}

    def score(self, examples, collected, labels):
        pairs = [(e.label, p) for e, p in zip(examples, collected["predicted"])
                 if e.label is not None]
        if not pairs:
            return None
        gold, predicted = zip(*pairs)
        result = metrics.classification_metrics(list(gold), list(predicted), labels)
        result["loss"] = collected["loss"]
        return result

    def collapse(self, examples, collected):
        """One label for COLLAPSE_SHARE of the examples, where the gold labels are mixed.
        Also the gold majority share and the number of labelled examples (finetune.verdicts
        tells chance from them)."""
        scored = [(e.label, p) for e, p in zip(examples, collected["predicted"])
                  if e.label is not None]
        top, share = majority_share([p for _, p in scored])
        gold_top, gold_share = majority_share([g for g, _ in scored])
        collapsed = share >= COLLAPSE_SHARE and gold_share < COLLAPSE_SHARE
        return {"collapsed": collapsed, "majority_prediction": top, "majority_share": share,
                "gold_majority_label": gold_top, "gold_majority_share": gold_share,
                "num_examples": len(scored),
                "what": (f"predicts {top!r} for {share:.1%} of dev (the most common gold label "
                         f"is {gold_share:.1%})")}

    def prediction_records(self, examples, collected, labels):
        """{"line", "label", "probabilities": {label: p}} per example, and for a conditional
        model its "condition" as the model got it (C numbers; a class id becomes one-hot)."""
        conditions = collected.get("conditions") or [None] * len(examples)
        for example, predicted, probabilities, condition in zip(
                examples, collected["predicted"], collected["probabilities"], conditions):
            record = {"line": example.line, "label": predicted,
                      "probabilities": {label: round(float(p), 6)
                                        for label, p in zip(labels, probabilities)}}
            if condition is not None:
                record["condition"] = [round(float(value), 6) for value in condition]
            yield record
