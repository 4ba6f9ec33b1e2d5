"""Optimisation: the train op around the optimizers (pretrain.training.optimizers: AdamW,
LAMB): gradients, loss scaling, accumulation, clipping, the update (the learning-rate schedules
are pretrain.training.lr_schedules).

Reusable by any Estimator model_fn (pretraining and fine-tuning):

    train_op = create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps)

or `build_train_op(...)` for the extra tensors the logging hooks show.

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

import tensorflow.compat.v1 as tf

from pretrain.training import gradient_accumulation, lr_schedules
from pretrain.training.optimizers import make_optimizer


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
        optimizers; see pretrain.training.optimizers).
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
