"""Helpers for non-trainable bookkeeping variables that must work under strategies."""
import tensorflow.compat.v1 as tf


def replica_safe_variable(name, shape, dtype, initializer):
    """A non-trainable global variable, mirrored under a strategy (one value everywhere).

    ONLY_FIRST_REPLICA aggregation makes an assign in replica context legal
    when every replica writes the same value; the training code assigns these
    (loss scale, its counter) in cross-replica context only. Without a
    strategy this is an ordinary variable.
    """
    return tf.get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, trainable=False,
        collections=[tf.GraphKeys.GLOBAL_VARIABLES],
        synchronization=tf.VariableSynchronization.ON_WRITE,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def replica_local_variable(name, shape, dtype, initializer, saved=True):
    """A non-trainable variable with one independent copy per replica (ON_READ).

    Replica-context assigns touch only the local copy: no merge_call, no
    broadcast. A checkpoint stores replica 0's copy (ONLY_FIRST_REPLICA reads
    it without a collective) and a restore writes it to every copy.
    `saved=False` puts it in LOCAL_VARIABLES (initialised by the Scaffold's
    local init op, never checkpointed). Without a strategy: an ordinary variable.
    """
    collection = tf.GraphKeys.GLOBAL_VARIABLES if saved else tf.GraphKeys.LOCAL_VARIABLES
    return tf.get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, trainable=False,
        collections=[collection],
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
