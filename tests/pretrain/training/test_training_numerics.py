"""Training numerics checked with values: fp16 vs fp32, accumulation, AdamW/LAMB, schedule.

Each test names the bug it is built to catch. The optimizer reference
(`_reference_update`) is NumPy written from the algorithm's description (Adam
moments without bias correction, decoupled weight decay, LAMB trust ratio,
global-norm clipping); gradients for it come from TensorFlow's autodiff of the
same loss at the reference's own weights, in a separate graph that has no
optimizer, so the reference never reads the weights of the run it checks.
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models.bert import modeling
from pretrain.training import (lr_schedules, mixed_precision, optimization, pretraining_model_fn,
                               training_hooks)
from tests.testutil.float32_bounds import (ELEMENTWISE_ULPS, EPS16, assert_close, magnitude,
                            random_rounding_ulps, summation_ulps, tolerance)
from tests.testutil.pretrain_data import make_examples, moment_ulps, norm_ulps, weight_drift
from pretrain.training.model_spec import ModeKeys

EXCLUDED_FROM_DECAY = ("LayerNorm", "layer_norm", "bias")
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-6
# TensorFlow's fused Adam kernel (AdamW on resource variables) forms 1 - beta_2
# in float32 from float32(0.999), i.e. 0.00099998713 rather than 0.001.
FUSED_ONE_MINUS_BETA_2 = 1.0 - float(np.float32(BETA_2))
# Bias correction: TensorFlow raises the float32 constants to the power t, and
# 1 - float32(0.999) is 1.3e-5 (108 ulps) off 0.001.
BETA_1_POWER_BASE, BETA_2_POWER_BASE = float(np.float32(BETA_1)), float(np.float32(BETA_2))


# --------------------------------------------------------------------------- references
def _reference_update(params, slots, grads, lr, kind, weight_decay, clip_norm,
                      one_minus_beta_2=1.0 - BETA_2, update_count=None):
    """One AdamW / LAMB update in float64; returns (params, slots, pre-clip global norm).

    params / grads: {name: array}; slots: {name: (m, v)} (zeros before the first update).
    update_count: t (1-based) for Adam's bias correction, None for none: m_hat / (sqrt(v_hat)
    + epsilon) for both optimizers, as transformers' AdamW (and not TensorFlow's Adam, whose
    epsilon acts as epsilon / sqrt(1 - beta_2^t)).
    """
    norm = float(np.sqrt(sum(np.sum(np.square(g, dtype=np.float64)) for g in grads.values())))
    clip_factor = clip_norm / max(norm, clip_norm)
    new_params, new_slots = {}, {}
    for name, w in params.items():
        w = w.astype(np.float64)
        g = grads[name].astype(np.float64) * clip_factor
        m, v = slots[name]
        m = BETA_1 * m + (1.0 - BETA_1) * g
        v = (1.0 - one_minus_beta_2) * v + one_minus_beta_2 * g * g
        if update_count is None:
            step = m / (np.sqrt(v) + EPSILON)
        else:
            correction_1 = 1.0 - BETA_1_POWER_BASE ** update_count
            correction_2 = 1.0 - BETA_2_POWER_BASE ** update_count
            step = (m / correction_1) / (np.sqrt(v / correction_2) + EPSILON)
        excluded = any(pattern in name for pattern in EXCLUDED_FROM_DECAY)
        if not excluded:
            step = step + weight_decay * w
        trust_ratio = 1.0
        if kind == "lamb" and not excluded:
            w_norm, step_norm = np.linalg.norm(w), np.linalg.norm(step)
            trust_ratio = w_norm / step_norm if w_norm > 0 and step_norm > 0 else 1.0
        new_params[name] = w - lr * trust_ratio * step
        new_slots[name] = (m, v)
    return new_params, new_slots, norm


def _zero_slots(params):
    return {name: (np.zeros_like(w, np.float64), np.zeros_like(w, np.float64))
            for name, w in params.items()}


# --------------------------------------------------------------------------- a tiny problem
def _initial_params():
    """Four variables covering the update rules; `head/kernel` starts with norm 0."""
    rng = np.random.RandomState(7)
    return {"dense/kernel": rng.randn(3, 4).astype(np.float32) * 0.8,
            "dense/bias": rng.randn(4).astype(np.float32) * 0.3,
            "LayerNorm/gamma": (1.0 + 0.2 * rng.randn(4)).astype(np.float32),
            "head/kernel": np.zeros([4, 2], np.float32)}


def _batches(count, size, seed):
    """`count` batches (x [size, 3], y [size, 2]), different data every update."""
    rng = np.random.RandomState(seed)
    return [(rng.randn(size, 3).astype(np.float32), rng.randn(size, 2).astype(np.float32))
            for _ in range(count)]


def _loss(params, x, y):
    """Mean over the batch: squared error of a 1-hidden-layer net + a pull on the hidden units.

    The second term gives `dense/*` a gradient while `head/kernel` is still zero.
    """
    hidden = tf.tanh(tf.matmul(x, params["dense/kernel"]) + params["dense/bias"])
    hidden = hidden * params["LayerNorm/gamma"]  # [B, 4]
    pred = tf.matmul(hidden, params["head/kernel"])  # [B, 2]
    return (tf.reduce_mean(tf.reduce_sum(tf.square(pred - y), 1))
            + tf.reduce_mean(tf.reduce_sum(tf.square(hidden - 0.3), 1)))


class _GradientOracle:
    """d loss / d params at given weights, for a whole batch (no optimizer in this graph)."""

    def __init__(self, init):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.params = {n: tf.placeholder(tf.float64, w.shape) for n, w in init.items()}
            self.x = tf.placeholder(tf.float64, [None, 3])
            self.y = tf.placeholder(tf.float64, [None, 2])
            names = sorted(self.params)
            grads = tf.gradients(_loss(self.params, self.x, self.y),
                                 [self.params[n] for n in names])
            self.grads = dict(zip(names, grads))
        self.sess = tf.Session(graph=self.graph)

    def __call__(self, params, x, y):
        feed = {self.params[n]: params[n] for n in self.params}
        feed.update({self.x: x, self.y: y})
        return self.sess.run(self.grads, feed)


def _reference_trajectory(kind, batches, lrs, weight_decay, clip_norm, skipped=(),
                          bias_correction=False):
    """Reference params/slots/norm after each update; updates in `skipped` change nothing."""
    init = _initial_params()
    oracle = _GradientOracle(init)
    params = {n: w.astype(np.float64) for n, w in init.items()}
    slots = _zero_slots(init)
    one_minus_beta_2 = FUSED_ONE_MINUS_BETA_2 if kind == "adamw" else 1.0 - BETA_2
    trajectory, applied = [], 0
    for update, ((x, y), lr) in enumerate(zip(batches, lrs)):
        if update in skipped:
            trajectory.append((params, slots, None))
            continue
        grads = oracle(params, x.astype(np.float64), y.astype(np.float64))
        # The count follows the global step, so a skipped update still advances it.
        params, slots, norm = _reference_update(params, slots, grads, lr, kind, weight_decay,
                                                clip_norm, one_minus_beta_2,
                                                update + 1 if bias_correction else None)
        applied += 1
        trajectory.append((params, slots, norm))
    oracle.sess.close()
    return trajectory


class _TrainingRun:
    """The tiny problem trained with `optimization.build_train_op` in its own graph."""

    def __init__(self, kind, k, weight_decay, clip_norm, init_lr=0.05, num_train_steps=20,
                 num_warmup_steps=0, loss_scaler_scale=None, bias_correction=False):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.variables = {}
            for name, value in _initial_params().items():
                scope, short = name.split("/")
                with tf.variable_scope(scope):
                    self.variables[name] = tf.get_variable(short, initializer=value)
            self.x = tf.placeholder(tf.float32, [None, 3])
            self.y = tf.placeholder(tf.float32, [None, 2])
            self.loss_factor = tf.placeholder_with_default(1.0, [])  # NaN poisons a micro-batch
            loss = _loss(self.variables, self.x, self.y) * self.loss_factor
            scaler = None
            if loss_scaler_scale is not None:
                scaler = mixed_precision.DynamicLossScale(initial_scale=loss_scaler_scale,
                                                          growth_interval=1000)
            self.out = optimization.build_train_op(
                loss, init_lr, num_train_steps, num_warmup_steps, optimizer=kind,
                weight_decay_rate=weight_decay, clip_norm=clip_norm,
                gradient_accumulation_steps=k, loss_scaler=scaler,
                bias_correction=bias_correction)
            by_name = {v.op.name: v for v in tf.global_variables()}
            self.slots = {n: (by_name[n + "/adam_m"], by_name[n + "/adam_v"])
                          for n in self.variables}
            self.sess = tf.Session(graph=self.graph)
            self.sess.run(tf.global_variables_initializer())

    def step(self, x, y, loss_factor=1.0):
        """One micro-batch; returns its learning rate, grad_norm and update_applied.

        The learning rate is read in a run of its own: fetched with the train
        op, nothing orders its read of the global step before the increment
        when the update is skipped.
        """
        fetched = {"lr": self.sess.run(self.out.learning_rate)}
        fetched.update(self.sess.run(
            {"train_op": self.out.train_op, "grad_norm": self.out.grad_norm,
             "applied": self.out.update_applied},
            {self.x: x, self.y: y, self.loss_factor: loss_factor}))
        return fetched

    def state(self):
        return self.sess.run({"params": self.variables, "slots": self.slots,
                              "global_step": tf.train.get_global_step(self.graph),
                              "loss_scale": self.out.loss_scale})


# The float32 run against the float64 reference (float32_bounds case 2, the reference exact):
# each gradient passes x @ kernel (3 terms), hidden @ head (4), back through head (2) and the
# sum over the batch of 8 (one mean, or k micro-batch means in another order), a tanh and
# six elementwise products.
GRADIENT_ULPS = summation_ulps(3, 4, 2, 8) + ELEMENTWISE_ULPS + 6
NUM_PARAMS = 3 * 4 + 4 + 4 + 4 * 2  # the global norm's width (clipping, grad_norm)
LAMB_WIDTH = 3 * 4  # the largest tensor LAMB takes a norm of


def _drift_bounds(kind, reference, lrs, bias_correction):
    """Per update (None when skipped): the bound weight_drift puts on every weight after it.

    Its scales come from the reference: the largest |w| and, for LAMB, the largest ||w|| of
    a trust-ratio tensor over the whole trajectory (its norm before each update)."""
    trajectory = [_initial_params()] + [params for params, _, _ in reference]
    weight_scale = max(magnitude(w) for params in trajectory for w in params.values())
    lamb_norm = 0.0
    if kind == "lamb":
        lamb_norm = max(np.linalg.norm(params[name]) for params in trajectory
                        for name in ("dense/kernel", "head/kernel"))
    applied, bounds = [], []
    for (_, _, norm), lr in zip(reference, lrs):
        if norm is None:  # a skipped update moves nothing
            bounds.append(None)
            continue
        applied.append(lr)
        bounds.append(weight_drift(applied, GRADIENT_ULPS, weight_scale, clip_width=NUM_PARAMS,
                                   lamb_norm=lamb_norm, lamb_width=LAMB_WIDTH if lamb_norm else 0,
                                   weight_decay=WEIGHT_DECAY, bias_correction=bias_correction))
    return weight_scale, bounds


def _assert_state_matches(state, params, slots, drift, previous_drift, weight_scale, context):
    """Weights within `drift` (absolute); m and v within moment_ulps of the gradients computed
    at weights `previous_drift` apart."""
    m_ulps = moment_ulps(GRADIENT_ULPS, previous_drift, weight_scale, NUM_PARAMS)
    for name in params:
        assert_close(state["params"][name], params[name],
                     drift / tolerance(1, magnitude(params[name])), err_msg=f"{name} ({context})")
        assert_close(state["slots"][name][0], slots[name][0], m_ulps,
                     err_msg=f"{name}/adam_m ({context})")
        assert_close(state["slots"][name][1], slots[name][1], 2 * m_ulps,  # squares: twice
                     err_msg=f"{name}/adam_v ({context})")


def _assert_close_each(actual, expected, ulps, err_msg=""):
    """assert_close in ulps of each expected value (float32_bounds' report takes one scale):
    an expected 0 must come out exactly 0, the rest are compared divided by |expected|."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    zero = expected == 0
    np.testing.assert_array_equal(actual[zero], 0.0, err_msg=err_msg)
    scale = np.abs(expected[~zero])
    assert_close(actual[~zero] / scale, expected[~zero] / scale, ulps, scale=1.0,
                 err_msg=err_msg)


# A schedule value in float32: u / T or u / W, 1 - that, pow, x init_lr (itself rounded):
# four roundings and pow's elementwise bound, in ulps of the value. A value the table gives
# as 0 is 0 * x or pow(0, p): exactly 0.
SCHEDULE_ULPS = ELEMENTWISE_ULPS + 4


WEIGHT_DECAY = 0.3  # large, so that a decay applied to / withheld from a variable shows
CLIP_NORM = 1.2  # some of the updates below are clipped and some are not (asserted)
# _TrainingRun's schedule (init_lr 0.05, 20 updates, no warmup) at update u is
# 0.05 * (1 - u / 20), whatever the number of micro-batches per update.
LR_PER_UPDATE = [0.05, 0.0475, 0.045, 0.0425, 0.04, 0.0375]


def _train_against_reference(kind, k, micro_batch, updates=6, poisoned=None,
                             bias_correction=False):
    """Trains k micro-batches per update; asserts every update against the reference.

    poisoned: (update, micro_batch_index) whose loss is multiplied by NaN; that
    update must be skipped as a whole. Returns the reference's pre-clip norms
    (None for a skipped update) and the run's final loss scale.
    """
    batches = _batches(updates, k * micro_batch, seed=11)
    run = _TrainingRun(kind, k, WEIGHT_DECAY, CLIP_NORM,
                       loss_scaler_scale=2.0 ** 10 if poisoned else None,
                       bias_correction=bias_correction)
    lrs, norms, applied, states = [], [], [], []
    for update, (x, y) in enumerate(batches):
        before = run.state()
        for i in range(k):
            part = slice(i * micro_batch, (i + 1) * micro_batch)
            fetched = run.step(x[part], y[part], np.nan if poisoned == (update, i) else 1.0)
            applied.append(bool(fetched["applied"]))
            if i < k - 1:  # non-final micro-batches never touch weights or moments
                mid = run.state()
                for name in before["params"]:
                    # nothing writes them until the cycle's last micro-batch: bit-identical
                    np.testing.assert_array_equal(mid["params"][name], before["params"][name])
                    np.testing.assert_array_equal(mid["slots"][name][0],
                                                  before["slots"][name][0])
        lrs.append(float(fetched["lr"]))
        norms.append(float(fetched["grad_norm"]))
        states.append(run.state())
    run.sess.close()

    _assert_close_each(lrs, LR_PER_UPDATE[:updates], SCHEDULE_ULPS, err_msg="learning rate")
    skipped = {poisoned[0]} if poisoned else set()
    reference = _reference_trajectory(kind, batches, lrs, WEIGHT_DECAY, CLIP_NORM, skipped,
                                      bias_correction)
    weight_scale, drifts = _drift_bounds(kind, reference, lrs, bias_correction)
    previous = 0.0  # the drift of the weights this update's gradients were taken at
    for update, (state, (params, slots, norm)) in enumerate(zip(states, reference)):
        drift = previous if drifts[update] is None else drifts[update]
        context = f"{kind}, k={k}, update {update}"
        _assert_state_matches(state, params, slots, drift, previous, weight_scale, context)
        if norm is not None:
            # the gradients' bound, the norm's own sum of squares, and the weights' drift so far
            assert_close(norms[update], norm, GRADIENT_ULPS + norm_ulps(NUM_PARAMS)
                         + previous / tolerance(1, weight_scale), err_msg=f"grad_norm, {context}")
        previous = drift
    expected_applied = [i == k - 1 for _ in range(updates) for i in range(k)]
    if poisoned:
        expected_applied[poisoned[0] * k + k - 1] = False
    assert applied == expected_applied
    assert states[-1]["global_step"] == updates * k  # the global step counts micro-batches
    return [r[2] for r in reference], [float(s["loss_scale"]) for s in states]


# --------------------------------------------------------------------------- optimizer updates
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_adamw_and_lamb_match_numpy_reference_over_six_updates(kind):
    """Weights, both moments and grad_norm after each of 6 updates, from one batch per update.

    Covers momentum across steps (catches LAMB's beta_1 changed in its unfused
    update), the zero-norm `head/kernel` (trust ratio 1, not 0), the names
    excluded from decay and from the trust ratio (`bias`, `LayerNorm`), and
    clipping both active and inactive.
    """
    assert not np.any(_initial_params()["head/kernel"])  # the zero-norm case is exercised
    norms, _ = _train_against_reference(kind, k=1, micro_batch=8)
    assert max(norms) > CLIP_NORM > min(norms)


@pytest.mark.parametrize("kind,k", [("adamw", 1), ("lamb", 1), ("adamw", 2)])
def test_bias_corrected_moments_match_numpy_reference(kind, k):
    """--adam_bias_correction: m / (1 - b1^t) over sqrt(v / (1 - b2^t)), t counting updates
    (not micro-batches). Catches a count off by one (t = 0 divides by zero; t + 1 leaves
    the first step too small), a count of micro-steps under accumulation, and the
    correction applied to the decay term."""
    _train_against_reference(kind, k=k, micro_batch=8 // k, bias_correction=True)
    if kind == "lamb":  # the trust ratio rescales every step: no simple ratio to check
        return
    plain = _TrainingRun(kind, 1, 0.0, CLIP_NORM)
    corrected = _TrainingRun(kind, 1, 0.0, CLIP_NORM, bias_correction=True)
    (x, y), = _batches(1, 8, seed=11)
    start = plain.state()["params"]["dense/kernel"]
    steps = []
    for run in (plain, corrected):
        run.step(x, y)
        steps.append(np.abs(run.state()["params"]["dense/kernel"] - start).max())
        run.sess.close()
    # The first uncorrected step is 0.1 g / (sqrt(0.001 g^2) + eps), about 3.16 lr; the
    # corrected one g / (|g| + eps), as transformers' AdamW (epsilon added to sqrt(v_hat),
    # not to sqrt(v)). Both move the weight of the largest clipped gradient the most.
    oracle = _GradientOracle(_initial_params())
    grads = oracle({n: w.astype(np.float64) for n, w in _initial_params().items()},
                   x.astype(np.float64), y.astype(np.float64))
    oracle.sess.close()
    norm = np.sqrt(sum(np.sum(np.square(g)) for g in grads.values()))
    largest = np.abs(grads["dense/kernel"]).max() * CLIP_NORM / max(norm, CLIP_NORM)
    uncorrected = (1.0 - BETA_1_POWER_BASE) * largest / (
        np.sqrt(FUSED_ONE_MINUS_BETA_2) * largest + EPSILON)
    expected = uncorrected / (largest / (largest + EPSILON))
    # each step is read off float32 weights (1 ulp of |w| <= |start| + step, over the step),
    # plus lr_t's three roundings, epsilon's two and the kernel's three; the gradient's own
    # error (GRADIENT_ULPS) cancels to first order in a ratio of g / (c |g| + eps) terms
    ulps = sum((magnitude(start) + step) / step + 8 for step in steps)
    assert_close(steps[0] / steps[1], expected, ulps, err_msg="uncorrected / corrected step")


# --------------------------------------------------------------------------- accumulation
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_four_micro_batches_of_two_equal_one_batch_of_eight(kind):
    """k=4 micro-batches of 2 examples follow the same reference as batches of 8.

    The reference is fed the gradient of the 8-example mean loss. A sum over
    micro-batches instead of a mean shows as a 4x grad_norm and, since only
    some full-batch updates reach the clip norm, as different weights (for
    LAMB too, whose trust ratio alone would hide the constant factor).
    """
    norms, _ = _train_against_reference(kind, k=4, micro_batch=2)
    assert max(norms) > CLIP_NORM > min(norms)


@pytest.mark.parametrize("poisoned_micro_batch", [0, 1])
def test_non_finite_micro_batch_skips_the_whole_update(poisoned_micro_batch):
    """A NaN loss in micro-batch 0 or 1 of 3 skips that whole update, not just its part.

    Weights and moments stay as they were, the updates before and after follow
    the reference (accumulators restart clean), and the loss scale halves once.
    Catches replacing the cycle's "all micro-batches finite" flag by the last
    micro-batch's flag.
    """
    norms, loss_scales = _train_against_reference(
        "lamb", k=3, micro_batch=2, updates=5, poisoned=(2, poisoned_micro_batch))
    assert norms[2] is None and all(n is not None for n in norms[:2] + norms[3:])
    assert loss_scales == [2.0 ** 10] * 2 + [2.0 ** 9] * 3


# --------------------------------------------------------------------------- fp16
def _small_gradient_regression(compute_dtype, steps=5):
    """A 6-16-1 tanh net computed in `compute_dtype`; per-step grad_norm and final weights.

    The float32 loss is multiplied by 1e-6 so gradients (~1e-7..1e-6) sit below
    Adam's epsilon: the update is then proportional to the gradient, so a
    gradient still multiplied by the loss scale moves the weights many times
    further (with gradients above epsilon Adam would hide a constant factor).
    Such gradients are subnormal in float16, so without the loss scale they lose
    most of their digits, which shows too.
    """
    rng = np.random.RandomState(5)
    init = {"hidden/kernel": rng.randn(6, 16).astype(np.float32) * 0.5,
            "hidden/bias": rng.randn(16).astype(np.float32) * 0.1,
            "out/kernel": rng.randn(16, 1).astype(np.float32) * 0.5}
    data = [(rng.randn(8, 6).astype(np.float32), rng.randn(8, 1).astype(np.float32))
            for _ in range(steps)]
    with tf.Graph().as_default():
        variables = {}
        for name, value in init.items():
            scope, short = name.split("/")
            with tf.variable_scope(scope):
                variables[name] = tf.get_variable(short, initializer=value)
        x = tf.placeholder(tf.float32, [None, 6])
        y = tf.placeholder(tf.float32, [None, 1])
        w = {n: tf.cast(v, compute_dtype) for n, v in variables.items()}
        hidden = tf.tanh(tf.matmul(tf.cast(x, compute_dtype), w["hidden/kernel"])
                         + w["hidden/bias"])  # [B, 16]
        pred = tf.matmul(hidden, w["out/kernel"])  # [B, 1]
        mse = tf.reduce_mean(tf.square(pred - tf.cast(y, compute_dtype)))
        loss = tf.cast(mse, tf.float32) * 1e-6
        scaler = None
        if compute_dtype == tf.float16:
            scaler = mixed_precision.DynamicLossScale()  # 2^15, the default
        out = optimization.build_train_op(loss, 1e-2, 100, 0, optimizer="adamw",
                                          loss_scaler=scaler)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            norms, finite = [], []
            for bx, by in data:
                got = sess.run([out.grad_norm, out.grads_finite, out.train_op], {x: bx, y: by})
                norms.append(float(got[0]))
                finite.append(bool(got[1]))
            assert all(finite)
            return init, np.array(norms), sess.run(variables), float(sess.run(out.loss_scale))


def test_fp16_with_loss_scale_matches_fp32_grad_norm_and_weights():
    """fp16 compute with a 2^15 loss scale: grad_norm and weight changes as in fp32.

    Catches gradients left multiplied by the loss scale (no unscale): grad_norm
    and the step sizes would be ~32768x too large. Kernel-path sensitive (float16 kernels
    differ between Eigen and oneDNN), to a float16 rounding bound.
    """
    init, norms32, weights32, _ = _small_gradient_regression(tf.float32)
    _, norms16, weights16, scale16 = _small_gradient_regression(tf.float16)
    assert scale16 == 2.0 ** 15  # no step overflowed
    assert 1e-7 < norms32.max() < 1e-4  # gradients in the regime described above
    # float32_bounds case 3, the float32 run exact at float16's scale: a gradient's longest
    # chain has 18 ops (forward: casts, 2 matmuls, bias, tanh, difference, square, mean; back
    # the same), two roundings to float16 each (TensorFlow's CPU float16 matmul was measured
    # within 3.1 u of sum|x| for 8..2048 terms: a few roundings, not one per term). Below
    # epsilon Adam's step is m / epsilon, linear in the gradients, so 5 steps add theirs, and
    # a grad_norm at step s carries the drift of the steps before it: 5 x 36 for all.
    ulps = random_rounding_ulps(5 * 36)
    for step, (got, want) in enumerate(zip(norms16, norms32)):
        assert_close(got, want, ulps, eps=EPS16, err_msg=f"grad_norm, step {step}")
    for name in init:
        delta32 = weights32[name] - init[name]
        delta16 = weights16[name] - init[name]
        assert np.abs(delta32).max() > 1e-3  # the weights really moved
        # in float16 ulps of the change itself: a run whose weights did not move is off by
        # the whole change, 1 / (ulps * EPS16) = 25 times the bound
        assert_close(delta16, delta32, ulps, eps=EPS16, err_msg=name)


def _tiny_bert_grad_norms(precision, steps=4, initial_values=None):
    """Pretraining model_fn (1 layer, hidden 16, no dropout): logged grad_norm per step.

    Returns (initial weights, [grad_norm], [loss_scale], [grads_finite]);
    `initial_values` replaces the random initialisation so two runs start alike.
    """
    config = modeling.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, max_position_embeddings=16, type_vocab_size=2,
        initializer_range=0.02)
    examples = make_examples(8 * steps, seed=3)
    batches = [{name: np.array([e[name] for e in examples[i * 8:(i + 1) * 8]],
                               np.float32 if name == "masked_lm_weights" else np.int32)
                for name in examples[0]} for i in range(steps)]
    with tf.Graph().as_default():
        features = {name: tf.placeholder(v.dtype, v.shape) for name, v in batches[0].items()}
        model_fn = pretraining_model_fn.model_fn_builder(
            config, learning_rate=1e-3, num_train_steps=100, precision=precision)
        spec = model_fn(features, None, ModeKeys.TRAIN, {})
        logged = training_hooks.registered_log_tensors()
        tvars = tf.trainable_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if initial_values is not None:
                sess.run([var.assign(initial_values[var.op.name]) for var in tvars])
            initial = dict(zip([v.op.name for v in tvars], sess.run(tvars)))
            rows = [sess.run([logged["grad_norm"], logged["loss_scale"], logged["grads_finite"],
                              spec.train_op], {features[n]: v for n, v in batch.items()})[:3]
                    for batch in batches]
    return initial, *[list(column) for column in zip(*rows)]


def test_fp16_bert_logs_the_fp32_grad_norm():
    """The model_fn's fp16 path (loss scale 2^15) logs the grad_norm an fp32 run logs.

    Same initial weights and batches; a gradient left multiplied by the loss
    scale would log a norm 32768x too large. Kernel-path sensitive (float16 kernels), to a
    float16 rounding bound.
    """
    initial, norms32, scales32, _ = _tiny_bert_grad_norms("fp32")
    _, norms16, scales16, finite16 = _tiny_bert_grad_norms("fp16", initial_values=initial)
    assert scales32 == [1.0] * 4 and scales16 == [2.0 ** 15] * 4 and all(finite16)
    # float32_bounds case 3: matmuls in float16, LayerNorm and softmax in float32; a
    # gradient's longest chain rounds to float16 about 42 times (the layer's six matmuls on
    # it, their inputs and results, the casts around softmax and LayerNorm, the GELU, the MLM
    # head; forward and back). Step s's norm is taken at weights the s - 1 steps before it
    # moved (Adam's sign-like steps carry their gradients' errors): 4 x 42 for all.
    ulps = random_rounding_ulps(4 * 42)
    for step, (got, want) in enumerate(zip(norms16, norms32)):
        assert_close(got, want, ulps, eps=EPS16, err_msg=f"grad_norm, step {step}")


# --------------------------------------------------------------------------- schedule
# Expected values worked out by hand from the documented rule, not computed:
#   u = global_step // steps_per_update (optimizer updates);
#   warmup (u < W): init_lr * u / W;
#   otherwise init_lr * (1 - min(u, T) / T) ** power, the decay counted from
#   update 0 as in google-research/bert, so the first value after warmup is
#   already below the peak.
WARMUP_THEN_LINEAR = [  # init_lr 1e-3, T=10, W=4, power 1, steps_per_update 3
    (0, 0.0),      # u 0: 1e-3 * 0/4
    (2, 0.0),      # u 0 (micro-batch 2 of update 0)
    (3, 2.5e-4),   # u 1: 1e-3 * 1/4
    (8, 5.0e-4),   # u 2: 1e-3 * 2/4
    (11, 7.5e-4),  # u 3: 1e-3 * 3/4
    (12, 6.0e-4),  # u 4: warmup over, 1e-3 * (1 - 4/10)
    (17, 5.0e-4),  # u 5: 1e-3 * (1 - 5/10)
    (27, 1.0e-4),  # u 9: 1e-3 * (1 - 9/10)
    (30, 0.0),     # u 10: 1e-3 * (1 - 10/10)
    (47, 0.0),     # u 15: past T, clamped to T (not negative)
]
QUADRATIC_NO_WARMUP = [  # init_lr 1e-3, T=10, W=0, power 2, steps_per_update 1
    (0, 1.0e-3),   # 1e-3 * 1^2
    (5, 2.5e-4),   # 1e-3 * 0.5^2
    (8, 4.0e-5),   # 1e-3 * 0.2^2
    (10, 0.0),
    (20, 0.0),
]
SQUARE_ROOT_NO_WARMUP = [  # init_lr 1e-3, T=25, W=0, power 0.5, steps_per_update 2
    (18, 8.0e-4),  # u 9: 1e-3 * (16/25) ** 0.5 = 1e-3 * 4/5
    (33, 6.0e-4),  # u 16: 1e-3 * (9/25) ** 0.5 = 1e-3 * 3/5
    (50, 0.0),     # u 25
]


@pytest.mark.parametrize("table,total,warmup,power,per_update", [
    (WARMUP_THEN_LINEAR, 10, 4, 1.0, 3),
    (QUADRATIC_NO_WARMUP, 10, 0, 2.0, 1),
    (SQUARE_ROOT_NO_WARMUP, 25, 0, 0.5, 2),
], ids=["warmup_linear_k3", "quadratic", "square_root_k2"])
def test_learning_rate_schedule_hand_derived_values(table, total, warmup, power, per_update):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        lr = lr_schedules.learning_rate(1e-3, step, total, warmup, poly_power=power,
                                        steps_per_update=per_update)
        with tf.Session() as sess:
            got = [float(sess.run(lr, {step: s})) for s, _ in table]
    _assert_close_each(got, [value for _, value in table], SCHEDULE_ULPS)


def test_train_op_schedule_counts_optimizer_updates():
    """With 3 micro-batches per update, build_train_op's learning rate moves every 3 steps."""
    expected = [0.0] * 3 + [2.5e-4] * 3 + [5.0e-4] * 3 + [7.5e-4] * 3 + [6.0e-4]  # table above
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=np.array([1.0, -1.0], np.float32))
        out = optimization.build_train_op(tf.reduce_sum(tf.square(w)), 1e-3, 10, 4,
                                          gradient_accumulation_steps=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = []
            for _ in expected:
                got.append(float(sess.run(out.learning_rate)))
                sess.run(out.train_op)
    _assert_close_each(got, expected, SCHEDULE_ULPS)
