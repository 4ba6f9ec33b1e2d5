"""Optimisation: AdamW / LAMB, clipping and the train op (the learning-rate schedules are
pretrain.training.lr_schedules).

Reusable by any Estimator model_fn (pretraining and fine-tuning):

    train_op = create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps)

or `build_train_op(...)` for the extra tensors the logging hooks show.

Why not google-research/bert's `AdamWeightDecayOptimizer`: it overrides
`apply_gradients` and assigns to the variables itself, in replica context,
which MirroredStrategy refuses ("You must specify an aggregation method to
update a MirroredVariable in Replica Context"). The optimizers below only
implement the per-variable update.

Communication under a tf.distribute strategy (`mirrored`, `multi_worker`):
one all-reduce (MEAN) per optimizer update, of the gradients and the logging
scalars together, and none on the other micro-steps of gradient
accumulation. `build_train_op` enters cross-replica context once per step
(`merge_call`); on the update micro-step it reduces, then every device clips
its (identical) copy of the reduced gradients and updates its own copy of
each variable through `strategy.extended.update`. The base Optimizer's
`apply_gradients` is not used there: its `_distributed_apply` would
all-reduce (SUM) the gradients a second time.

Clipping uses the global norm of the reduced (global-batch mean) gradient,
identical to a single device with the same global batch.
"""
import collections
import re

import tensorflow.compat.v1 as tf

from pretrain.checkpoints.checkpoint_compat import SLOT_NAMES
from pretrain.training import gradient_accumulation, lr_schedules

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
# The tools' default is on (transformers' AdamW); build_train_op / create_optimizer keep
# google-research/bert's optimizer (off) for code that calls them directly, e.g. the benchmarks
# that run beside Google's own.
BIAS_CORRECTION_HELP = ("Adam's bias correction of the moments, as transformers' AdamW (default "
                        "on). --noadam_bias_correction: Google's optimizers, whose first few "
                        "hundred steps are then 2-3x the learning rate, fading over a few "
                        "thousand (bench/finetune_parity.py, docs/experiments.md, 'Fine-tuning "
                        "parity with transformers').")


class _DecoupledWeightDecayOptimizer(tf.train.Optimizer):
    """Adam moments + decoupled weight decay; subclasses choose the step scale.

    No bias correction of the moments by default (as google-research/bert and
    ALBERT): early on, sqrt(v) is then too small by sqrt(1 - beta_2^t), so the
    first step is 3.16x the learning rate, steps stay 2-3x it for a few hundred
    updates and fade to 1x over a few thousand, which short warmups do not absorb. `set_update_count(t)`
    turns Adam's bias correction on (t = this update's 1-based count, a tensor):
    m / (1 - beta_1^t) over sqrt(v / (1 - beta_2^t)) + epsilon, as transformers'
    AdamW and the LAMB paper do.
    `build_train_op` calls `create_slots` and `masked_update` directly; the
    inherited `apply_gradients` also works (single device, or a strategy at
    the cost of its own gradient all-reduce), honouring `set_update_mask`.
    """

    def __init__(self, learning_rate, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                 name="AdamWeightDecay"):
        super().__init__(use_locking=False, name=name)
        self.learning_rate = learning_rate
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self._update_mask = None
        self._beta_powers_t = None

    def set_update_count(self, count):
        """Bias-correct the moments at update `count` (float32 scalar tensor, 1 = first).

        beta_1^t and beta_2^t are formed here, once per step, not per variable.
        """
        count = tf.cast(count, tf.float32)
        self._beta_powers_t = (tf.pow(self.beta_1, count, name="beta_1_power"),
                               tf.pow(self.beta_2, count, name="beta_2_power"))

    def set_update_mask(self, mask):
        """For `apply_gradients`: boolean scalar tensor; False leaves variables and slots untouched."""
        self._update_mask = mask

    def _create_slots(self, var_list):
        # Named as Google's BERT/ALBERT optimizers name them (`<var>/adam_m`,
        # `<var>/adam_v`), so their tools and transformers' TF loader, which
        # skip these names, read our checkpoints unchanged.
        for var in var_list:
            self._zeros_slot(var, "m", SLOT_NAMES["m"])
            self._zeros_slot(var, "v", SLOT_NAMES["v"])

    def _prepare(self):
        self._lr_t = tf.convert_to_tensor(self.learning_rate, name="learning_rate")

    @staticmethod
    def variable_name(var):
        """Variable name without ':0' and without a '/replica_N' suffix."""
        name = var.op.name if hasattr(var, "op") and var.op is not None else var.name
        name = re.sub(r":\d+$", "", name)
        return re.sub(r"/replica_\d+$", "", name)

    def _uses_weight_decay(self, name):
        if not self.weight_decay_rate:
            return False
        return not any(re.search(pattern, name) for pattern in self.exclude_from_weight_decay)

    def _step_scale(self, var, update, name):
        """Multiplier of `lr * update`; 1 for AdamW, the trust ratio for LAMB."""
        del var, update, name
        return 1.0

    def create_slots(self, var_list):
        """The moment slots of `var_list` (mirrored when the variables are)."""
        with tf.init_scope():
            self._create_slots(var_list)

    def masked_update(self, var, grad, mask, learning_rate):
        """Op: one variable's update, skipped when the boolean scalar `mask` is False.

        `var` may be one device's copy of a mirrored variable (the signature
        suits `strategy.extended.update(var, masked_update, args=...)`).
        A cond rather than an elementwise select of old and new values: the
        skipped branch costs nothing, and a non-finite gradient never reaches
        the variable or its slots.
        """
        return tf.cond(mask, lambda: self._update_variable(grad, var, learning_rate), tf.no_op)

    def masked_updates(self, variables, grads, mask, learning_rate):
        """Op: every variable's update under one cond (one device's variables).

        The same updates as masked_update per variable, but one branch function for all
        of them instead of one per variable (each cond is a function graph of its own):
        a tiny run_pretraining built 0.4-0.8 s faster, and a step runs one conditional.
        """
        return tf.cond(mask, lambda: tf.group([
            self._update_variable(grad, var, learning_rate)
            for var, grad in zip(variables, grads)]), tf.no_op)

    def _apply_update(self, grad, var):
        if self._update_mask is None:
            return self._update_variable(grad, var, self._lr_t)
        return self.masked_update(var, grad, self._update_mask, self._lr_t)

    def _update_variable(self, grad, var, learning_rate):
        name = self.variable_name(var)
        m = self.get_slot(var, "m")
        v = self.get_slot(var, "v")
        dtype = var.dtype.base_dtype
        grad = tf.cast(grad, dtype)
        lr = tf.cast(learning_rate, dtype)
        if self._fused_update_possible(var):
            return self._fused_update(grad, var, m, v, lr, self._uses_weight_decay(name))
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        if self._beta_powers_t is None:
            update = next_m / (tf.sqrt(next_v) + self.epsilon)
        else:
            beta_1_power, beta_2_power = self._beta_powers(dtype)
            update = (next_m / (1.0 - beta_1_power)) / (
                tf.sqrt(next_v / (1.0 - beta_2_power)) + self.epsilon)
        if self._uses_weight_decay(name):
            update += self.weight_decay_rate * var
        next_var = var - lr * self._step_scale(var, update, name) * update
        return tf.group(var.assign(next_var), m.assign(next_m), v.assign(next_v))

    def _beta_powers(self, dtype):
        """(beta_1^t, beta_2^t) at this update; zeros (no correction) without a count."""
        if self._beta_powers_t is None:
            zero = tf.constant(0.0, dtype=dtype)
            return zero, zero
        return tuple(tf.cast(power, dtype) for power in self._beta_powers_t)

    def _fused_update_possible(self, var):
        """AdamW on a resource variable can use TensorFlow's fused Adam kernel."""
        del var
        return False

    def _fused_update(self, grad, var, m, v, lr, decay):
        """The update above in two kernels instead of about ten elementwise ops.

        ResourceApplyAdam computes m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2),
        var -= lr_t m / (sqrt(v) + eps_k) with lr_t = lr sqrt(1 - b2^t) / (1 - b1^t);
        passing b1^t = b2^t = 0 gives lr_t = lr, i.e. no bias correction, as
        above. With an update count the real powers give the correction; the kernel's
        epsilon is then eps_k = epsilon * sqrt(1 - b2^t), so that the step is
        m_hat / (sqrt(v_hat) + epsilon) exactly as above and as transformers' AdamW
        (TensorFlow's own Adam passes epsilon unchanged, which acts as epsilon /
        sqrt(1 - b2^t): 32x at the first update, 1.6x still after 300). The decoupled
        decay lr * wd * var uses the variable's value before the step, so it is
        subtracted first.
        """
        decayed = []
        if decay:
            decayed = [var.assign_sub(lr * self.weight_decay_rate * var.read_value(),
                                      read_value=False)]
        beta_1_power, beta_2_power = self._beta_powers(lr.dtype)
        with tf.control_dependencies(decayed):
            beta_1 = tf.constant(self.beta_1, lr.dtype)
            beta_2 = tf.constant(self.beta_2, lr.dtype)
            epsilon = tf.constant(self.epsilon, lr.dtype)
            if self._beta_powers_t is not None:
                epsilon = epsilon * tf.sqrt(1.0 - beta_2_power)
            return tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=m.handle, v=v.handle, beta1_power=beta_1_power,
                beta2_power=beta_2_power, lr=lr, beta1=beta_1, beta2=beta_2, epsilon=epsilon,
                grad=grad)

    def _apply_dense(self, grad, var):
        return self._apply_update(grad, var)

    def _resource_apply_dense(self, grad, handle):
        return self._apply_update(grad, handle)

    def _apply_sparse(self, grad, var):
        dense = tf.math.unsorted_segment_sum(grad.values, grad.indices, tf.shape(var)[0])
        return self._apply_update(dense, var)

    def _resource_apply_sparse(self, grad, handle, indices):
        dense = tf.math.unsorted_segment_sum(grad, indices, tf.shape(handle)[0])
        return self._apply_update(dense, handle)


class AdamWeightDecayOptimizer(_DecoupledWeightDecayOptimizer):
    """Adam with decoupled weight decay (BERT's default); fused kernel on resource variables."""

    def _fused_update_possible(self, var):
        return (hasattr(var, "handle") and var.dtype.base_dtype == tf.float32
                and var.handle.dtype == tf.resource)


class LambOptimizer(_DecoupledWeightDecayOptimizer):
    """LAMB: the AdamW update scaled per variable by ||w|| / ||update|| (ALBERT's default).

    Variables excluded from weight decay are also excluded from the layer
    adaptation (ratio 1), as in ALBERT; the ratio is 1 when either norm is 0.
    """

    def __init__(self, learning_rate, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
                 exclude_from_layer_adaptation=None, name="Lamb"):
        super().__init__(learning_rate, weight_decay_rate, beta_1, beta_2, epsilon,
                         exclude_from_weight_decay, name=name)
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self.exclude_from_weight_decay
        self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation)

    def _step_scale(self, var, update, name):
        if any(re.search(p, name) for p in self.exclude_from_layer_adaptation):
            return 1.0
        w_norm = tf.norm(var)
        u_norm = tf.norm(update)
        safe = tf.logical_and(w_norm > 0.0, u_norm > 0.0)
        return tf.where(safe, w_norm / tf.where(safe, u_norm, tf.ones_like(u_norm)),
                        tf.ones_like(w_norm))


OPTIMIZERS = {"adamw": AdamWeightDecayOptimizer, "lamb": LambOptimizer}


def make_optimizer(name, learning_rate, weight_decay_rate=0.01, **kwargs):
    """`adamw` or `lamb` by name; an unknown name is refused with the choices."""
    key = str(name).lower()
    if key not in OPTIMIZERS:
        raise ValueError(f"--optimizer={name!r} is not supported; choose one of "
                         f"{sorted(OPTIMIZERS)}")
    return OPTIMIZERS[key](learning_rate, weight_decay_rate=weight_decay_rate, **kwargs)


def _dense_gradients(grads, tvars):
    """IndexedSlices (embedding gathers) -> dense; None -> zeros of the variable's shape."""
    out = []
    for grad, var in zip(grads, tvars):
        if grad is None:
            grad = tf.zeros(var.shape, dtype=var.dtype.base_dtype)
        elif isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        out.append(grad)
    return out



def cross_replica_mean(values, use_tpu=False):
    """Mean of each tensor over all replicas, from replica context (no-op on one device).

    On TPU (TPUEstimator shards, no strategy) a `cross_replica_sum` per tensor;
    under a tf.distribute strategy one batched all-reduce.
    """
    if use_tpu:
        from tensorflow.python.tpu import tpu_function  # pylint: disable=import-outside-toplevel
        shards = tpu_function.get_tpu_context().number_of_shards or 1
        return [tf.tpu.cross_replica_sum(v) / float(shards) for v in values]
    if not tf.distribute.has_strategy():
        return list(values)
    ctx = tf.distribute.get_replica_context()
    return list(ctx.all_reduce(tf.distribute.ReduceOp.MEAN, list(values)))


TrainOpOutputs = collections.namedtuple(
    "TrainOpOutputs",
    ["train_op", "learning_rate", "grad_norm", "grads_finite", "update_applied", "loss_scale",
     "logged"])


class _CycleUpdate:
    """The end of one micro-step: mean, norm, finite check, clipping, update, loss scale.

    Shared by the single-device path and the cross-replica one; `finish`
    works on one device's values. Gradients and scalars arrive as sums over
    the micro-batches of the cycle so far (k = 1: this micro-batch).
    """

    def __init__(self, opt, tvars, clip_norm, loss_scaler):
        self.opt = opt
        self.tvars = tvars
        self.clip_norm = clip_norm
        self.loss_scaler = loss_scaler

    def finish(self, grad_sums, scalar_sums, count, clip=True):
        """(clipped mean gradients or None, finite, pre-clip norm, mean scalars) of one device.

        A non-finite norm (some element inf/NaN, or the sum of squares above
        float32's range) makes the clipped values NaN; the update mask then
        skips them.
        """
        count = tf.cast(count, tf.float32)
        means = [g / count for g in grad_sums]
        norm = tf.linalg.global_norm(means)
        clipped = None
        if clip:
            clipped, _ = tf.clip_by_global_norm(means, self.clip_norm, use_norm=norm)
        return clipped, tf.math.is_finite(norm), norm, scalar_sums / count

    def scale_update(self, finite):
        return [self.loss_scaler.update(finite)] if self.loss_scaler is not None else []


def _single_device_step(update, grads, scalars, is_update, count_so_far, k, learning_rate):
    """No strategy (one device, or TPU shards after their cross_replica_sum).

    Returns {grad_norm, grads_finite, update_applied, scalars}.
    """
    update.opt.create_slots(update.tvars)

    def apply_branch():
        clipped, finite, norm, means = update.finish(grads, scalars, k)
        ops = [update.opt.masked_updates(update.tvars, clipped, finite, learning_rate)]
        ops += update.scale_update(finite)
        with tf.control_dependencies(ops):
            return _step_outputs(norm, finite, finite, means)

    def skip_branch():
        _, finite, norm, means = update.finish(grads, scalars, count_so_far, clip=False)
        return _step_outputs(norm, finite, tf.constant(False), means)

    if k == 1:
        return apply_branch()
    return tf.cond(is_update, apply_branch, skip_branch)


def _step_outputs(norm, finite, applied, scalars):
    return {"grad_norm": tf.identity(norm), "grads_finite": tf.identity(finite),
            "update_applied": tf.identity(applied), "scalars": tf.identity(scalars)}


def _cross_replica_step(strategy, update, k, global_step, grads, scalars, is_update,
                        count_so_far, learning_rate):
    """merge_call body: one all-reduce on the update micro-step, then per-device updates.

    grads / scalars / learning_rate are per-replica (replica-local sums); the
    cond's predicate depends only on the global step, so every replica and
    worker takes the same branch and the collective runs everywhere or nowhere.
    Returns the global-step increment op and the step outputs (device 0's).
    """
    from tensorflow.python.distribute import values as ds_values  # pylint: disable=import-outside-toplevel
    extended = strategy.extended
    local = strategy.experimental_local_results
    tvars = update.tvars
    update.opt.create_slots(tvars)

    def apply_branch():
        # The logged scalars ride in the gradients' collective (one launch).
        with_scalars = local(scalars)[0].shape.num_elements() != 0
        pairs = [(g, v) for g, v in zip(grads, tvars)] + ([(scalars, tvars[0])] if with_scalars
                                                          else [])
        reduced = [local(r) for r in extended.batch_reduce_to(tf.distribute.ReduceOp.MEAN, pairs)]
        reduced_scalars = reduced.pop() if with_scalars else local(scalars)
        devices = [copy.device for copy in local(tvars[0])]
        per_device = []
        for i, device in enumerate(devices):
            with tf.device(device):  # each device clips its own copy of the reduced values
                per_device.append(update.finish([r[i] for r in reduced], reduced_scalars[i], k))
        finite = ds_values.Mirrored(tuple(d[1] for d in per_device))
        ops = []
        for j, var in enumerate(tvars):
            clipped = ds_values.Mirrored(tuple(d[0][j] for d in per_device))
            ops.append(extended.update(var, update.opt.masked_update,
                                       args=(clipped, finite, learning_rate), group=True))
        _, finite0, norm0, means0 = per_device[0]
        ops += update.scale_update(finite0)
        with tf.control_dependencies(ops):
            return _step_outputs(norm0, finite0, finite0, means0)

    def skip_branch():  # no communication: replica 0's running values, for the logs
        with tf.device(local(tvars[0])[0].device):
            _, finite, norm, means = update.finish(
                [local(g)[0] for g in grads], local(scalars)[0], local(count_so_far)[0],
                clip=False)
            return _step_outputs(norm, finite, tf.constant(False), means)

    if k == 1:
        outputs = apply_branch()
    else:
        outputs = tf.cond(local(is_update)[0], apply_branch, skip_branch)
    # Every replica's accumulation (and its reads of the global step) must run
    # before the increment, also when the skip branch reads replica 0 only.
    # The learning rate fetched with the train op is this step's (read before the increment).
    replica_work = [t for value in list(grads) + [scalars, learning_rate] for t in local(value)]
    with tf.control_dependencies(list(outputs.values()) + replica_work):
        step_op = extended.update(global_step, lambda step: step.assign_add(1), group=True)
    return step_op, outputs


def build_train_op(loss, init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                   poly_power=1.0, weight_decay_rate=0.01, clip_norm=1.0,
                   gradient_accumulation_steps=1, loss_scaler=None, use_tpu=False, tvars=None,
                   log_scalars=None, bias_correction=False,
                   lr_scheduler=lr_schedules.Scheduler()):
    """Gradients, loss (un)scaling, accumulation, one cross-replica mean, clipping, update.

    Args:
      loss: float32 scalar, the mean loss of this replica's batch.
      num_train_steps / num_warmup_steps: counted in optimizer updates.
      gradient_accumulation_steps: k; the global step counts micro-batches and
        every k-th one applies the mean gradient of the last k. A non-finite
        micro-batch anywhere in the cycle skips the whole update (and, with
        fp16, halves the loss scale once; the scale changes only on update
        micro-steps, so its growth_interval counts updates).
      loss_scaler: a `mixed_precision.DynamicLossScale` for fp16, else None.
      log_scalars: optional {name: scalar} (e.g. losses) averaged over replicas
        in the gradients' all-reduce; with k > 1 over the cycle's micro-batches.
      bias_correction: Adam's bias correction of the moments (off: Google's
        optimizers; see _DecoupledWeightDecayOptimizer).
      lr_scheduler: the schedule's type and its parameters (lr_schedules.Scheduler;
        default google-research/bert's polynomial decay of `poly_power`).
    Returns:
      TrainOpOutputs: train_op and scalar tensors for logging; `logged` maps
      each log_scalars name to its mean. On the non-update micro-steps of a
      cycle (k > 1), grad_norm, grads_finite and `logged` describe the cycle
      so far on replica 0 only (nothing is communicated then).
    """
    k = int(gradient_accumulation_steps)
    if k < 1:
        raise ValueError(f"--gradient_accumulation_steps must be >= 1, got {k}")
    global_step = tf.train.get_or_create_global_step()
    learning_rate = lr_schedules.learning_rate(init_lr, global_step, num_train_steps,
                                               num_warmup_steps, poly_power, steps_per_update=k,
                                               scheduler=lr_scheduler)
    opt = make_optimizer(optimizer, learning_rate, weight_decay_rate)
    if bias_correction:
        opt.set_update_count(tf.cast(global_step // k, tf.float32) + 1.0)
    if tvars is None:
        tvars = tf.trainable_variables()
    objective = loss_scaler.scale(loss) if loss_scaler is not None else loss
    grads = _dense_gradients(tf.gradients(objective, tvars), tvars)
    if loss_scaler is not None:  # per replica: the mean over replicas commutes with it
        grads = loss_scaler.unscale(grads)
    grads = [tf.cast(g, tf.float32) for g in grads]
    names = list(log_scalars or {})
    scalars = tf.stack([tf.cast(log_scalars[n], tf.float32) for n in names]) if names \
        else tf.zeros([0], tf.float32)
    distributed = tf.distribute.has_strategy() and not use_tpu
    if use_tpu:  # TPU shards: reduce every micro-step, then as on one device
        reduced = cross_replica_mean(grads + [scalars], use_tpu=True)
        grads, scalars = reduced[:-1], reduced[-1]

    first, is_update, micro = gradient_accumulation.cycle_position(global_step, k)
    if k > 1:
        grads = gradient_accumulation.accumulate(grads, tvars, first)
        if names:
            scalars = gradient_accumulation.accumulate_scalars(scalars, first)
    update = _CycleUpdate(opt, tvars, clip_norm, loss_scaler)
    count_so_far = micro + 1
    if distributed:
        # Plain graph code: autograph (which merge_call would apply) only slows it down.
        merge_fn = tf.autograph.experimental.do_not_convert(
            lambda strategy, *args: _cross_replica_step(strategy, update, k, global_step, *args))
        step_op, outputs = tf.distribute.get_replica_context().merge_call(
            merge_fn, args=(grads, scalars, is_update, count_so_far, learning_rate))
    else:
        outputs = _single_device_step(update, grads, scalars, is_update, count_so_far, k,
                                      learning_rate)
        # The learning rate fetched with the train op is this step's (read before the increment).
        with tf.control_dependencies(list(outputs.values()) + [learning_rate]), \
                tf.colocate_with(global_step):
            step_op = global_step.assign_add(1)
    train_op = tf.group(step_op, name="train_op")
    loss_scale = loss_scaler.current_scale() if loss_scaler is not None else tf.constant(1.0)
    logged = {name: outputs["scalars"][i] for i, name in enumerate(names)}
    return TrainOpOutputs(train_op, learning_rate, outputs["grad_norm"], outputs["grads_finite"],
                          outputs["update_applied"], loss_scale, logged)


def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                     poly_power=1.0, **kwargs):
    """The train op only (google-research/bert's `create_optimizer` signature + options)."""
    return build_train_op(loss, init_lr, num_train_steps, num_warmup_steps,
                          optimizer=optimizer, poly_power=poly_power, **kwargs).train_op
