"""What every fine-tuning task provides, and the label bookkeeping they share.

A task is one module under finetune/tasks/ registered by name in
finetune/tasks/__init__.py. It says how its files are read (through
finetune.formats), how examples become records (the record_schema kind it
writes), which head sits on the encoder and with what loss, how the
predictions of the records are turned back into one prediction per example,
and how they are scored (finetune.metrics). run_finetune drives them all the
same way:

    examples, account = task.read(path, options, require_labels, log_fn)
    labels = task.label_list(train_examples, options, train_path)
    features, plan, counts = task.featurize(examples, tokenizer, max_seq_length, labels, ...)
    loss, per_example_loss, outputs = task.build_model(config, is_training, features, labels_t, n)
    predicted, loss = task.collect(examples, plan, prediction_dicts, labels)
    metrics = task.score(examples, predicted, labels)
"""
import re

from common.cli_options import UserError
from finetune.tasks import layout as layout_lib


class TaskDataError(UserError):
    """Task data that cannot be used as it is (unseen label, bad tag scheme, ...)."""


_INTEGER = re.compile(r"-?\d+")


def sorted_labels(labels):
    """The label list in id order: numbers by value ("2" before "10"), else as strings."""
    labels = set(labels)
    if labels and all(_INTEGER.fullmatch(label) for label in labels):
        return sorted(labels, key=int)
    return sorted(labels)


def check_known_labels(values_by_line, labels, path, allow_unseen, what="label"):
    """Stops at the first label not in `labels` (naming it, the file and the line) unless
    allow_unseen; returns {label: count} of the unseen ones.

    values_by_line: iterable of (line number, label).
    """
    known, unseen, first = set(labels), {}, {}
    for line, value in values_by_line:
        if value is not None and value not in known:
            unseen[value] = unseen.get(value, 0) + 1
            first.setdefault(value, line)
    if unseen and not allow_unseen:
        value = min(first, key=first.get)
        raise TaskDataError(
            f"{path}:{first[value]}: {what} {value!r} does not occur in the training file "
            f"({len(unseen)} unseen {what}(s) in all: {', '.join(sorted(unseen))}); the "
            f"model can only predict the {len(labels)} {what}s it was trained on. Fix the "
            "file, or pass --allow_unseen_labels to score those examples as errors")
    return unseen


# A best-on-dev model has collapsed when it predicts one class for this share of dev (or,
# tagging, leaves this share of the entity tokens untagged) while the gold labels do not.
COLLAPSE_SHARE = 0.98


def majority_share(predicted):
    """(most common prediction, its share of all predictions)."""
    counts = {}
    for value in predicted:
        counts[value] = counts.get(value, 0) + 1
    top = max(counts, key=counts.get)
    return top, counts[top] / len(predicted)


class Task:
    """The interface; see the module docstring. Subclasses set these attributes."""
    name = None          # the --task value
    record_kind = None   # "sequence" or "token" (data_gen.records.record_schema)
    metric_kind = None   # "classification" or "ner" (finetune.metrics)
    metrics = ()         # what score() reports that can pick the best checkpoint and that
                         # compare tabulates; the first is --selection_metric's default

    def read(self, path, options, require_labels, log_fn):
        raise NotImplementedError

    def label_list(self, train_examples, options, path=None):
        raise NotImplementedError

    def check_labels(self, examples, labels, path, allow_unseen):
        raise NotImplementedError

    def featurize(self, examples, tokenizer, max_seq_length, labels, condition_size=None,
                  path=None, layout=layout_lib.BERT_LAYOUT):
        """(feature dicts, plan, counts); layout: the model family's (finetune.tasks.layout)."""
        raise NotImplementedError

    def build_model(self, config, is_training, features, label_tensor, num_labels,
                    compute_type="float32"):
        """(loss, per_example_loss [B], outputs); compute_type: the encoder's (a tf dtype or
        its name); the heads and the loss stay float32."""
        raise NotImplementedError

    def collect(self, examples, plan, predictions, labels):
        raise NotImplementedError

    def score(self, examples, predicted, labels):
        raise NotImplementedError

    def collapse(self, examples, collected):
        """{"collapsed": bool, "what": a sentence saying what the model does when it has,
        and the task's counts} for the dev predictions `collected` (COLLAPSE_SHARE)."""
        raise NotImplementedError

    def prediction_record(self, example, predicted, labels):
        raise NotImplementedError

    def description(self, labels, options):
        """task.json: what export_hf / export_saved_model need to rebuild the head."""
        return {"format_version": 1, "task": self.name, "labels": list(labels),
                "tag_scheme": None, "max_seq_length": options["max_seq_length"],
                "do_lower_case": options["do_lower_case"]}
