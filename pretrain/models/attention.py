"""Self-attention and attention-mask construction.

Mask modes (chosen by `BertModel(..., attention_mode=...)`):
  "bidirectional": every token sees every non-padding token (BERT).
  "causal":        token i sees non-padding tokens j <= i (left-to-right LM).
  "unilm":         UniLM seq2seq: segment-0 tokens see all of segment 0;
                   segment-1 tokens see segment 0 and segment-1 tokens j <= i.
"""
import math

import tensorflow.compat.v1 as tf

from pretrain.models import layers

ATTENTION_MODES = ("bidirectional", "causal", "unilm")


def create_attention_mask(input_mask, token_type_ids=None, mode="bidirectional"):
    """Builds the [B, F, T] float32 mask, 1.0 = may attend, 0.0 = blocked.

    Args:
      input_mask: [B, S] int, 1 for real tokens, 0 for padding.
      token_type_ids: [B, S] int segment ids (needed for "unilm").
      mode: one of ATTENTION_MODES.
    """
    if mode not in ATTENTION_MODES:
        raise ValueError("attention_mode %r is unknown; use one of %s"
                         % (mode, ", ".join(ATTENTION_MODES)))
    batch_size, seq_length = layers.get_shape_list(input_mask, 2, "input_mask")
    to_mask = tf.cast(tf.reshape(input_mask, [batch_size, 1, seq_length]), tf.float32)
    if mode == "bidirectional":
        return to_mask * tf.ones([batch_size, seq_length, 1], tf.float32)
    if mode == "causal":
        lower = tf.linalg.band_part(tf.ones([seq_length, seq_length], tf.float32), -1, 0)
        return to_mask * lower[tf.newaxis]
    if token_type_ids is None:
        raise ValueError("attention_mode 'unilm' needs token_type_ids "
                         "(0 for the source segment, 1 for the target segment)")
    # Position j is visible from i when the running count of target tokens up
    # to j does not exceed the count up to i: source tokens (count 0) are
    # visible to all, target tokens only to themselves and later targets.
    target_count = tf.cumsum(tf.cast(token_type_ids, tf.int32), axis=1)
    visible = tf.less_equal(target_count[:, tf.newaxis, :], target_count[:, :, tf.newaxis])
    return to_mask * tf.cast(visible, tf.float32)


def attention_layer(from_tensor_2d, attention_mask, batch_size, seq_length,
                    num_attention_heads, key_size, value_size, scopes,
                    attention_probs_dropout_prob=0.0, initializer_range=0.02,
                    reuse=None, previous_scores=None):
    """Multi-head self-attention.

    Args:
      from_tensor_2d: [B*S, H] in the compute dtype.
      attention_mask: [B, S, S] float32 from `create_attention_mask`.
      key_size: per-head width Dk of queries and keys; value_size: per-head
        width Dv of values.
      scopes: dict with full variable-scope names for "query", "key", "value".
      previous_scores: [B, N, S, S] float32 or None. RealFormer's residual
        attention: the running sum of the earlier layers' unmasked scores,
        added to this layer's scaled scores before the mask.
    Returns:
      (context [B*S, N*Dv] in the compute dtype, scores [B, N, S, S] float32:
      this layer's scaled scores plus `previous_scores`, before masking, the
      next layer's `previous_scores`). Scores are scaled, masked and softmaxed
      in float32; the two matmuls run in the compute dtype.
    """
    def project(name, size):
        out = layers.dense(from_tensor_2d, num_attention_heads * size,
                           scopes[name], initializer_range=initializer_range,
                           reuse=reuse)
        out = tf.reshape(out, [batch_size, seq_length, num_attention_heads, size])
        return tf.transpose(out, [0, 2, 1, 3])  # [B, N, S, D]

    query = project("query", key_size)
    key = project("key", key_size)
    value = project("value", value_size)

    scores = tf.matmul(query, key, transpose_b=True)  # [B, N, F, T]
    scores = tf.cast(scores, tf.float32) * (1.0 / math.sqrt(float(key_size)))
    if previous_scores is not None:
        scores += previous_scores
    unmasked_scores = scores
    if attention_mask is not None:
        adder = (1.0 - attention_mask[:, tf.newaxis, :, :]) * -10000.0
        scores += adder
    probs = tf.nn.softmax(scores)
    probs = layers.dropout(probs, attention_probs_dropout_prob)
    context = tf.matmul(tf.cast(probs, value.dtype), value)  # [B, N, F, Dv]
    context = tf.transpose(context, [0, 2, 1, 3])
    context = tf.reshape(context, [batch_size * seq_length, num_attention_heads * value_size])
    return context, unmasked_scores
