"""Helpers for non-trainable bookkeeping variables that must work under strategies."""
import tensorflow.compat.v1 as tf


def replica_safe_variable(name, shape, dtype, initializer):
    """A non-trainable global variable that replica-context code may assign.

    Under MirroredStrategy the value written must be identical on all replicas
    (e.g. derived from all-reduced gradients); ONLY_FIRST_REPLICA aggregation
    then makes the assign legal in replica context. Without a strategy this is
    an ordinary variable.
    """
    return tf.get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, trainable=False,
        collections=[tf.GraphKeys.GLOBAL_VARIABLES],
        synchronization=tf.VariableSynchronization.ON_WRITE,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
