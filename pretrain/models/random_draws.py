"""Stateless random draws for training graphs: a resumed run draws what an unkilled run draws.

A stateful random op (tf.nn.dropout, tf.random.uniform) keeps its position in a kernel that
a checkpoint does not save, so a run restarted from step N draws step 0's masks again.
Every training draw here is stateless instead, its seed a [2] int64 key folded from

  * the graph seed (tf.set_random_seed; run_pretraining and run_finetune always set one,
    drawn at a run's first start when no --random_seed is given and saved with the run),
  * the global step, read in the step that draws (it counts micro-steps, so each micro-step
    of gradient accumulation draws anew),
  * the replica (its id in the sync group; 0 on one device),
  * the draw's index among this replica's draws in this graph, in building order (the same
    model code builds the same order in every process).

A graph without a seed draws one at each session.run (a run that cannot be repeated, as with
stateful draws; its graph stays the same).
"""
import weakref

import tensorflow.compat.v1 as tf

# graph -> {replica: draws made so far, "unseeded": the drawn seed of a graph without one}; not
# a graph collection, which a meta graph export would try to serialise.
_STATES = weakref.WeakKeyDictionary()


def _graph_state(graph):
    if graph not in _STATES:
        _STATES[graph] = {}
    return _STATES[graph]


def graph_seed(graph=None):
    """The graph seed the keys start from; None for a graph without one (its keys start
    from a seed drawn anew in each session.run, as unseeded stateful draws would)."""
    return (graph or tf.get_default_graph()).seed


def _seed_tensor(graph):
    """[] int64: the graph seed, or for an unseeded graph one random draw per session.run
    (made once, outside any control flow)."""
    if graph.seed is not None:
        return tf.constant(graph.seed, tf.int64)
    state = _graph_state(graph)
    if "unseeded" not in state:
        with tf.init_scope():
            state["unseeded"] = tf.random.uniform([], maxval=2 ** 31, dtype=tf.int64,
                                                  name="unseeded_draw_seed")
    return state["unseeded"]


def _replica_id():
    context = tf.distribute.get_replica_context()
    replica = None if context is None else tf.get_static_value(context.replica_id_in_sync_group)
    return int(replica or 0)


def next_key():
    """[2] int64: the seed of the next draw of this replica in the default graph."""
    graph = tf.get_default_graph()
    state = _graph_state(graph)
    replica = _replica_id()
    index = state.get(replica, 0)
    state[replica] = index + 1
    global_step = tf.train.get_global_step()
    step = (tf.zeros([], tf.int64) if global_step is None
            else tf.cast(tf.convert_to_tensor(global_step), tf.int64))
    key = tf.stack([_seed_tensor(graph), step])
    key = tf.random.experimental.stateless_fold_in(key, replica)
    return tf.random.experimental.stateless_fold_in(key, index)


def dropout(x, rate):
    """x with each element zeroed with probability `rate` and the rest scaled by
    1 / (1 - rate), as tf.nn.dropout, from the next key.

    The keep mask compares float32 uniforms with `rate` whatever x's dtype, so a bf16 or
    fp16 encoder drops exactly the elements its float32 twin drops: TensorFlow draws a
    bf16 tensor's uniforms in bf16, 128 values apart by 1/128, which at rate 0.1 drops
    13/128 = 10.16% (and takes longer to draw than float32's)."""
    key = next_key()
    if x.dtype.base_dtype == tf.float32:
        return tf.nn.experimental.stateless_dropout(x, rate=rate, seed=key)
    keep = tf.random.stateless_uniform(tf.shape(x), seed=key, dtype=tf.float32) >= rate
    return tf.where_v2(keep, x * tf.constant(1.0 / (1.0 - rate), x.dtype.base_dtype),
                       tf.zeros([], x.dtype.base_dtype))


def uniform(shape, dtype=tf.float32):
    """Uniform [0, 1) values of `shape` from the next key."""
    return tf.random.stateless_uniform(shape, seed=next_key(), dtype=dtype)
