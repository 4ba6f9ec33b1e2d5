"""Optimisation: learning-rate schedule, AdamW / LAMB, clipping and the train op.

Reusable by any Estimator model_fn (pretraining and fine-tuning):

    train_op = create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps)

or `build_train_op(...)` for the extra tensors the logging hooks show.

Why not google-research/bert's `AdamWeightDecayOptimizer`: it overrides
`apply_gradients` and assigns to the variables itself, in replica context.
Under `MirroredStrategy` every variable is a `MirroredVariable` and an assign
in replica context needs an aggregation method, hence the error "You must
specify an aggregation method to update a MirroredVariable in Replica
Context". The optimizers below only implement the per-variable update
(`_create_slots` / `_apply_dense` / `_resource_apply_dense`) and let
`tf.compat.v1.train.Optimizer.apply_gradients` do the distributed part: it
enters cross-replica context with `merge_call`, creates mirrored slots,
reduces the gradients (SUM) and runs the update on every device.

Gradients are reduced *before* clipping (explicit all-reduce of the mean), so
the global norm is the norm of the global-batch gradient, identical to a single
device with the same global batch.
"""
import collections
import re

import tensorflow.compat.v1 as tf

from pretrain import gradient_accumulation

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
# Checkpoint names of the moment slots, `<variable>/<name>`, as Google writes them.
SLOT_NAMES = {"m": "adam_m", "v": "adam_v"}


def learning_rate_schedule(init_lr, global_step, num_train_steps, num_warmup_steps,
                           poly_power=1.0, steps_per_update=1):
    """Linear warmup to `init_lr`, then polynomial decay to 0 at `num_train_steps`.

    The schedule counts optimizer updates: `global_step // steps_per_update`
    (with gradient accumulation the global step counts micro-batches). As in
    google-research/bert the decay is measured from step 0 and the warmup
    value `init_lr * step / num_warmup_steps` replaces it while
    `step < num_warmup_steps`. Returns a float32 scalar.
    """
    update_step = tf.cast(global_step // steps_per_update, tf.float32)
    total = float(max(int(num_train_steps), 1))
    progress = tf.minimum(update_step, total) / total
    decayed = init_lr * tf.pow(1.0 - progress, float(poly_power))
    if num_warmup_steps and num_warmup_steps > 0:
        warmup = init_lr * update_step / float(num_warmup_steps)
        return tf.where(update_step < float(num_warmup_steps), warmup, decayed,
                        name="learning_rate")
    return tf.identity(decayed, name="learning_rate")


class _DecoupledWeightDecayOptimizer(tf.train.Optimizer):
    """Adam moments + decoupled weight decay; subclasses choose the step scale.

    No bias correction of the moments (as google-research/bert and ALBERT).
    `set_update_mask(mask)` takes a boolean scalar tensor: when False the
    variables and slots keep their values (used to skip non-finite steps and
    the non-final micro-batches of gradient accumulation). The mask is a
    tf.cond inside each variable's update, never around `apply_gradients`,
    whose cross-replica merge call does not mix with tf.cond.
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

    def set_update_mask(self, mask):
        """Boolean scalar tensor; False leaves variables and slots untouched."""
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

    def _apply_update(self, grad, var):
        if self._update_mask is None:
            return self._update_variable(grad, var)
        # A cond rather than an elementwise select of old and new values: the
        # skipped branch costs nothing, and a non-finite gradient never reaches
        # the variable or its slots.
        return tf.cond(self._update_mask, lambda: self._update_variable(grad, var), tf.no_op)

    def _update_variable(self, grad, var):
        name = self.variable_name(var)
        m = self.get_slot(var, "m")
        v = self.get_slot(var, "v")
        dtype = var.dtype.base_dtype
        grad = tf.cast(grad, dtype)
        lr = tf.cast(self._lr_t, dtype)
        if self._fused_update_possible(var):
            return self._fused_update(grad, var, m, v, lr, self._uses_weight_decay(name))
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self._uses_weight_decay(name):
            update += self.weight_decay_rate * var
        next_var = var - lr * self._step_scale(var, update, name) * update
        return tf.group(var.assign(next_var), m.assign(next_m), v.assign(next_v))

    def _fused_update_possible(self, var):
        """AdamW on a resource variable can use TensorFlow's fused Adam kernel."""
        del var
        return False

    def _fused_update(self, grad, var, m, v, lr, decay):
        """The update above in two kernels instead of about ten elementwise ops.

        ResourceApplyAdam computes m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2),
        var -= lr_t m / (sqrt(v) + eps) with lr_t = lr sqrt(1 - b2^t) / (1 - b1^t);
        passing b1^t = b2^t = 0 gives lr_t = lr, i.e. no bias correction, as
        above. The decoupled decay lr * wd * var uses the variable's value
        before the step, so it is subtracted first.
        """
        decayed = []
        if decay:
            decayed = [var.assign_sub(lr * self.weight_decay_rate * var.read_value(),
                                      read_value=False)]
        zero = tf.constant(0.0, dtype=lr.dtype)
        with tf.control_dependencies(decayed):
            return tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=m.handle, v=v.handle, beta1_power=zero, beta2_power=zero,
                lr=lr, beta1=tf.constant(self.beta_1, lr.dtype),
                beta2=tf.constant(self.beta_2, lr.dtype),
                epsilon=tf.constant(self.epsilon, lr.dtype), grad=grad)

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


def _num_strategy_replicas():
    """Replicas the base Optimizer will SUM over (1 without a tf.distribute strategy)."""
    if not tf.distribute.has_strategy():
        return 1
    return tf.distribute.get_replica_context().num_replicas_in_sync


def cross_replica_mean(values, use_tpu=False):
    """Mean of each tensor over all replicas (no-op on a single device).

    Under a tf.distribute strategy this is an all-reduce in replica context;
    on TPU (TPUEstimator shards, no strategy) a `cross_replica_sum`.
    """
    if use_tpu:
        from tensorflow.python.tpu import tpu_function  # pylint: disable=import-outside-toplevel
        shards = tpu_function.get_tpu_context().number_of_shards or 1
        return [tf.tpu.cross_replica_sum(v) / float(shards) for v in values]
    if _num_strategy_replicas() <= 1:
        return list(values)
    ctx = tf.distribute.get_replica_context()
    return list(ctx.all_reduce(tf.distribute.ReduceOp.MEAN, list(values)))


TrainOpOutputs = collections.namedtuple(
    "TrainOpOutputs",
    ["train_op", "learning_rate", "grad_norm", "grads_finite", "update_applied", "loss_scale"])


def build_train_op(loss, init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                   poly_power=1.0, weight_decay_rate=0.01, clip_norm=1.0,
                   gradient_accumulation_steps=1, loss_scaler=None, use_tpu=False, tvars=None):
    """Gradients, cross-replica mean, loss (un)scaling, accumulation, clipping, update.

    Args:
      loss: float32 scalar, the mean loss of this replica's batch.
      num_train_steps / num_warmup_steps: counted in optimizer updates.
      gradient_accumulation_steps: k; the global step counts micro-batches and
        every k-th one applies the mean gradient of the last k.
      loss_scaler: a `mixed_precision.DynamicLossScale` for fp16, else None.
    Returns:
      TrainOpOutputs (train_op and scalar tensors for logging).
    """
    k = int(gradient_accumulation_steps)
    if k < 1:
        raise ValueError(f"--gradient_accumulation_steps must be >= 1, got {k}")
    global_step = tf.train.get_or_create_global_step()
    learning_rate = learning_rate_schedule(init_lr, global_step, num_train_steps,
                                           num_warmup_steps, poly_power, steps_per_update=k)
    opt = make_optimizer(optimizer, learning_rate, weight_decay_rate)
    if tvars is None:
        tvars = tf.trainable_variables()
    objective = loss_scaler.scale(loss) if loss_scaler is not None else loss
    grads = _dense_gradients(tf.gradients(objective, tvars), tvars)
    grads = cross_replica_mean(grads, use_tpu=use_tpu)
    if loss_scaler is not None:
        grads = loss_scaler.unscale(grads)
    # One pass over the gradients instead of an is-finite pass per tensor: the
    # global norm is finite when every element is (and also overflows, so the
    # step is skipped, for elements above ~1e19); clipping reuses it.
    grad_norm = tf.linalg.global_norm(grads)
    finite = tf.math.is_finite(grad_norm)

    extra_ops = []
    if k > 1:
        grads = [tf.where(finite, g, tf.zeros_like(g)) for g in grads]
        grads, is_update, finite_cycle = gradient_accumulation.accumulate(
            grads, tvars, finite, global_step, k)
        clipped, grad_norm = tf.clip_by_global_norm(grads, clip_norm)
    else:
        # A non-finite norm makes the clipped values NaN; the update mask then
        # skips the step, so they are never applied.
        is_update, finite_cycle = tf.constant(True), finite
        clipped, _ = tf.clip_by_global_norm(grads, clip_norm, use_norm=grad_norm)
    update_applied = tf.logical_and(is_update, finite_cycle)
    opt.set_update_mask(update_applied)
    replicas = _num_strategy_replicas()
    if replicas > 1:  # the base Optimizer SUMs the (identical) per-replica gradients
        clipped = [g / float(replicas) for g in clipped]
    apply_op = opt.apply_gradients(list(zip(clipped, tvars)), global_step=global_step)
    if loss_scaler is not None:
        extra_ops.append(loss_scaler.update(finite))
    train_op = tf.group(apply_op, *extra_ops, name="train_op")
    loss_scale = loss_scaler.current_scale() if loss_scaler is not None else tf.constant(1.0)
    return TrainOpOutputs(train_op, learning_rate, grad_norm, finite, update_applied, loss_scale)


def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                     poly_power=1.0, **kwargs):
    """The train op only (google-research/bert's `create_optimizer` signature + options)."""
    return build_train_op(loss, init_lr, num_train_steps, num_warmup_steps,
                          optimizer=optimizer, poly_power=poly_power, **kwargs).train_op
