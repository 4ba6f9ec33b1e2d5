"""An ELECTRA pretraining checkpoint fine-tunes through the task layer like any encoder:
its discriminator (`electra/...`) is the encoder, the generator and both pretraining heads
stay behind in the checkpoint, and the classifier reads the [CLS] state directly (ELECTRA
has no pooler; finetune/tasks/classification.py says why).

The checkpoint is a tiny ELECTRA written by building ELECTRA's pretraining graph (both
networks, both heads) with random weights, with bert_config.json and vocab.txt beside it
as run_pretraining leaves them; the runs use the shipped samples of test_run_finetune.
"""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from finetune import run_finetune
from tests.testutil.finetune_task import (COMMON, SAMPLES, TINY_CONFIG, finetune_from,  # noqa: F401
                              model, read_eval_results, write_random_pretraining_checkpoint)

ELECTRA = dict(TINY_CONFIG, model_type="electra", embedding_size=16, generator_hidden_size=0.5)


@pytest.fixture(scope="module")
def electra_checkpoint(model, tmp_path_factory):  # noqa: F811
    """{"dir", "weights": {name: value}} of a tiny ELECTRA pretraining checkpoint."""
    folder = tmp_path_factory.mktemp("electra_pretrained")
    vocab_size = len(open(model["vocab_file"], encoding="utf-8").read().split())

    def features():
        made = {name: tf.zeros([1, 8], tf.int32)
                for name in ("input_ids", "input_mask", "segment_ids")}
        made.update(masked_lm_positions=tf.zeros([1, 2], tf.int32),
                    masked_lm_ids=tf.zeros([1, 2], tf.int32), masked_lm_weights=tf.ones([1, 2]))
        return made
    return write_random_pretraining_checkpoint(folder, dict(ELECTRA, vocab_size=vocab_size),
                                               features, model["vocab_file"])


def check_loaded_the_discriminator(checkpoint, results, out, head_scope):
    """The fine-tuned graph took every `electra/` variable from the checkpoint (by name,
    value for value at step 0) and nothing else; the generator and heads went unused."""
    weights = checkpoint["weights"]
    encoder = sorted(name for name in weights if name.startswith("electra/"))
    init = results["init"]
    assert init["loaded"] == len(encoder) > 30
    assert all(name.startswith(head_scope + "/") for name in init["missing_in_checkpoint"])
    assert init["unused_in_checkpoint"] == len(weights) - len(encoder)
    step0 = tf.train.load_checkpoint(str(out / "model.ckpt-0"))
    for name in encoder:  # restored and saved again before any step: bit for bit
        np.testing.assert_array_equal(step0.get_tensor(name), weights[name], err_msg=name)
    trained = tf.train.load_checkpoint(str(out / "best"))
    assert not any(name.startswith(("generator", "discriminator_predictions"))
                   for name in trained.get_variable_to_shape_map())
    # Not a tolerance but the training's effect: an AdamW step moves a weight by about the
    # learning rate (2e-3, COMMON), 20x this; an encoder left frozen would not move at all.
    assert np.abs(trained.get_tensor("electra/encoder/layer_1/output/dense/kernel")
                  - weights["electra/encoder/layer_1/output/dense/kernel"]).max() > 1e-4


def test_classification_from_an_electra_checkpoint(electra_checkpoint, tmp_path):
    out = tmp_path / "sentiment"
    results, log = finetune_from(electra_checkpoint, out, task="classification",
                                 data_dir=str(SAMPLES / "sentiment"), num_train_epochs=1,
                                 eval_every_steps=1000)
    check_loaded_the_discriminator(electra_checkpoint, results, out, "classifier")
    assert "electra/encoder/layer_0/attention/self/query/kernel" in log  # the loading table
    assert results["labels"] == ["neg", "pos"] and results["num_train_steps"] > 0
    written = read_eval_results(out / "eval_results.txt")
    for split in ("dev", "test"):
        assert 0.0 <= float(written[f"{split}_accuracy"]) <= 1.0
        assert float(written[f"{split}_accuracy"]) == results[split]["accuracy"]


def test_ner_from_an_electra_checkpoint(electra_checkpoint, tmp_path):
    out = tmp_path / "ner"
    results, _ = finetune_from(electra_checkpoint, out, task="ner",
                               train_file=str(SAMPLES / "ner_bio" / "train.txt"),
                               dev_file=str(SAMPLES / "ner_bio" / "dev.txt"),
                               test_file=str(SAMPLES / "ner_bio" / "test.txt"),
                               num_train_epochs=1, eval_every_steps=1000)
    check_loaded_the_discriminator(electra_checkpoint, results, out, "token_classifier")
    assert results["tag_scheme"] == "BIO"
    written = read_eval_results(out / "eval_results.txt")
    assert float(written["test_f1"]) == results["test"]["f1"]
    assert 0.0 <= results["test"]["f1"] <= 1.0
