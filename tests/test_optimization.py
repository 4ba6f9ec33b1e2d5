"""Optimizer choices, accumulation and loss-scaling behaviour of build_train_op."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.training import mixed_precision, optimization


# The schedule against hand-derived values, and AdamW/LAMB against a NumPy reference over
# several updates: tests/test_training_numerics.py.


def test_unknown_optimizer_is_refused_with_choices():
    with pytest.raises(ValueError, match="adamw.*lamb"):
        optimization.make_optimizer("sgdx", 0.1)


def _linear_problem(batch_x, batch_y, k, steps, optimizer="adamw"):
    """Train a linear model; returns final weights, an Adam slot and the global step."""
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None])
        with tf.variable_scope("lin"):
            w = tf.get_variable("kernel", initializer=np.array([[0.5], [-0.3], [0.1]], np.float32))
            b = tf.get_variable("bias", initializer=np.array([0.2], np.float32))
        pred = tf.squeeze(tf.matmul(x, w), 1) + b
        loss = tf.reduce_mean(tf.square(pred - y))
        out = optimization.build_train_op(loss, 0.05, steps, 1, optimizer=optimizer,
                                          gradient_accumulation_steps=k)
        m_slot = [v for v in tf.global_variables() if v.op.name == "lin/kernel/adam_m"][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            n = len(batch_x)
            micro = n // k
            for _ in range(steps):
                for i in range(k):
                    sl = slice(i * micro, (i + 1) * micro)
                    sess.run(out.train_op, {x: batch_x[sl], y: batch_y[sl]})
            return sess.run([w, b, m_slot, tf.train.get_global_step()])


@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_gradient_accumulation_equals_larger_batch(optimizer):
    rng = np.random.RandomState(1)
    bx = rng.randn(8, 3).astype(np.float32)
    by = rng.randn(8).astype(np.float32)
    w1, b1, m1, s1 = _linear_problem(bx, by, k=1, steps=3, optimizer=optimizer)
    w4, b4, m4, s4 = _linear_problem(bx, by, k=4, steps=3, optimizer=optimizer)
    assert s1 == 3 and s4 == 12  # the global step counts micro-batches
    np.testing.assert_allclose(w4, w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b4, b1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m4, m1, rtol=1e-5, atol=1e-6)
    assert not np.allclose(w1, [[0.5], [-0.3], [0.1]])


def test_fp16_overflow_step_is_skipped_and_scale_halved():
    with tf.Graph().as_default():
        scale_feed = tf.placeholder(tf.float32, [])
        with tf.variable_scope("m"):
            w = tf.get_variable("kernel", initializer=np.ones([2], np.float32))
        loss = tf.reduce_sum(w * scale_feed)
        scaler = mixed_precision.DynamicLossScale(initial_scale=8.0, growth_interval=2)
        out = optimization.build_train_op(loss, 0.1, 10, 0, loss_scaler=scaler)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            finite, applied, _ = sess.run([out.grads_finite, out.update_applied, out.train_op],
                                          {scale_feed: np.inf})
            assert not finite and not applied
            np.testing.assert_array_equal(sess.run(w), [1.0, 1.0])
            assert sess.run(scaler.scale_var) == 4.0
            for _ in range(2):
                finite, _ = sess.run([out.grads_finite, out.train_op], {scale_feed: 1.0})
                assert finite
            assert sess.run(scaler.scale_var) == 8.0  # doubled after 2 finite steps
            assert np.all(sess.run(w) < 1.0)
            assert sess.run(tf.train.get_global_step()) == 3


def test_non_finite_fp32_step_leaves_variable_and_slots_untouched():
    """A NaN gradient (no loss scaling) skips the update: weights and Adam slots keep their values."""
    with tf.Graph().as_default():
        feed = tf.placeholder(tf.float32, [])
        with tf.variable_scope("m"):
            w = tf.get_variable("kernel", initializer=np.array([1.0, -2.0], np.float32))
        out = optimization.build_train_op(tf.reduce_sum(w * w) * feed, 0.1, 10, 0)
        slots = [v for v in tf.global_variables() if v.op.name.startswith("m/kernel/")]
        assert sorted(v.op.name for v in slots) == ["m/kernel/adam_m", "m/kernel/adam_v"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(out.train_op, {feed: 1.0})
            before = sess.run([w] + slots)
            finite, applied, norm, _ = sess.run(
                [out.grads_finite, out.update_applied, out.grad_norm, out.train_op], {feed: np.nan})
            assert not finite and not applied and not np.isfinite(norm)
            for old, new in zip(before, sess.run([w] + slots)):
                np.testing.assert_array_equal(new, old)
            finite, norm, _ = sess.run([out.grads_finite, out.grad_norm, out.train_op], {feed: 1.0})
            assert finite and np.isclose(norm, np.linalg.norm(2 * before[0]), rtol=1e-5)
            assert not np.allclose(sess.run(w), before[0])
            assert sess.run(tf.train.get_global_step()) == 3
