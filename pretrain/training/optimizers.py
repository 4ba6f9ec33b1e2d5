"""The optimizers: AdamW and LAMB with decoupled weight decay, per-variable updates only
(pretrain.training.optimization builds the train op around them: clipping, accumulation,
the cross-replica step).

Why not google-research/bert's `AdamWeightDecayOptimizer`: it overrides
`apply_gradients` and assigns to the variables itself, in replica context,
which MirroredStrategy refuses ("You must specify an aggregation method to
update a MirroredVariable in Replica Context"). The optimizers here only
implement the per-variable update.
"""
import re

import tensorflow.compat.v1 as tf

from pretrain.checkpoints.checkpoint_compat import SLOT_NAMES

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
    updates and fade to 1x over a few thousand, which short warmups do not absorb.
    `set_update_count(t)`
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
        """For `apply_gradients`: boolean scalar tensor; False leaves variables and slots
        untouched."""
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
