"""Gradient accumulation: k micro-batches make one optimizer update.

The global step counts micro-batches. Each replica keeps running *sums* of
its own gradients in replica-local variables (`gradient_accumulation/<var>`,
saved in checkpoints): on micro-step `global_step % k == 0` a sum restarts
from the current gradient, otherwise it adds to it. Nothing crosses devices
until the update micro-step (`global_step % k == k - 1`), when the optimizer
code all-reduces the sums once and divides by k. With equal-sized
micro-batches and a per-example mean loss this is the update of one batch k
times larger.

A non-finite micro-batch poisons the sum (inf and NaN survive addition), so
the reduced sum of the cycle is non-finite and the whole update is skipped;
the next cycle restarts the sums and is clean.

Checkpoints are written at cycle boundaries by run_pretraining (every
save_checkpoints_steps * k micro-steps), where the sums' values do not matter.
A single-device checkpoint taken mid-cycle resumes exactly; under a strategy
it holds replica 0's sums only.
"""
import tensorflow.compat.v1 as tf

from pretrain.training.variable_utils import replica_local_variable


def cycle_position(global_step, k):
    """(is first micro-step of a cycle, is update micro-step, micro-step index) for step."""
    micro = tf.math.floormod(global_step, k)
    return tf.equal(micro, 0), tf.equal(micro, k - 1), micro


def _variable_name(var):
    """Name without ':0' and without the '/replica_N' suffix of a mirrored copy."""
    name = var.op.name if hasattr(var, "op") and var.op is not None else var.name
    name = name.split(":")[0]
    parts = name.split("/")
    if parts[-1].startswith("replica_") and parts[-1][len("replica_"):].isdigit():
        parts = parts[:-1]
    return "/".join(parts)


def accumulate(grads, tvars, first):
    """Adds this replica's micro-batch gradients to its running sums.

    Args:
      grads: list of dense float32 tensors, this replica's gradients (shapes of tvars).
      tvars: the matching variables (for names and shapes).
      first: boolean scalar, this micro-step starts a cycle.
    Returns:
      list of float32 tensors: the sums over the cycle so far (this replica only).
    """
    sums = []
    with tf.variable_scope("gradient_accumulation", reuse=tf.AUTO_REUSE):
        for grad, var in zip(grads, tvars):
            acc = replica_local_variable(_variable_name(var), var.shape, tf.float32,
                                         tf.zeros_initializer())
            sums.append(_assign(acc, tf.where(first, grad, acc.read_value() + grad)))
    return sums


def accumulate_scalars(values, first):
    """Running sums of logging scalars ([n] float32 vector), local and never checkpointed."""
    with tf.variable_scope("gradient_accumulation", reuse=tf.AUTO_REUSE):
        acc = replica_local_variable("logged_scalars", values.shape, tf.float32,
                                     tf.zeros_initializer(), saved=False)
        return _assign(acc, tf.where(first, values, acc.read_value() + values))


def _assign(var, value):
    """Assign and return the new value as a tensor."""
    with tf.control_dependencies([var.assign(value)]):
        return tf.identity(value)
