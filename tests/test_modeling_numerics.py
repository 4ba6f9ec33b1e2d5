"""Numerical behaviour of the encoders: NumPy reference, restore, padding, lookups, bf16."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import modeling

from tests.modeling_helpers import (ModelRunner as Runner, input_batch, random_weights,
                                    tiny_config, write_checkpoint)
from tests.numpy_bert import NumpyEncoder

CONFIGS = {
    "bert": tiny_config(model_type="bert"),
    "google": tiny_config(model_type="albert", albert_layout="google", embedding_size=8),
    "google_groups": tiny_config(model_type="albert", albert_layout="google", embedding_size=8,
                                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "brightmart": tiny_config(model_type="albert", albert_layout="brightmart", embedding_size=8),
    "brightmart_preln": tiny_config(model_type="albert", albert_layout="brightmart",
                                    embedding_size=8, layer_norm_position="pre"),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("released")
    out = {}
    for name, config in CONFIGS.items():
        weights = random_weights(config, seed=len(name), heads=False)
        out[name] = (write_checkpoint(root / name / "model.ckpt", weights), weights)
    return out


@pytest.fixture(scope="module")
def runners(checkpoints):
    made = {name: Runner(CONFIGS[name], checkpoints[name][0]) for name in CONFIGS}
    yield made
    for runner in made.values():
        runner.close()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_independent_numpy_forward(name, runners, checkpoints):
    ids, mask, types = input_batch()
    sequence, pooled = runners[name].run(ids, mask, types)
    ref_sequence, ref_pooled, _ = NumpyEncoder(CONFIGS[name], checkpoints[name][1]).forward(
        ids, mask, types)
    assert sequence.shape == (2, 8, 16) and pooled.shape == (2, 16)
    np.testing.assert_allclose(sequence, ref_sequence, atol=1e-5, rtol=0)
    np.testing.assert_allclose(pooled, ref_pooled, atol=1e-5, rtol=0)
    assert np.abs(sequence).max() > 0.1  # not a degenerate all-zero comparison


def test_all_layers_match_numpy_per_layer(runners, checkpoints):
    ids, mask, types = input_batch()
    runner = runners["google_groups"]
    layers = runner.run(ids, mask, types, fetch=runner.model.get_all_encoder_layers())
    _, _, ref_layers = NumpyEncoder(CONFIGS["google_groups"],
                                    checkpoints["google_groups"][1]).forward(ids, mask, types)
    assert len(layers) == 4
    for got, ref in zip(layers, ref_layers):
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["bert", "brightmart"])
def test_padding_does_not_change_unpadded_outputs(name, runners):
    ids, mask, types = input_batch()
    padded, _ = runners[name].run(ids, mask, types)
    alone, _ = runners[name].run(ids[1:, :5], mask[1:, :5], types[1:, :5])
    np.testing.assert_allclose(padded[1, :5], alone[0], atol=1e-6, rtol=0)
    garbage = ids.copy()
    garbage[1, 5:] = [40, 41, 42]  # different token ids under the padding
    changed, _ = runners[name].run(garbage, mask, types)
    np.testing.assert_allclose(changed[1, :5], padded[1, :5], atol=1e-6, rtol=0)


def test_restore_of_own_checkpoint_gives_identical_outputs(tmp_path):
    config = CONFIGS["brightmart"]
    fresh = Runner(config, None)
    ids, mask, types = input_batch()
    before = fresh.run(ids, mask, types)
    with fresh.graph.as_default():
        prefix = tf.train.Saver().save(fresh.session, str(tmp_path / "own" / "model.ckpt"))
    fresh.close()
    restored = Runner(config, str(tmp_path / "own"))  # a directory: latest checkpoint
    after = restored.run(ids, mask, types)
    restored.close()
    assert prefix.endswith("model.ckpt")
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_one_hot_lookup_equals_gather(runners, checkpoints):
    one_hot = Runner(CONFIGS["google"], checkpoints["google"][0], use_one_hot_embeddings=True)
    ids, mask, types = input_batch()
    got = one_hot.run(ids, mask, types)
    one_hot.close()
    ref = runners["google"].run(ids, mask, types)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16], ids=["bf16", "fp16"])
def test_reduced_precision_compute_is_close_to_float32(dtype, runners, checkpoints):
    bf16 = Runner(CONFIGS["bert"], checkpoints["bert"][0], compute_type=dtype)
    ids, mask, types = input_batch()
    sequence, pooled = bf16.run(ids, mask, types)
    bf16.close()
    ref_sequence, ref_pooled = runners["bert"].run(ids, mask, types)
    assert sequence.dtype == np.float32
    diff = np.abs(sequence - ref_sequence)
    assert diff.max() < 0.15 and diff.mean() < 0.03
    assert not np.array_equal(sequence, ref_sequence)  # really computed in low precision
    np.testing.assert_allclose(pooled, ref_pooled, atol=0.1)


def test_activations_follow_their_formulas():
    x = np.linspace(-4, 4, 17).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        gelu, exact, swish = session.run([modeling.get_activation(n)(tf.constant(x))
                                          for n in ("gelu", "gelu_exact", "swish")])
    tanh_ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    from math import erf
    erf_ref = np.array([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x])
    np.testing.assert_allclose(gelu, tanh_ref, atol=1e-6)
    np.testing.assert_allclose(exact, erf_ref, atol=1e-6)
    np.testing.assert_allclose(swish, x / (1 + np.exp(-x)), atol=1e-6)
    assert np.abs(gelu - exact).max() > 1e-5  # the two GELUs really differ
