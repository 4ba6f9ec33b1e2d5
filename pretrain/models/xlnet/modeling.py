"""The XLNet encoder (content stream, and the query stream for the permutation LM) and
its LM head, under zihangdai/xlnet's variable names:

  model/transformer/word_embedding/lookup_table   [n_token, d_model]
  model/transformer/mask_emb/mask_emb             [1, 1, d_model]   (query stream only)
  model/transformer/{r_w_bias, r_r_bias, r_s_bias} [n_layer, n_head, d_head] if untie_r,
                                                   else [n_head, d_head]
  model/transformer/seg_embed                     [n_layer, 2, n_head, d_head]
  model/transformer/layer_i/rel_attn/...          (relative_attention.py)
  model/transformer/layer_i/ff/{layer_1,layer_2}/{kernel,bias}, ff/LayerNorm/{gamma,beta}
  model/lm_loss/bias                              [n_token]

Batch-major tensors; `input_mask` has BERT's meaning (1 = real token). Without
memory (mem_len 0) and with bidirectional attention, as transformers runs it
by default.
"""
import tensorflow.compat.v1 as tf

from pretrain.models import layers
from pretrain.models.xlnet import relative_attention as rel

_ACTIVATIONS = {"relu": tf.nn.relu, "gelu": layers.gelu}  # upstream's gelu: the tanh form


def xlnet_initializer(config):
    if config.init == "uniform":
        return tf.random_uniform_initializer(-config.init_range, config.init_range)
    return tf.random_normal_initializer(stddev=config.init_std)


def _blocked_masks(input_mask, perm_mask, length, dtype):
    """(blocked_g, blocked_h) [B, S, S], 1 where query i may not see key j, or (None, None).

    blocked_g: padding keys and perm_mask; blocked_h: the same with every
    position allowed to see itself (upstream's non_tgt_mask).
    """
    blocked = None
    if input_mask is not None:
        padding = 1.0 - tf.cast(input_mask, dtype)  # [B, S]
        blocked = tf.tile(padding[:, None, :], [1, length, 1])
    if perm_mask is not None:
        perm = tf.cast(perm_mask, dtype)
        blocked = perm if blocked is None else blocked + perm
    if blocked is None:
        return None, None
    blocked_g = tf.cast(blocked > 0, dtype)
    blocked_h = tf.cast(blocked_g - tf.eye(length, dtype=dtype)[None] > 0, dtype)
    return blocked_g, blocked_h


def _feed_forward(x, config, dropout):
    """Upstream's position-wise FFN: layer_1 (activation), dropout, layer_2, dropout,
    LayerNorm(x + .) (scope: the caller's `ff`)."""
    inner = layers.dense(x, config.d_inner, "layer_1", activation=_ACTIVATIONS[
        config.ff_activation], initializer_range=config.init_std)
    output = layers.dense(layers.dropout(inner, dropout), config.d_model, "layer_2",
                          initializer_range=config.init_std)
    return layers.layer_norm(layers.dropout(output, dropout) + x, name="LayerNorm")


class XLNetModel(object):
    """XLNet's transformer.

    input_ids [B, S] int; input_mask [B, S] (1 = real, 0 = padding) or None;
    segment_ids [B, S] or None (no segment term); perm_mask [B, S, S] float, 1 where
    position i may not see position j (the permutation), or None; target_mapping
    [B, P, S] float, one-hot rows of the P positions to predict: given, the query
    stream runs and get_query_output() is [B, P, d_model].
    """

    def __init__(self, config, is_training, input_ids, input_mask=None, segment_ids=None,
                 perm_mask=None, target_mapping=None, scope="model"):
        self.config = config
        dropout = config.dropout if is_training else 0.0
        initializer = xlnet_initializer(config)
        batch, length = layers.get_shape_list(input_ids, 2, "input_ids")
        bias_shape = ([config.n_layer] if config.untie_r else []) + [config.n_head, config.d_head]
        with tf.variable_scope(scope), tf.variable_scope("transformer"):
            r_w_bias = tf.get_variable("r_w_bias", bias_shape, initializer=initializer)
            r_r_bias = tf.get_variable("r_r_bias", bias_shape, initializer=initializer)
            blocked_g, blocked_h = _blocked_masks(input_mask, perm_mask, length, tf.float32)
            with tf.variable_scope("word_embedding"):
                self.embedding_table = tf.get_variable(
                    "lookup_table", [config.n_token, config.d_model], initializer=initializer)
            h = layers.dropout(tf.nn.embedding_lookup(self.embedding_table, input_ids), dropout)
            g = None
            if target_mapping is not None:
                with tf.variable_scope("mask_emb"):
                    mask_emb = tf.get_variable("mask_emb", [1, 1, config.d_model],
                                               initializer=initializer)
                predictions = layers.get_shape_list(target_mapping, 3, "target_mapping")[1]
                g = layers.dropout(tf.tile(mask_emb, [batch, predictions, 1]), dropout)
            other_segment = r_s_bias = seg_embed = None
            if segment_ids is not None:
                r_s_bias = tf.get_variable("r_s_bias", bias_shape, initializer=initializer)
                seg_embed = tf.get_variable(
                    "seg_embed", [config.n_layer, 2, config.n_head, config.d_head],
                    initializer=initializer)
                other_segment = tf.cast(tf.not_equal(segment_ids[:, :, None],
                                                     segment_ids[:, None, :]), tf.int32)
            position = layers.dropout(rel.relative_position_encoding(
                length, length, config.d_model, config.clamp_len), dropout)
            for index in range(config.n_layer):
                def per_layer(variable):
                    return variable[index] if config.untie_r else variable
                biases = {"r_w_bias": per_layer(r_w_bias), "r_r_bias": per_layer(r_r_bias)}
                if segment_ids is not None:
                    biases.update(r_s_bias=per_layer(r_s_bias), seg_embed=seg_embed[index])
                with tf.variable_scope("layer_%d" % index):
                    with tf.variable_scope("rel_attn"):
                        streams = rel.relative_attention(
                            h, position, config, biases, other_segment, blocked_h, is_training,
                            initializer, g, target_mapping, blocked_g)
                        h, g = streams if g is not None else (streams, None)
                    with tf.variable_scope("ff"):
                        h = _feed_forward(h, config, dropout)
                    if g is not None:
                        with tf.variable_scope("ff", reuse=True):
                            g = _feed_forward(g, config, dropout)
            self.sequence_output = layers.dropout(h, dropout)  # [B, S, d_model]
            self.query_output = None if g is None else layers.dropout(g, dropout)  # [B, P, d]

    def get_sequence_output(self):
        """[B, S, d_model]: the content stream of the last layer."""
        return self.sequence_output

    def get_query_output(self):
        """[B, P, d_model]: the query stream at the predicted positions (None without)."""
        return self.query_output

    def get_embedding_table(self):
        """[n_token, d_model]."""
        return self.embedding_table


def lm_logits(hidden, embedding_table, config, scope="model"):
    """[..., d_model] -> [..., n_token]: the tied LM head, hidden . table^T + `lm_loss/bias`."""
    with tf.variable_scope(scope), tf.variable_scope("lm_loss"):
        bias = tf.get_variable("bias", [config.n_token], initializer=tf.zeros_initializer())
    return tf.einsum("...d,nd->...n", hidden, embedding_table) + bias
