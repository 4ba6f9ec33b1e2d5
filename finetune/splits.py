"""A fine-tuning run's data: each split's examples, records and the way back from the
model's predictions to one prediction per example.

Training records stay in file order (the input_fn shuffles them). Dev and test records are
written longest first (`Split.order`), so that the reader, which pads each batch to its
longest record (finetune.features.Batching), pads them little; `predict` puts the
predictions back into record order before the task maps them to examples through its plan.
Dev and test are featurised every run, as their plan maps predictions back; training
records come from the cache when they are there.
"""
import time

from finetune import features as records
from finetune.tasks import layout as layout_lib


class Split:
    """One data file's examples, read account, records and the plan to map predictions back.

    order: order[i] is the task's record index of the i-th record written (None: the
    task's own order, training)."""

    def __init__(self, name, path, examples, account):
        self.name, self.path, self.examples, self.account = name, path, examples, account
        self.record_path = self.plan = self.order = None
        self.counts = {}


def load(task, files, settings, log_fn):
    """{split name: Split} of the files {name: path or None}, dev and train limited to
    --max_dev_examples / --max_train_examples."""
    splits = {}
    limits = {"train": settings["max_train_examples"], "dev": settings["max_dev_examples"]}
    for name, path in files.items():
        if not path:
            continue
        examples, account = task.read(path, settings, require_labels=name != "test",
                                      log_fn=log_fn)
        account = account.as_dict()
        if limits.get(name):
            examples = examples[:limits[name]]
            account["limited_to"] = len(examples)
        splits[name] = Split(name, path, examples, account)
    return splits


def longest_first(features):
    """The record indices of `features` (a task's padded feature dicts), longest first; equal
    lengths keep their order."""
    lengths = [records.true_length(feature) for feature in features]
    return sorted(range(len(features)), key=lambda index: -lengths[index])


def build_records(task, split, labels, tokenizer, settings, spec, cache_dir, log_fn,
                  layout=layout_lib.BERT_LAYOUT):
    """Writes (or reuses) the split's records (spec: their finetune.features.RecordSpec);
    layout: where the model family wants its special tokens (finetune.tasks.layout)."""
    def featurize():
        features, plan, counts = task.featurize(split.examples, tokenizer,
                                                settings["max_seq_length"], labels,
                                                condition_size=spec.condition_size,
                                                path=split.path, layout=layout)
        split.plan = plan
        if split.name != "train":
            split.order = longest_first(features)
            features = [features[index] for index in split.order]
        return features, counts

    made = featurize() if split.name != "train" else None
    key, key_hash = records.cache_key(
        split.path, tokenizer.vocab_file, task=task.name, labels=labels,
        max_seq_length=settings["max_seq_length"], do_lower_case=settings["do_lower_case"],
        examples=len(split.examples), condition_size=spec.condition_size,
        layout=None if layout.name == layout_lib.BERT_LAYOUT.name else layout.name,
        order="longest_first" if split.order is not None else None,
        input_format=settings["input_format"] or None, text_fields=settings["text_fields"] or None,
        label_field=settings["label_field"] or None)
    split.record_path, info = records.cached_records(
        split.name, cache_dir, key, key_hash, spec, (lambda: made) if made else featurize,
        log_fn=log_fn)
    split.counts = {name: value for name, value in info.items() if name != "key"}


def in_record_order(predictions, order):
    """The predictions of records written in `order` (Split.order), in the task's record
    order."""
    if order is None:
        return predictions
    if len(predictions) != len(order):
        raise RuntimeError(f"got {len(predictions)} predictions for {len(order)} records")
    restored = [None] * len(order)
    for prediction, index in zip(predictions, order):
        restored[index] = prediction
    return restored


def predict(trainer, task, split, spec, labels, settings, checkpoint, batching,
            predictors=None, seconds=None):
    """The task's collected predictions of `split` with `checkpoint`'s weights. With the
    session loop, `predictors` {split name: Predictor} keeps each split's predict graph
    for the next checkpoint (dev after every save); the Estimator builds one per call.
    seconds: optional {phase: seconds} that the graph building ("predict_graphs") is added to."""
    input_fn = records.input_fn_builder(split.record_path, spec, settings["eval_batch_size"],
                                        is_training=False, batching=batching)
    if predictors is not None and hasattr(trainer, "predictor"):
        if split.name not in predictors:
            started = time.time()
            predictors[split.name] = trainer.predictor(input_fn)
            if seconds is not None:
                seconds["predict_graphs"] = seconds.get("predict_graphs", 0.0) + (
                    time.time() - started)
        predictions = predictors[split.name].run(checkpoint)
    else:
        predictions = list(trainer.predict(input_fn, checkpoint_path=checkpoint,
                                           yield_single_examples=True))
    return task.collect(split.examples, split.plan, in_record_order(predictions, split.order),
                        labels)
