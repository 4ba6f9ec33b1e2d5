"""XLNet's relative multi-head attention (Transformer-XL positions, XLNet segments).

Batch-major here ([B, S, ...]); zihangdai/xlnet is time-major ([S, B, ...]) but
names its variables the same way, which is what checkpoints see:

  layer_i/rel_attn/{q,k,v,r,o}/kernel  [d_model, n_head, d_head]
  layer_i/rel_attn/LayerNorm/{gamma,beta}
and, made by the caller at the transformer's scope and sliced per layer here:
  r_w_bias, r_r_bias, r_s_bias  [n_layer, n_head, d_head] (untie_r) or [n_head, d_head]
  seg_embed                     [n_layer, 2, n_head, d_head] (0: same segment, 1: other)

The score of query i against key j adds three terms before the softmax:
content (q_i + r_w_bias) . k_j, position (q_i + r_r_bias) . r(d_ij) with d_ij
the distance from key j to query i, and segment (q_i + r_s_bias) .
seg_embed[s_ij]. The positions are scored against all K + Q distances once
and moved into place by `rel_shift`.
"""
import math

import tensorflow.compat.v1 as tf

from pretrain.models import layers


def relative_position_encoding(query_length, key_length, d_model, clamp_len=-1,
                               dtype=tf.float32):
    """[K + Q, d_model]: sinusoid encodings of the distances K, K - 1, ..., -Q + 1.

    Row p is distance K - p; query i (of the last Q of K positions) and key j are
    K - Q + i - j apart. Encoding: concat(sin(d * f), cos(d * f)) with
    f = 1 / 10000^(2k / d_model), k < d_model / 2; clamp_len > 0 clips d.
    """
    positions = tf.range(key_length, -query_length, -1.0)
    if clamp_len > 0:
        positions = tf.clip_by_value(positions, -float(clamp_len), float(clamp_len))
    inverse_frequency = 1.0 / (10000.0 ** (tf.range(0, d_model, 2.0) / d_model))
    angles = tf.einsum("p,f->pf", positions, inverse_frequency)
    return tf.cast(tf.concat([tf.sin(angles), tf.cos(angles)], -1), dtype)


def rel_shift(scores, key_length):
    """scores [B, N, Q, K + Q] against the distances of relative_position_encoding ->
    [B, N, Q, K] with out[..., i, j] = scores[..., i, Q - i + j] (query i, key j).

    Done by reshapes, no gather: viewing each [Q, K + Q] block as [K + Q, Q],
    dropping its first row and viewing the rest as [Q, K + Q - 1] moves row i left
    by Q - i.
    """
    batch, heads, query_length, positions = layers.get_shape_list(scores, 4, "scores")
    shifted = tf.reshape(scores, [batch, heads, positions, query_length])[:, :, 1:, :]
    shifted = tf.reshape(shifted, [batch, heads, query_length, positions - 1])
    return shifted[:, :, :, :key_length]


def head_projection(x, config, name, initializer):
    """x [B, S, d_model] -> [B, S, n_head, d_head] through `name`/kernel."""
    kernel = tf.get_variable("%s/kernel" % name, [config.d_model, config.n_head, config.d_head],
                             initializer=initializer, dtype=x.dtype)
    return tf.einsum("bsh,hnd->bsnd", x, kernel)


def _blocked_value(dtype):
    return 65500.0 if dtype == tf.float16 else 1e30


def attention_core(q_head, k_head, v_head, k_head_r, r_w_bias, r_r_bias, seg_embed=None,
                   other_segment=None, r_s_bias=None, attention_blocked=None, dropatt=0.0):
    """Relative attention of Q queries over K keys -> [B, Q, n_head, d_head].

    q_head [B, Q, N, D]; k_head, v_head [B, K, N, D]; k_head_r [K + Q, N, D] (the
    projected relative_position_encoding); r_w_bias, r_r_bias, r_s_bias [N, D];
    seg_embed [2, N, D] and other_segment [B, Q, K] int (1 where query and key are
    in different segments), both None for no segment term; attention_blocked
    [B, Q, K] float, 1 where query i may not see key j (None: all visible).
    """
    key_length = layers.get_shape_list(k_head, 4, "k_head")[1]
    content = tf.einsum("bind,bjnd->bnij", q_head + r_w_bias, k_head)
    position = rel_shift(tf.einsum("bind,pnd->bnip", q_head + r_r_bias, k_head_r), key_length)
    scores = content + position
    if seg_embed is not None:
        by_segment = tf.einsum("bind,snd->bnis", q_head + r_s_bias, seg_embed)  # [B, N, Q, 2]
        segment_one_hot = tf.one_hot(other_segment, 2, dtype=by_segment.dtype)  # [B, Q, K, 2]
        scores += tf.einsum("bijs,bnis->bnij", segment_one_hot, by_segment)
    scores *= 1.0 / math.sqrt(int(q_head.shape[-1]))
    if attention_blocked is not None:
        blocked = tf.cast(attention_blocked, scores.dtype)[:, None, :, :]
        scores -= _blocked_value(scores.dtype) * blocked
    probabilities = layers.dropout(tf.nn.softmax(scores, axis=-1), dropatt)
    return tf.einsum("bnij,bjnd->bind", probabilities, v_head)


def post_attention(h, attention_vector, config, initializer, dropout=0.0):
    """[B, Q, N, D] -> [B, Q, d_model]: the o/kernel projection, dropout, residual h,
    LayerNorm (upstream's order)."""
    kernel = tf.get_variable("o/kernel", [config.d_model, config.n_head, config.d_head],
                             initializer=initializer, dtype=h.dtype)
    output = layers.dropout(tf.einsum("bind,hnd->bih", attention_vector, kernel), dropout)
    return layers.layer_norm(output + h, name="LayerNorm")


def relative_attention(h, position_encoding, config, biases, other_segment=None,
                       blocked_h=None, is_training=False, initializer=None, g=None,
                       target_mapping=None, blocked_g=None):
    """One layer's attention (scope: the caller's `rel_attn`): the content stream h, and
    with g the query stream too.

    h [B, S, d_model]; position_encoding [2S, d_model]
    (relative_position_encoding(S, S, ...)); biases: this layer's r_w_bias, r_r_bias,
    r_s_bias [N, D] and seg_embed [2, N, D] (the last two only with other_segment);
    other_segment, blocked_h as in attention_core. Query stream: g [B, P, d_model],
    one row per prediction; target_mapping [B, P, S] float, row p one-hot at the
    position prediction p is for; blocked_g [B, S, S]. It uses h's keys and values and
    the same kernels, and attends as its position would under blocked_g; blocked_h is
    blocked_g with the diagonal open. Returns h' [B, S, d_model], or (h', g'
    [B, P, d_model]) with g.
    """
    initializer = initializer or layers.create_initializer(config.init_std)
    dropout = config.dropout if is_training else 0.0
    with_segments = other_segment is not None
    shared = dict(k_head=head_projection(h, config, "k", initializer),
                  v_head=head_projection(h, config, "v", initializer),
                  k_head_r=head_projection(position_encoding[None], config, "r", initializer)[0],
                  r_w_bias=biases["r_w_bias"], r_r_bias=biases["r_r_bias"],
                  seg_embed=biases["seg_embed"] if with_segments else None,
                  other_segment=other_segment,
                  r_s_bias=biases["r_s_bias"] if with_segments else None,
                  dropatt=config.dropatt if is_training else 0.0)
    vector_h = attention_core(head_projection(h, config, "q", initializer),
                              attention_blocked=blocked_h, **shared)
    output_h = post_attention(h, vector_h, config, initializer, dropout)
    if g is None:
        return output_h
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        q_head_g = head_projection(g, config, "q", initializer)  # [B, P, N, D]
        at_positions = tf.einsum("bpnd,bps->bsnd", q_head_g, target_mapping)
        vector = attention_core(at_positions, attention_blocked=blocked_g, **shared)
        vector_g = tf.einsum("bsnd,bps->bpnd", vector, target_mapping)
        output_g = post_attention(g, vector_g, config, initializer, dropout)
    return output_h, output_g
