"""Masked-LM and sentence heads, eval metrics, vocab reduction helper."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.checkpoints import vocab_surgery
from pretrain.models import heads
from pretrain.models.bert import modeling
from pretrain.models import eval_metrics

from tests.conftest import shared_path
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, summation_ulps
from tests.testutil.tiny_models import tiny_config
from tests.testutil.numpy_bert import assert_weighted_prediction_loss, gelu_tanh, layer_norm


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("layout", ["bert", "google", "brightmart"])
def test_masked_lm_head_matches_numpy(layout):
    extra = {} if layout == "bert" else dict(model_type="albert", albert_layout=layout,
                                             embedding_size=8)
    config = modeling.BertConfig.from_dict(tiny_config(**extra))
    rng = np.random.RandomState(1)
    sequence = rng.normal(size=(2, 5, 16)).astype(np.float32)
    positions = np.array([[1, 3, 0], [4, 2, 0]], np.int32)
    labels = np.array([[7, 9, 0], [11, 3, 0]], np.int32)
    weights = np.array([[1, 1, 0], [1, 1, 0]], np.float32)
    e = 16 if layout == "bert" else 8
    table = rng.normal(size=(50, e)).astype(np.float32)
    projection = rng.normal(size=(8, 16)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        loss, per_example, log_probs = heads.get_masked_lm_output(
            config, tf.constant(sequence), tf.constant(table), tf.constant(positions),
            tf.constant(labels), tf.constant(weights),
            output_projection=tf.constant(projection) if layout == "brightmart" else None)
        session.run(tf.global_variables_initializer())
        names = [v.op.name for v in tf.global_variables()]
        values = dict(zip(names, session.run(tf.global_variables())))
        got_loss, got_per_example, got_log_probs = session.run([loss, per_example, log_probs])
    p = "cls/predictions/transform/"
    gathered = np.concatenate([sequence[b, positions[b]] for b in range(2)])
    hidden = gelu_tanh(gathered @ values[p + "dense/kernel"] + values[p + "dense/bias"])
    hidden = layer_norm(hidden, values[p + "LayerNorm/gamma"], values[p + "LayerNorm/beta"])
    if layout == "brightmart":
        hidden = hidden @ projection.T
    ref_log_probs = log_softmax(hidden @ table.T + values["cls/predictions/output_bias"])
    assert ref_log_probs.shape == (6, 50)
    # the transform (16 inputs), its GELU and LayerNorm (16, 16), brightmart's projection
    # (16), the decoder (e), the log-softmax's max-shifted sum of 50 exps and its log
    ulps = summation_ulps(16, 16, 16, 16, e, 50) + 3 * ELEMENTWISE_ULPS
    assert_weighted_prediction_loss((got_loss, got_per_example, got_log_probs), ref_log_probs,
                                    labels, weights, ulps)
    assert values[p + "dense/kernel"].shape == (16, 8 if layout == "google" else 16)


def test_sentence_head_and_metrics_values():
    config = modeling.BertConfig.from_dict(tiny_config())
    pooled = np.random.RandomState(2).normal(size=(4, 16)).astype(np.float32)
    labels = np.array([0, 1, 1, 0], np.int32)
    mlm_log_probs = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1],
                                     [0.3, 0.3, 0.4], [0.5, 0.4, 0.1]], np.float32))
    mlm_ids = np.array([0, 2, 2, 1], np.int32)
    mlm_weights = np.array([1, 1, 1, 0], np.float32)
    mlm_loss = -mlm_log_probs[np.arange(4), mlm_ids]
    with tf.Graph().as_default(), tf.Session() as session:
        loss, per_example, log_probs = heads.get_sentence_output(
            config, tf.constant(pooled), tf.constant(labels))
        metrics = eval_metrics.metric_fn(
            tf.constant(mlm_loss), tf.constant(mlm_log_probs), tf.constant(mlm_ids),
            tf.constant(mlm_weights), per_example, log_probs, tf.constant(labels))
        only_mlm = eval_metrics.metric_fn(
            tf.constant(mlm_loss), tf.constant(mlm_log_probs), tf.constant(mlm_ids),
            tf.constant(mlm_weights))
        session.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        session.run([update for _, update in metrics.values()])
        results = session.run({k: value for k, (value, _) in metrics.items()})
        got_loss, got_log_probs = session.run([loss, log_probs])
    assert set(only_mlm) == {"masked_lm_accuracy", "masked_lm_loss", "masked_lm_loss_squared",
                             "masked_lm_unigram_accuracy", "masked_lm_unigram_loss",
                             "masked_lm_num_targets"}
    # Ratios of small counts (2 of 3, 1 of 2, k of 4) are float32 divisions: within one
    # rounding (1 ulp) of the exact value.
    assert_close(results["masked_lm_unigram_accuracy"], 2 / 3, 1)  # label 2 of 0, 2, 2
    assert_close(results["sentence_chance_accuracy"], 0.5, 1)
    assert_close(results["masked_lm_accuracy"], 2 / 3, 1)  # rows 0, 2 right; row 3 weight 0
    # a weighted mean: the sums of 4 products and 4 weights, then one division
    assert_close(results["masked_lm_loss"], mlm_loss[:3].mean(), summation_ulps(4, 4) + 1)
    # its second moment, for the loss's standard error: one more rounding per square
    assert_close(results["masked_lm_loss_squared"], (mlm_loss[:3] ** 2).mean(),
                 summation_ulps(4, 4) + 2)
    predicted = got_log_probs.argmax(-1)
    assert_close(results["sentence_accuracy"], (predicted == labels).mean(), 1)
    # the metric's streaming mean of the same 4 losses against the head's own mean
    assert_close(results["sentence_loss"], got_loss, 2 * summation_ulps(4) + 2)
    assert_close(got_loss, -got_log_probs[np.arange(4), labels].mean(), 2 * summation_ulps(4) + 2)


def test_vocab_reduction_writes_vocab_and_ids(tmp_path):
    full = ["[PAD]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "们", "你", "好", "##好"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(full) + "\n", encoding="utf-8")
    keep = vocab_surgery.write_reduced_vocab(
        str(vocab_file), str(tmp_path / "out" / "vocab.txt"), str(tmp_path / "out" / "keep.json"),
        tokens=["你", "好", "你", "们", "不在词表"])
    assert keep == [0, 2, 3, 4, 5, 7, 8, 9]
    reduced = (tmp_path / "out" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert reduced == [full[i] for i in keep]
    assert vocab_surgery.load_keep_tokens(str(tmp_path / "out" / "keep.json")) == keep
    assert vocab_surgery.select_keep_tokens(full, {"你": 1, "好": 3}, min_count=2) == \
        [0, 2, 3, 4, 5, 9]
    (tmp_path / "bad.json").write_text(json.dumps({"ids": [1]}))
    with pytest.raises(ValueError, match="bad.json"):
        vocab_surgery.load_keep_tokens(str(tmp_path / "bad.json"))


def test_vocab_reduction_on_shared_corpus_with_google_vocab(tmp_path):
    vocab_file = shared_path("vocab", "bert_chinese_vocab.txt")
    corpus = shared_path("corpus", "clue_small_sample.txt")
    lines = corpus.read_text(encoding="utf-8").splitlines()[:300]
    sample = tmp_path / "sample.txt"
    sample.write_text("\n".join(lines), encoding="utf-8")
    keep = vocab_surgery.write_reduced_vocab(
        str(vocab_file), str(tmp_path / "vocab.txt"), str(tmp_path / "keep.json"),
        corpus_files=[str(sample)])
    full = vocab_surgery.read_vocab_tokens(str(vocab_file))
    assert len(full) == 21128 and 500 < len(keep) < 21128
    assert keep[:1] == [0] and keep == sorted(set(keep))
    kept = {full[i] for i in keep}
    assert {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} <= kept
    assert all(ch in kept for ch in "".join(lines[:5]) if ch in full[:21128] and ch.strip()
               and "\u4e00" <= ch <= "\u9fff")


def test_cross_entropy_formulations_agree_in_value_and_gradient():
    """The one-hot (oneDNN) and fused sparse (Eigen) MLM losses are the same function."""
    rng = np.random.RandomState(3)
    logits_value = rng.normal(scale=3.0, size=(6, 40)).astype(np.float32)
    labels_value = np.array([0, 39, 7, 7, 12, 25], np.int32)
    with tf.Graph().as_default(), tf.Session() as session:
        logits = tf.constant(logits_value)
        log_probs = tf.nn.log_softmax(logits)
        results = []
        for one_hot in (True, False):
            loss = heads.cross_entropy(logits, log_probs, tf.constant(labels_value), one_hot)
            weights = tf.constant(np.arange(1, 7, dtype=np.float32))
            grad = tf.gradients(tf.reduce_sum(loss * weights), logits)[0]
            results.append(session.run([loss, grad]))
    (loss_one_hot, grad_one_hot), (loss_sparse, grad_sparse) = results
    expected = -log_softmax(logits_value)[np.arange(6), labels_value]
    # a log-softmax over 40 logits: the max-shifted sum of 40 exps, its log; the one-hot
    # form adds a sum of 40 products of which one is nonzero (exact)
    ulps = summation_ulps(40) + 2 * ELEMENTWISE_ULPS
    assert_close(loss_one_hot, expected, ulps, scale=np.abs(logits_value).max())
    assert_close(loss_sparse, expected, ulps, scale=np.abs(logits_value).max())
    softmax = np.exp(log_softmax(logits_value))
    expected_grad = (softmax - np.eye(40, dtype=np.float32)[labels_value]) * np.arange(1, 7)[:, None]
    # softmax - one-hot, times the weight: the same sum and exp, then two roundings
    assert_close(grad_one_hot, expected_grad, ulps + 2)
    assert_close(grad_sparse, expected_grad, ulps + 2)


def test_cross_entropy_formulation_follows_the_device():
    """The fused sparse op on GPU; one-hot on CPU with oneDNN (the default here) and on TPU."""
    from tensorflow.python.tpu import tpu_function  # pylint: disable=import-outside-toplevel
    from pretrain import cpu_kernels

    def formulation(device=None, tpu_shards=None):
        with tf.Graph().as_default():
            context = tpu_function.tpu_shard_context(tpu_shards) if tpu_shards else None
            if context:
                context.__enter__()
            try:
                with tf.device(device):  # graph placement only: no GPU needed to build
                    logits = tf.zeros([4, 7])
                    return heads.prefers_one_hot_cross_entropy(logits)
            finally:
                if context:
                    context.__exit__(None, None, None)

    assert formulation("/device:GPU:0") is False
    assert formulation("/device:CPU:0") is cpu_kernels.onednn_enabled()
    assert formulation("/device:CPU:0", tpu_shards=8) is True
