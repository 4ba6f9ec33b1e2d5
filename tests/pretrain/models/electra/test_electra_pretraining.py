"""ELECTRA's objective against a NumPy reference on a tiny config: the generator's MLM loss,
the replaced tokens and their labels, the discriminator loss and the weighted total;
the Gumbel-max sampler's distribution; and where the gradients flow."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tests.testutil.float32_bounds import (ELEMENTWISE_ULPS, assert_close, binomial_tolerance,
                            summation_ulps)
from tests.testutil.pretrain_data import CASES, electra_config

from pretrain.models.electra.config import ElectraConfig
from pretrain.models.electra.pretraining import (electra_pretraining_losses,
                                                 sample_replacements)

VOCAB, MASK_ID = 50, 4
TINY = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=1, num_attention_heads=1,
            intermediate_size=128, max_position_embeddings=16, type_vocab_size=2,
            embedding_size=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
INPUT_IDS = np.array([[2, 10, MASK_ID, 12, MASK_ID, 3, 0, 0],
                      [2, MASK_ID, 21, 22, 23, 24, 25, 3]], np.int32)
INPUT_MASK = (INPUT_IDS > 0).astype(np.int32)
INPUT_MASK[0, :6] = 1
POSITIONS = np.array([[2, 4, 0], [1, 5, 0]], np.int32)  # last prediction of each: padding
WEIGHTS = np.array([[1, 1, 0], [1, 1, 0]], np.float32)
# The losses against NumPy on the graph's own log-probabilities and logits (float32_bounds
# case 2). MLM: a cross-entropy is -log_probs[label] with oneDNN kernels but the fused sparse
# op with Eigen's, which takes the log-sum-exp of the VOCAB logits again (the exps' sum in
# another order, an exp and a log); then the weighted sum of the 6 predictions, + 1e-5 and
# the divide. Discriminator: per token max(z, 0) - z y + log1p(exp(-|z|)) (exp, log1p and
# three roundings), the sum over the 16 tokens, + 1e-6 and the divide. The total of the two
# positive losses: the worse of their bounds and its two products and sum.
MLM_ULPS = summation_ulps(VOCAB) + 2 * ELEMENTWISE_ULPS + summation_ulps(6) + 3
DISC_ULPS = 2 * ELEMENTWISE_ULPS + 3 + summation_ulps(16) + 2
TOTAL_ULPS = max(MLM_ULPS, DISC_ULPS) + 3


def build(config, label_ids, seed=7):
    tf.set_random_seed(seed)
    features = {"input_ids": tf.constant(INPUT_IDS), "input_mask": tf.constant(INPUT_MASK),
                "segment_ids": tf.zeros_like(INPUT_IDS), "masked_lm_positions": POSITIONS,
                "masked_lm_ids": label_ids, "masked_lm_weights": WEIGHTS}
    return electra_pretraining_losses(config, features, is_training=False, sampling_seed=11)


def reference(outputs, label_ids, config):
    """NumPy: (original ids, replaced ids, labels, mlm loss, disc loss, total)."""
    original, replaced = INPUT_IDS.copy(), INPUT_IDS.copy()
    sampled = outputs["sampled_ids"].reshape(POSITIONS.shape)
    for b, p in zip(*np.nonzero(WEIGHTS)):
        original[b, POSITIONS[b, p]] = label_ids[b, p]
    replaced[:] = original
    for b, p in zip(*np.nonzero(WEIGHTS)):
        replaced[b, POSITIONS[b, p]] = sampled[b, p]
    labels = (replaced != original).astype(np.int32)
    log_probs = outputs["masked_lm_log_probs"]
    token_ce = -log_probs[np.arange(log_probs.shape[0]), label_ids.reshape(-1)]
    mlm = (WEIGHTS.reshape(-1) * token_ce).sum() / (WEIGHTS.sum() + 1e-5)
    z, y, m = outputs["disc_logits"].astype(np.float64), labels, INPUT_MASK
    bce = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    disc = (bce * m).sum() / (m.sum() + 1e-6)
    return original, replaced, labels, mlm, disc, config.gen_weight * mlm + config.disc_weight * disc


def test_losses_replacements_and_labels_match_numpy():
    """Kernel-path sensitive: the MLM cross-entropy's formulation follows the CPU kernels
    (heads.prefers_one_hot_cross_entropy), hence MLM_ULPS."""
    config = ElectraConfig(gen_weight=2.0, disc_weight=7.0, **TINY)
    label_ids = np.array([[11, 13, 0], [20, 24, 0]], np.int32)
    with tf.Graph().as_default():
        labels_in = tf.placeholder(tf.int32, [2, 3])
        outputs = build(config, labels_in)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(outputs, {labels_in: label_ids})
    original, replaced, labels, mlm, disc, total = reference(got, label_ids, config)
    np.testing.assert_array_equal(got["replaced_input_ids"], replaced)
    np.testing.assert_array_equal(got["disc_labels"], labels)
    assert replaced[0, 0] == 2 and replaced[1, 0] == 2  # padding predictions write nothing
    assert (replaced[INPUT_MASK == 1] != MASK_ID).all()  # every [MASK] was replaced
    assert_close(got["masked_lm_loss"], mlm, MLM_ULPS, err_msg="masked_lm_loss")
    assert_close(got["disc_loss"], disc, DISC_ULPS, err_msg="disc_loss")
    assert_close(got["loss"], total, TOTAL_ULPS, err_msg="loss")
    np.testing.assert_array_equal(got["disc_preds"], (got["disc_logits"] > 0).astype(int))
    assert got["sampled_ids"].shape == (6,)


def test_a_sample_equal_to_the_original_is_labelled_original():
    config = ElectraConfig(temperature=1e-4, **TINY)  # sampling is greedy at this temperature
    with tf.Graph().as_default():
        labels_in = tf.placeholder(tf.int32, [2, 3])
        outputs = build(config, labels_in)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(outputs, {labels_in: np.full([2, 3], 30, np.int32)})
            greedy = first["masked_lm_log_probs"].argmax(-1).reshape(2, 3)
            np.testing.assert_array_equal(first["sampled_ids"].reshape(2, 3), greedy)
            label_ids = np.where(np.arange(3) == 0, greedy, 30).astype(np.int32)
            second = sess.run(outputs, {labels_in: label_ids})
    _, _, labels, _, _, _ = reference(second, label_ids, config)
    np.testing.assert_array_equal(second["disc_labels"], labels)
    assert second["disc_labels"][0, 2] == 0 and second["disc_labels"][1, 1] == 0
    assert second["replaced_input_ids"][0, 2] == greedy[0, 0]


def test_gumbel_max_draws_from_the_tempered_softmax():
    logits = np.array([2.0, 1.0, 0.0, -1.0], np.float32)
    temperature, draws = 2.0, 40000
    with tf.Graph().as_default():
        tiled = tf.constant(np.tile(logits, [draws, 1]))
        samples = sample_replacements(tiled, temperature, tf.random.uniform(tf.shape(tiled),
                                                                            seed=5))
        with tf.Session() as sess:
            got = np.bincount(sess.run(samples), minlength=4) / draws
    expected = np.exp(logits / temperature) / np.exp(logits / temperature).sum()
    # a sampling bound, not rounding: 5 standard errors of each share over the draws
    for index, (share, p) in enumerate(zip(got, expected)):
        assert abs(share - p) <= binomial_tolerance(p, draws), (index, share, p)


def test_no_gradient_reaches_the_generator_through_the_sample():
    config = ElectraConfig(**TINY)
    with tf.Graph().as_default():
        outputs = build(config, np.array([[11, 13, 0], [20, 24, 0]], np.int32))
        variables = {v.op.name: v for v in tf.trainable_variables()}
        disc_grads = dict(zip(variables, tf.gradients(outputs["disc_loss"],
                                                      list(variables.values()))))
        mlm_grads = dict(zip(variables, tf.gradients(outputs["masked_lm_loss"],
                                                     list(variables.values()))))
    generator_only = [n for n in variables if n.startswith(("generator/",
                                                            "generator_predictions/"))]
    discriminator_only = [n for n in variables if n.startswith(("electra/encoder",
                                                                "electra/embeddings_project",
                                                                "discriminator_predictions/"))]
    assert generator_only and discriminator_only
    assert all(disc_grads[n] is None for n in generator_only)
    assert all(mlm_grads[n] is None for n in discriminator_only)
    shared = "electra/embeddings/word_embeddings"  # both losses train the shared table
    assert disc_grads[shared] is not None and mlm_grads[shared] is not None


def test_sentence_heads_and_other_configs_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="no sentence or span boundary head"):
            electra_pretraining_losses(ElectraConfig(**TINY), {}, False, use_sentence_head=True)
        with pytest.raises(TypeError, match="needs an ElectraConfig"):
            electra_pretraining_losses(object(), {}, False)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_every_variable_is_upstreams_heads_included(case):
    """The whole objective's variables against upstream's PretrainingModel (the fixture)."""
    config = electra_config(case["hparams"])
    with tf.Graph().as_default():
        build(config, np.array([[11, 13, 0], [20, 24, 0]], np.int32))
        ours = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert ours == case["variables"]
