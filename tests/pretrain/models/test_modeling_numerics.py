"""Numerical behaviour of the encoders: NumPy reference, restore, padding, lookups, bf16."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models.bert import modeling

from tests.testutil.float32_bounds import (EPS16, EPS_BF16, ELEMENTWISE_ULPS, assert_close,
                                  encoder_ulps, random_rounding_ulps)
from tests.testutil.tiny_models import (ModelRunner as Runner, input_batch, random_weights,
                                    tiny_config, write_checkpoint)
from tests.testutil.numpy_bert import NumpyEncoder

CONFIGS = {
    "bert": tiny_config(model_type="bert"),
    "google": tiny_config(model_type="albert", albert_layout="google", embedding_size=8),
    "google_groups": tiny_config(model_type="albert", albert_layout="google", embedding_size=8,
                                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "brightmart": tiny_config(model_type="albert", albert_layout="brightmart", embedding_size=8),
    "brightmart_preln": tiny_config(model_type="albert", albert_layout="brightmart",
                                    embedding_size=8, layer_norm_position="pre"),
}


def _path_ulps(name, seq_length=8):
    """Bound on two float32 evaluations of CONFIGS[name] on [B, seq_length] inputs
    (float32_bounds case 2): its longest chain of sums, the pooler (hidden) and its tanh, and
    the ALBERT embedding projection (embedding_size) where there is one."""
    c = CONFIGS[name]
    extra = [c["hidden_size"]] + ([c["embedding_size"]] if "embedding_size" in c else [])
    return encoder_ulps(c["hidden_size"], c["intermediate_size"], seq_length,
                        c["num_attention_heads"], c["num_hidden_layers"], extra) \
        + ELEMENTWISE_ULPS


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
    # float32 graph against float64 NumPy: the graph's own rounding, bounded as two orders
    assert_close(sequence, ref_sequence, _path_ulps(name), err_msg="sequence")
    assert_close(pooled, ref_pooled, _path_ulps(name), err_msg="pooled")
    assert np.abs(sequence).max() > 0.1  # not a degenerate all-zero comparison


def test_all_layers_match_numpy_per_layer(runners, checkpoints):
    ids, mask, types = input_batch()
    runner = runners["google_groups"]
    layers = runner.run(ids, mask, types, fetch=runner.model.get_all_encoder_layers())
    _, _, ref_layers = NumpyEncoder(CONFIGS["google_groups"],
                                    checkpoints["google_groups"][1]).forward(ids, mask, types)
    assert len(layers) == 4
    for number, (got, ref) in enumerate(zip(layers, ref_layers)):
        # the bound of the whole encoder holds for every layer's output on the way
        assert_close(got, ref, _path_ulps("google_groups"), err_msg=f"layer {number}")


@pytest.mark.parametrize("name", ["bert", "brightmart"])
def test_padding_does_not_change_unpadded_outputs_on_any_kernel_path(name, runners):
    """Kernel-path sensitive: a batch [1, 5] and a batch [2, 8] take different matmul
    blockings (oneDNN's differ by 10 ulps on AVX-512), so the two agree to the bound of two
    summation orders, not bit for bit. Garbage under the padding runs the same shapes, so
    it changes nothing at all."""
    ids, mask, types = input_batch()
    padded, _ = runners[name].run(ids, mask, types)
    alone, _ = runners[name].run(ids[1:, :5], mask[1:, :5], types[1:, :5])
    assert_close(padded[1, :5], alone[0], _path_ulps(name))
    garbage = ids.copy()
    garbage[1, 5:] = [40, 41, 42]  # different token ids under the padding
    changed, _ = runners[name].run(garbage, mask, types)
    # same graph, same shapes: a padded key's weight is exactly 0 after the softmax, so the
    # unpadded rows are bit-identical
    np.testing.assert_array_equal(changed[1, :5], padded[1, :5])


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
        np.testing.assert_array_equal(a, b)  # same graph, shapes and values: bit-identical


def test_one_hot_lookup_equals_gather(runners, checkpoints):
    one_hot = Runner(CONFIGS["google"], checkpoints["google"][0], use_one_hot_embeddings=True)
    ids, mask, types = input_batch()
    got = one_hot.run(ids, mask, types)
    one_hot.close()
    ref = runners["google"].run(ids, mask, types)
    for a, b in zip(got, ref):
        # the one-hot matmul sums vocab_size products of which one is nonzero: exact; the
        # rest of the graph is the same ops, but its shapes may reblock (case 2)
        assert_close(a, b, _path_ulps("google"))


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16], ids=["bf16", "fp16"])
def test_reduced_precision_compute_is_close_to_float32(dtype, runners, checkpoints):
    bf16 = Runner(CONFIGS["bert"], checkpoints["bert"][0], compute_type=dtype)
    ids, mask, types = input_batch()
    sequence, pooled = bf16.run(ids, mask, types)
    bf16.close()
    ref_sequence, ref_pooled = runners["bert"].run(ids, mask, types)
    assert sequence.dtype == np.float32
    # case 3: each output passes about 2 roundings to the low format per op on its longest
    # chain (inputs and result of the 24 sums encoder_ulps counts), which mostly cancel
    eps = EPS_BF16 if dtype == tf.bfloat16 else EPS16
    ulps = random_rounding_ulps(2 * 24)
    assert_close(sequence, ref_sequence, ulps, eps=eps, err_msg="sequence")
    assert_close(pooled, ref_pooled, ulps, eps=eps, err_msg="pooled")
    # really computed in low precision: off by more than the float32 bound
    assert np.abs(sequence - ref_sequence).max() > 10 * _path_ulps("bert") * 2 ** -23


def test_activations_follow_their_formulas():
    x = np.linspace(-4, 4, 17).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        gelu, exact, swish = session.run([modeling.get_activation(n)(tf.constant(x))
                                          for n in ("gelu", "gelu_exact", "swish")])
    tanh_ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    from math import erf
    erf_ref = np.array([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x])
    # one elementwise function each, plus the few roundings of its formula
    assert_close(gelu, tanh_ref, ELEMENTWISE_ULPS + 4, err_msg="gelu")
    assert_close(exact, erf_ref, ELEMENTWISE_ULPS + 4, err_msg="gelu_exact")
    assert_close(swish, x / (1 + np.exp(-x)), ELEMENTWISE_ULPS + 4, err_msg="swish")
    assert np.abs(gelu - exact).max() > 1e-4  # the two GELUs really differ, by 1000 ulps


@pytest.mark.parametrize("name", ["gelu", "gelu_exact", "swish"])
def test_bf16_activations_are_their_float32_values_rounded_and_so_are_their_gradients(name):
    """In bf16 the transcendental activations run in float32 (faster on TensorFlow's CPU
    kernels): the output is the float32 output rounded to bf16, and the gradient the float32
    gradient of the bf16 upstream gradient, rounded."""
    x = np.linspace(-4, 4, 33).astype(np.float32)
    upstream = np.linspace(-1, 1, 33).astype(np.float32)
    activation = modeling.get_activation(name)
    with tf.Graph().as_default(), tf.Session() as session:
        low = tf.cast(tf.constant(x), tf.bfloat16)
        dy = tf.cast(tf.constant(upstream), tf.bfloat16)
        y = activation(low)
        (dx,) = tf.gradients(y, low, grad_ys=dy)
        high = tf.cast(low, tf.float32)  # the same inputs, in float32
        y32 = activation(high)
        (dx32,) = tf.gradients(y32, high, grad_ys=tf.cast(dy, tf.float32))
        assert y.dtype == dx.dtype == tf.bfloat16
        got, want, got_grad, want_grad = session.run([
            tf.cast(y, tf.float32), tf.cast(tf.cast(y32, tf.bfloat16), tf.float32),
            tf.cast(dx, tf.float32), tf.cast(tf.cast(dx32, tf.bfloat16), tf.float32)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_grad, want_grad)
    assert np.abs(got_grad).max() > 0.5  # a real gradient, not zeros
