"""Optimizer choices, accumulation and loss-scaling behaviour of build_train_op."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.training import mixed_precision, optimization, optimizers
from tests.testutil.float32_bounds import assert_close, magnitude, summation_ulps, tolerance
from tests.testutil.pretrain_data import moment_ulps, norm_ulps, weight_drift

INITIAL_KERNEL = np.array([[0.5], [-0.3], [0.1]], np.float32)


# The schedule against hand-derived values, and AdamW/LAMB against a NumPy reference over
# several updates: tests/pretrain/training/test_training_numerics.py.


def test_unknown_optimizer_is_refused_with_choices():
    with pytest.raises(ValueError, match="adamw.*lamb"):
        optimizers.make_optimizer("sgdx", 0.1)


def _linear_problem(batch_x, batch_y, k, steps, optimizer="adamw"):
    """Train a linear model; returns final weights, an Adam slot and the global step."""
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None])
        with tf.variable_scope("lin"):
            w = tf.get_variable("kernel", initializer=INITIAL_KERNEL)
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
    """4 micro-batches of 2 against one batch of 8: the same weights and m. Kernel-path
    sensitive (matmuls of 2 and of 8 rows may block otherwise), hence a bound."""
    rng = np.random.RandomState(1)
    bx = rng.randn(8, 3).astype(np.float32)
    by = rng.randn(8).astype(np.float32)
    w1, b1, m1, s1 = _linear_problem(bx, by, k=1, steps=3, optimizer=optimizer)
    w4, b4, m4, s4 = _linear_problem(bx, by, k=4, steps=3, optimizer=optimizer)
    assert s1 == 3 and s4 == 12  # the global step counts micro-batches
    # float32_bounds case 2: k = 4 sums the batch of 8 as four sums of 2 (and a mean of
    # the four) where k = 1 sums it at once, and the matmul of 2 rows may block otherwise;
    # a gradient passes x @ w (3 terms), the batch (8) and four elementwise roundings
    # (the residual, 2 / B, the mean over micro-batches). The schedule (warmup 1, 3 updates)
    # gives learning rates 0, 0.05 * 2/3, 0.05 * 1/3; the global norm clips 4 gradients;
    # LAMB adapts the 3-element kernel, whose norm a LAMB step grows by lr of itself at most.
    gradient_ulps = summation_ulps(3, 8) + 4
    weight_scale = magnitude([magnitude(INITIAL_KERNEL), magnitude(w1), magnitude(b1)])
    learning_rates = [0.0, 0.05 * 2 / 3, 0.05 / 3]
    lamb_norm = 0.0
    if optimizer == "lamb":
        lamb_norm = np.linalg.norm(INITIAL_KERNEL) * np.prod([1 + lr for lr in learning_rates])
    drift = weight_drift(learning_rates, gradient_ulps, weight_scale, clip_width=4,
                         lamb_norm=lamb_norm, lamb_width=3 if lamb_norm else 0,
                         weight_decay=0.01)
    for name, got, want in (("kernel", w4, w1), ("bias", b4, b1)):
        assert_close(got, want, drift / tolerance(1, magnitude(want)), err_msg=name)
    assert_close(m4, m1, moment_ulps(gradient_ulps, drift, weight_scale, clip_width=4),
                 err_msg="kernel/adam_m")
    # the weights really moved: by far more than the bound (a run that did not train fails)
    assert np.abs(w1 - INITIAL_KERNEL).max() > 1000 * drift


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
            np.testing.assert_array_equal(sess.run(w), [1.0, 1.0])  # untouched: exact
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
                np.testing.assert_array_equal(new, old)  # skipped: nothing wrote them
            finite, norm, _ = sess.run([out.grads_finite, out.grad_norm, out.train_op], {feed: 1.0})
            assert finite
            # The gradient 2 w is exact (w + w); the norm of its two elements (float64 here)
            # rounds the squares, their sum and the sqrt.
            assert_close(norm, np.linalg.norm(2.0 * before[0].astype(np.float64)), norm_ulps(2),
                         err_msg="grad_norm")
            # the update moved the weights (about lr = 0.1 times Adam's 3.16)
            assert np.abs(sess.run(w) - before[0]).max() > 0.1
            assert sess.run(tf.train.get_global_step()) == 3
