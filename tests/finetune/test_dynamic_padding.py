"""Padding a batch to its longest record changes no result (finetune.features.Batching,
finetune.splits): with dropout off, every family's per-example probabilities and losses on
dev records written longest first equal those of batches padded to max_seq_length, on pairs
(and tagging, in both layouts); the predictions come back in the examples' order.
Training groups by length within an epoch: every record once per epoch, similar lengths in
a batch, the same order for the same seed."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen.text.tokenization import FullTokenizer
from finetune import features, splits, tasks
from finetune.model_fn import model_fn_builder
from finetune.tasks import layout as layout_lib
from tests.testutil.finetune_task import SAMPLES, TINY_CONFIG, model  # noqa: F401
from pretrain.models import registry
from pretrain.training.model_spec import ModeKeys
from pretrain.training.strategy import RunSettings
from pretrain.training.training_loop import TrainingLoop

NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
FAMILIES = {
    "bert": {},
    "albert": {"model_type": "albert", "embedding_size": 16, **NO_DROPOUT},
    "electra": {"model_type": "electra", "embedding_size": 16, **NO_DROPOUT},
    "xlnet": {"model_type": "xlnet", "d_model": 32, "n_layer": 2, "n_head": 2, "d_head": 16,
              "d_inner": 64, "ff_activation": "gelu", "untie_r": True, "dropout": 0.0,
              "dropatt": 0.0},
}
TASKS = {"pair": SAMPLES / "pairs_clue" / "dev.json", "ner": SAMPLES / "ner_bio" / "dev.txt"}
BATCHINGS = {"longest": features.Batching(), "multiple_of_4": features.Batching(
    pad_to_multiple_of=4), "max_seq_length": features.Batching(pad_to_max_length=True)}
# Probabilities in [0, 1] from float32 encoders whose padded keys get exactly zero attention:
# what differs is the order of float32 sums (kernels blocked by another length): measured
# 3e-8 to 1.2e-7 here, bounded at 1e-5 for any x86 kernel path; the examples' probabilities
# spread more than 5 * ATOL, so a prediction given to the wrong example fails.
ATOL = 1e-5
SEQ = 48  # longer than the samples' records: they keep a spread of lengths


def family_config(vocab_size, family):
    if family == "xlnet":
        return registry.config_from_dict(dict(FAMILIES["xlnet"], n_token=vocab_size))
    return registry.config_from_dict(dict(TINY_CONFIG, vocab_size=vocab_size,
                                          max_position_embeddings=64, **FAMILIES[family]))


def random_checkpoint(folder, model_fn):
    """Saves the model function's PREDICT variables drawn from N(0, 0.2): large enough
    that each example gets its own prediction (initial weights give nearly one for all)."""
    rng = np.random.default_rng(5)
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        shapes = {name: tf.placeholder(tf.int32, [None, None]) for name in
                  ("input_ids", "input_mask", "segment_ids")}
        model_fn(dict(shapes, label_weights=tf.placeholder(tf.float32, [None, None])), None,
                 ModeKeys.PREDICT)
        with tf.Session() as session:
            for variable in tf.global_variables():
                if variable is not global_step:
                    variable.load(rng.normal(0.0, 0.2, variable.shape.as_list()).astype(
                        np.float32), session)
            global_step.load(0, session)
            return tf.train.Saver().save(session, str(folder / "model.ckpt"), global_step=0)


# Every family on pairs; tagging with both layouts ([CLS] first, and XLNet's [CLS] last).
CASES = [(family, "pair") for family in sorted(FAMILIES)] + [("bert", "ner"), ("xlnet", "ner")]


@pytest.mark.parametrize("family, task_name", CASES)
def test_padding_to_the_longest_changes_no_prediction(model, tmp_path, family,  # noqa: F811
                                                      task_name):
    tokenizer = FullTokenizer(model["vocab_file"])
    config = family_config(len(tokenizer.vocab), family)
    layout = registry.family_of(config).input_layout
    task = tasks.get_task(task_name)
    path = str(TASKS[task_name])
    examples, _ = task.read(path, {}, True, lambda message: None)
    labels = task.label_list(examples, {}, path)
    settings = {"max_seq_length": SEQ, "do_lower_case": True, "input_format": "",
                "text_fields": "", "label_field": "", "eval_batch_size": 8}
    spec = features.record_spec(task.record_kind, SEQ, pad_id=layout_lib.pad_id(tokenizer))
    dev = splits.Split("dev", path, examples, {})
    splits.build_records(task, dev, labels, tokenizer, settings, spec, str(tmp_path / "cache"),
                         lambda message: None, layout)
    lengths = [sum(record["input_mask"]) for record in task.featurize(
        examples, tokenizer, SEQ, labels, layout=layout)[0]]
    assert sorted(lengths, reverse=True) == [lengths[i] for i in dev.order] and len(
        set(lengths)) > 3 and max(lengths) <= SEQ
    model_fn = model_fn_builder(task, config, len(labels), None, 1e-3, 10, 1)
    checkpoint = random_checkpoint(tmp_path, model_fn)
    loop = TrainingLoop(model_fn, RunSettings(model_dir=str(tmp_path / "loop")))
    collected = {name: splits.predict(loop, task, dev, spec, labels, settings, checkpoint,
                                      batching, predictors={})
                 for name, batching in BATCHINGS.items()}
    # The reference: records in the task's order, padded to max_seq_length (as before).
    in_task_order = splits.Split("train", path, examples, {})
    splits.build_records(task, in_task_order, labels, tokenizer, settings, spec,
                         str(tmp_path / "cache"), lambda message: None, layout)
    in_task_order.plan = dev.plan
    assert in_task_order.order is None
    reference = splits.predict(loop, task, in_task_order, spec, labels, settings, checkpoint,
                               BATCHINGS["max_seq_length"], predictors={})
    assert reference["loss"] > 0
    if task_name == "pair":  # the examples' predictions differ: their order is tested
        assert reference["probabilities"][:, 0].std() > 5 * ATOL
    for name, made in collected.items():
        assert made["predicted"] == reference["predicted"], name
        assert made["loss"] == pytest.approx(reference["loss"], abs=ATOL), name
        if task_name == "pair":
            np.testing.assert_allclose(made["probabilities"], reference["probabilities"],
                                       atol=ATOL, rtol=0, err_msg=name)


def read_training_batches(path, spec, batch_size, count, seed, batching):
    with tf.Graph().as_default():
        input_fn = features.input_fn_builder(path, spec, batch_size, is_training=True,
                                             seed=seed, batching=batching)
        batch = tf.data.make_one_shot_iterator(input_fn()).get_next()
        with tf.Session() as session:
            return [session.run(batch) for _ in range(count)]


def test_training_groups_by_length_within_each_epoch(model, tmp_path):  # noqa: F811
    tokenizer = FullTokenizer(model["vocab_file"])
    task = tasks.get_task("pair")
    path = str(SAMPLES / "pairs_clue" / "train.json")
    examples, _ = task.read(path, {}, True, lambda message: None)
    labels = task.label_list(examples, {}, path)
    records, _, _ = task.featurize(examples, tokenizer, SEQ, labels)
    # each record tagged by its index (its label id), so that batches say which they hold
    records = [dict(record, label_ids=[index]) for index, record in enumerate(records)]
    spec = features.record_spec("sequence", SEQ)
    key, key_hash = features.cache_key(path, model["vocab_file"], test="grouping")
    record_path, _ = features.cached_records("train", str(tmp_path), key, key_hash, spec,
                                             lambda: (records, {}), log_fn=lambda m: None)
    count, batch_size = len(records), 4
    steps = 3 * count // batch_size
    grouped = features.Batching(group_by_length=True)
    drawn = read_training_batches(record_path, spec, batch_size, steps, 3, grouped)
    indices = [int(index) for _, batch_labels in drawn for index in batch_labels]
    for epoch in range(3):  # every record once per epoch
        assert sorted(indices[epoch * count:(epoch + 1) * count]) == list(range(count))
    true_lengths = [sum(record["input_mask"]) for record in records]
    widths = [batch["input_ids"].shape[1] for batch, _ in drawn]
    assert widths == [max(true_lengths[int(i)] for i in batch_labels) for _, batch_labels in drawn]
    assert len(records) <= batch_size * features.GROUP_BATCHES  # one group per epoch:
    first_epoch = [true_lengths[i] for i in indices[:count - count % batch_size]]
    assert first_epoch == sorted(first_epoch, reverse=True)  # longest first
    shuffled = read_training_batches(record_path, spec, batch_size, steps, 3, features.Batching())
    padding = {name: sum(batch["input_ids"].size - batch["input_mask"].sum() for batch, _ in run)
               for name, run in (("grouped", drawn), ("shuffled", shuffled))}
    assert padding["grouped"] < padding["shuffled"] / 2, padding
    again = read_training_batches(record_path, spec, batch_size, steps, 3, grouped)
    assert [list(b) for _, b in again] == [list(b) for _, b in drawn]
    other = read_training_batches(record_path, spec, batch_size, steps, 4, grouped)
    assert [list(b) for _, b in other] != [list(b) for _, b in drawn]
