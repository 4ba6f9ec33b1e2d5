"""Dropout's draws: float32 as TensorFlow's stateless dropout, lower precisions on the same mask."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import random_draws


def _dropped(dtype, rate, seed=7, shape=(400, 250)):
    """(output as float32 numpy, the input) of random_draws.dropout on one seeded graph."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        values = np.random.RandomState(0).uniform(0.5, 1.5, shape).astype(np.float32)
        out = random_draws.dropout(tf.cast(tf.constant(values), dtype), rate)
        with tf.Session() as session:
            return session.run(tf.cast(out, tf.float32)), values


def test_float32_is_tensorflows_stateless_dropout():
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(7)
        x = tf.constant(np.random.RandomState(0).uniform(0.5, 1.5, (400, 250)).astype(np.float32))
        ours = random_draws.dropout(x, 0.1)
        random_draws._STATES.pop(graph)  # the same key again: the draw index restarts at 0
        theirs = tf.nn.experimental.stateless_dropout(x, rate=0.1, seed=random_draws.next_key())
        with tf.Session() as session:
            ours, theirs = session.run([ours, theirs])
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_lower_precision_drops_float32s_elements_at_the_exact_rate(dtype):
    full, values = _dropped(tf.float32, 0.1)
    low, _ = _dropped(dtype, 0.1)
    np.testing.assert_array_equal(low == 0, full == 0)
    # 100,000 draws: the share dropped is 0.1 within 4 standard deviations (0.00095 each);
    # bf16's own uniforms would drop 13/128 = 0.1016.
    assert abs(np.mean(low == 0) - 0.1) < 0.004
    kept = low != 0
    scaled = (values / 0.9).astype(np.float32)
    # x and the scale rounded to the dtype, then their product: 3 roundings of 2^-8 (bf16)
    # or 2^-11 (fp16) relative each.
    unit = 2.0 ** -8 if dtype == tf.bfloat16 else 2.0 ** -11
    np.testing.assert_allclose(low[kept], scaled[kept], rtol=3 * unit, atol=0)
