"""Absolute position embeddings, optionally hierarchical (bert4keras's `hierarchical_position`).

With a trained table P of n rows and alpha in (0, 1), hierarchical position
embeddings run inputs of up to n * n positions on the same variable:

    u = (P - alpha * P[0]) / (1 - alpha)        [n, W]
    e(k) = alpha * u[k // n] + (1 - alpha) * u[k % n]

For k < n this is P[k] in exact arithmetic; the rows below n are taken from P
itself, so they are P[k] bit for bit and a model fine-tuned at length <= n
is unchanged by turning the option on.
"""
import tensorflow.compat.v1 as tf

from common import model_limits


def position_embeddings(table, seq_length, alpha=None):
    """The [S, W] position embeddings of positions 0 .. S-1.

    Args:
      table: [n, W] float32, the trained `position_embeddings` variable (static n).
      seq_length: S, a Python int or a scalar int32 tensor.
      alpha: None (plain table: S <= n) or the hierarchical alpha in (0, 1)
        (S <= n * n).
    Returns:
      [S, W] float32. Rows k < n are exactly table[k].
    Raises:
      ValueError when a static S exceeds what the table allows.
    """
    n = int(table.shape[0])
    if isinstance(seq_length, int):
        error = model_limits.length_error(
            seq_length, {"max_position_embeddings": n, "hierarchical_position": alpha},
            source="the model config", name="the sequence length")
        if error:
            raise ValueError(error)
    if alpha is None or (isinstance(seq_length, int) and seq_length <= n):
        return tf.slice(table, [0, 0], [seq_length, -1])
    if isinstance(seq_length, int):  # n < S <= n * n: static shapes
        rows, end = n, seq_length
    else:
        rows, end = tf.minimum(seq_length, n), tf.maximum(seq_length, n)
    with tf.name_scope("hierarchical_position"):
        trained = tf.slice(table, [0, 0], [rows, -1])  # positions 0 .. min(S, n)-1, exact
        beyond = tf.range(n, end)  # positions n .. S-1 (none when S <= n)
        u = (table - alpha * table[:1]) / (1.0 - alpha)
        hierarchical = (alpha * tf.gather(u, beyond // n)
                        + (1.0 - alpha) * tf.gather(u, beyond % n))
        return tf.concat([trained, hierarchical], axis=0)
