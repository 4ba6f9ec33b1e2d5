"""Gradient accumulation: k micro-batches make one optimizer update.

The global step counts micro-batches. Accumulators are non-trainable variables
(saved in checkpoints, so a resume mid-cycle is exact). On micro-step
`global_step % k == 0` an accumulator restarts from the current gradient,
otherwise it adds to it; the mean over the cycle is handed to the optimizer,
which applies it only when `global_step % k == k - 1` (see the optimizer's
update mask). With equal-sized micro-batches and a per-example mean loss this
is numerically the update of one batch k times larger.

Accumulators use ON_WRITE synchronisation with ONLY_FIRST_REPLICA aggregation:
they are updated with gradients that are already all-reduced (identical on
every replica), so an assign in replica context is well defined under
MirroredStrategy.
"""
import tensorflow.compat.v1 as tf

from pretrain.variable_utils import replica_safe_variable


def accumulate(grads, tvars, finite, global_step, k):
    """Add this micro-batch's gradients to the accumulators.

    Args:
      grads: list of dense float32 tensors (already averaged over replicas).
      tvars: the matching variables (for names and shapes).
      finite: boolean scalar, this micro-batch's gradients were finite.
      global_step: int64 micro-batch counter (before this step's increment).
      k: micro-batches per update.
    Returns:
      (mean gradients over the cycle so far, is_update_step, cycle_finite).
    """
    micro = tf.math.floormod(global_step, k)
    first = tf.equal(micro, 0)
    is_update = tf.equal(micro, k - 1)
    mean_grads = []
    with tf.variable_scope("gradient_accumulation", reuse=tf.AUTO_REUSE):
        cycle_ok = replica_safe_variable("cycle_finite", [], tf.bool, tf.ones_initializer())
        new_ok = tf.where(first, finite, tf.logical_and(cycle_ok.read_value(), finite))
        new_ok = _assign(cycle_ok, new_ok)
        for grad, var in zip(grads, tvars):
            name = var.op.name.replace(":", "_")
            acc = replica_safe_variable(name, var.shape, tf.float32, tf.zeros_initializer())
            total = tf.where(first, grad, acc.read_value() + grad)
            total = _assign(acc, total)
            mean_grads.append(total / float(k))
    return mean_grads, is_update, new_ok


def _assign(var, value):
    """Assign and return the new value as a tensor (works for mirrored variables)."""
    with tf.control_dependencies([var.assign(value)]):
        return tf.identity(value)
