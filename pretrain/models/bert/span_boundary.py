"""SpanBERT's span boundary objective (SBO) head, under `cls/span_boundary`.

Each masked token is predicted from the encoder states just outside its span
and its position in the span (Joshi et al. 2020, SpanBERT):

    y_i = MLP([h_L; h_R; p_k]),  k = masked_lm_positions[i] - left_i - 1
    logits_i = y_i @ word_embeddings^T + output_bias

h_L / h_R are the sequence outputs at the records' `masked_lm_span_left` /
`masked_lm_span_right` (data_gen --masking=span); p_k is a learned relative
position embedding. The MLP has two layers, each dense -> activation
(config.hidden_act: GELU, as SpanBERT) -> LayerNorm; the first is H wide, the
second as wide as the word embeddings (E), so the decoder is tied to the word
embedding table for BERT and both ALBERT layouts. The head runs in float32,
like pretrain.models.heads, and reuses its gather and cross-entropy.

Variables ([...] shapes; H hidden, E embedding width, V vocab, T table size):
  cls/span_boundary/position_embeddings              [T, H]
  cls/span_boundary/transform/dense/{kernel,bias}    [3H, H], [H]
  cls/span_boundary/transform/LayerNorm/{gamma,beta} [H]
  cls/span_boundary/transform/dense_1/{kernel,bias}  [H, E], [E]
  cls/span_boundary/transform/LayerNorm_1/{gamma,beta} [E]
  cls/span_boundary/output_bias                      [V]
"""
import tensorflow.compat.v1 as tf

from pretrain.models import heads, layers

SCOPE = "cls/span_boundary"
DEFAULT_MAX_SPAN_POSITIONS = 64
"""Rows of the relative position table: offsets inside a span beyond it share the last row.
SpanBERT's spans are at most 10 whole words, so 64 tokens leaves room; independent of
--max_predictions_per_seq so checkpoints do not depend on that flag."""


def relative_positions(positions, span_left, max_span_positions):
    """k = position - left - 1 (0 for the span's first token), clipped to [0, T-1].

    Args:
      positions, span_left: [B, P] int.
    Returns:
      [B*P] int32.
    """
    offsets = tf.cast(positions, tf.int32) - tf.cast(span_left, tf.int32) - 1
    return tf.reshape(tf.clip_by_value(offsets, 0, max_span_positions - 1), [-1])


def get_span_boundary_output(config, input_tensor, output_weights, positions, span_left,
                             span_right, label_ids, label_weights,
                             max_span_positions=DEFAULT_MAX_SPAN_POSITIONS):
    """SBO head and loss, under `cls/span_boundary` (see the module docstring).

    Args:
      input_tensor: [B, S, H] sequence output (any float dtype).
      output_weights: [V, E] tied word-embedding table (model.get_embedding_table()).
      positions, span_left, span_right, label_ids: [B, P] int (the records'
        masked_lm_positions, masked_lm_span_left/right, masked_lm_ids).
      label_weights: [B, P] float, 1.0 real prediction / 0.0 padding.
      max_span_positions: rows T of the relative position table.
    Returns:
      (loss scalar: the label_weights-weighted mean, per_example_loss [B*P],
      log_probs [B*P, V]), float32.
    """
    sequence = tf.cast(input_tensor, tf.float32)
    hidden_size = layers.get_shape_list(sequence, 3, "input_tensor")[2]
    embedding_width = int(output_weights.shape[-1])
    left = heads.gather_indexes(sequence, span_left)  # [B*P, H]
    right = heads.gather_indexes(sequence, span_right)  # [B*P, H]
    activation = layers.get_activation(config.hidden_act)
    with tf.variable_scope(SCOPE):
        position_table = tf.get_variable(
            "position_embeddings", shape=[max_span_positions, hidden_size],
            initializer=layers.create_initializer(config.initializer_range))
        offsets = relative_positions(positions, span_left, max_span_positions)  # [B*P]
        position = tf.gather(position_table, offsets)  # [B*P, H]
        hidden = tf.concat([left, right, position], axis=-1)  # [B*P, 3H]
        with tf.variable_scope("transform"):
            hidden = layers.dense(hidden, hidden_size, "dense", activation=activation,
                                  initializer_range=config.initializer_range)  # [B*P, H]
            hidden = layers.layer_norm(hidden, "LayerNorm")
            hidden = layers.dense(hidden, embedding_width, "dense_1", activation=activation,
                                  initializer_range=config.initializer_range)  # [B*P, E]
            hidden = layers.layer_norm(hidden, "LayerNorm_1")
        output_bias = tf.get_variable("output_bias", shape=[config.vocab_size],
                                      initializer=tf.zeros_initializer())
        logits = tf.matmul(hidden, tf.cast(output_weights, tf.float32), transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)  # [B*P, V]
        loss, per_example_loss, log_probs = heads.weighted_prediction_loss(
            logits, label_ids, label_weights)
    return loss, per_example_loss, log_probs


def is_span_boundary_variable(name):
    """Whether checkpoint/variable `name` belongs to this head (for tools that skip it)."""
    return name == SCOPE or name.startswith(SCOPE + "/")
