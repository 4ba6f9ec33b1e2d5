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
    """XLNet's transformer; the registry's encoder for model_type "xlnet".

    input_ids [B, S] int; input_mask [B, S] (1 = real, 0 = padding) or None;
    token_type_ids [B, S] or None (no segment term; only equal or different matters,
    so upstream's <cls> segment 2 differs from both A and B); perm_mask [B, S, S] float,
    1 where position i may not see position j (the permutation), or None;
    target_mapping [B, P, S] float, one-hot rows of the P positions to predict: given,
    the query stream runs and get_query_output() is [B, P, d_model].
    compute_type: float32, bfloat16 or float16 (variables stay float32);
    use_one_hot_embeddings: the lookup as a one-hot matmul (TPU).
    """

    def __init__(self, config, is_training, input_ids, input_mask=None, token_type_ids=None,
                 perm_mask=None, target_mapping=None, use_one_hot_embeddings=False,
                 compute_type=tf.float32, scope="model"):
        self.config = config
        self.scope = scope
        self.input_mask = input_mask
        compute_type = tf.as_dtype(compute_type)
        dropout = config.dropout if is_training else 0.0
        initializer = xlnet_initializer(config)
        batch, length = layers.get_shape_list(input_ids, 2, "input_ids")
        bias_shape = ([config.n_layer] if config.untie_r else []) + [config.n_head, config.d_head]
        with layers.mixed_precision_scope(scope, compute_type), \
                tf.variable_scope("transformer"):
            r_w_bias = tf.get_variable("r_w_bias", bias_shape, initializer=initializer)
            r_r_bias = tf.get_variable("r_r_bias", bias_shape, initializer=initializer)
            blocked_g, blocked_h = _blocked_masks(input_mask, perm_mask, length, compute_type)
            with tf.variable_scope("word_embedding"), layers.float32_reads():
                self.embedding_table = tf.get_variable(
                    "lookup_table", [config.n_token, config.d_model], initializer=initializer)
            h = tf.cast(_lookup(self.embedding_table, input_ids, use_one_hot_embeddings),
                        compute_type)
            h = layers.dropout(h, dropout)
            g = None
            if target_mapping is not None:
                with tf.variable_scope("mask_emb"):
                    mask_emb = tf.get_variable("mask_emb", [1, 1, config.d_model],
                                               initializer=initializer)
                predictions = layers.get_shape_list(target_mapping, 3, "target_mapping")[1]
                g = layers.dropout(tf.tile(mask_emb, [batch, predictions, 1]), dropout)
                target_mapping = tf.cast(target_mapping, compute_type)
            other_segment = r_s_bias = seg_embed = None
            if token_type_ids is not None:
                r_s_bias = tf.get_variable("r_s_bias", bias_shape, initializer=initializer)
                seg_embed = tf.get_variable(
                    "seg_embed", [config.n_layer, 2, config.n_head, config.d_head],
                    initializer=initializer)
                other_segment = tf.cast(tf.not_equal(token_type_ids[:, :, None],
                                                     token_type_ids[:, None, :]), tf.int32)
            position = layers.dropout(rel.relative_position_encoding(
                length, length, config.d_model, config.clamp_len, dtype=compute_type), dropout)
            for index in range(config.n_layer):
                def per_layer(variable):
                    return variable[index] if config.untie_r else variable
                biases = {"r_w_bias": per_layer(r_w_bias), "r_r_bias": per_layer(r_r_bias)}
                if token_type_ids is not None:
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
        self.sequence_output = tf.cast(layers.dropout(h, dropout), tf.float32)  # [B, S, d]
        self.query_output = (None if g is None else
                             tf.cast(layers.dropout(g, dropout), tf.float32))  # [B, P, d]
        self._pooled_output = None

    def get_sequence_output(self):
        """[B, S, d_model] float32: the content stream of the last layer."""
        return self.sequence_output

    def get_query_output(self):
        """[B, P, d_model] float32: the query stream at the predicted positions (None
        without target_mapping)."""
        return self.query_output

    def get_embedding_table(self):
        """[n_token, d_model]."""
        return self.embedding_table

    def get_pooled_output(self):
        """[B, d_model] float32: upstream's sequence summary of type "last" with its
        projection: tanh(dense(content stream at the last real token)), under
        `model/sequnece_summary/summary` (upstream's spelling). Upstream pads on the
        left, so its last position is the last real token; here the last real token is
        found from input_mask, so right padding gives the same summary (padding keys
        are blocked and relative positions do not move with padding). Its variables
        are made on the first call: pretraining graphs do not have them. Upstream's
        dropout after it is the classifier head's (pretrain.models.task_heads)."""
        if self._pooled_output is None:
            self._pooled_output = sequence_summary(self.sequence_output, self.input_mask,
                                                   self.config, self.scope)
        return self._pooled_output


def _lookup(table, input_ids, use_one_hot_embeddings):
    """[B, S] ids -> [B, S, d_model] rows of `table` (a one-hot matmul for TPUs)."""
    if not use_one_hot_embeddings:
        return tf.nn.embedding_lookup(table, input_ids)
    vocab = int(table.shape[0])
    return tf.einsum("bsv,vd->bsd", tf.one_hot(input_ids, vocab, dtype=table.dtype), table)


def last_real_token(sequence, input_mask):
    """sequence [B, S, d], input_mask [B, S] (1 = real) or None -> [B, d] at each row's
    last real token: the last position whose mask is 1, padding on either side."""
    if input_mask is None:
        return sequence[:, -1]
    mask = tf.cast(input_mask, tf.int32)
    positions = tf.range(tf.shape(mask)[1], dtype=tf.int32)[None, :]
    last = tf.reduce_max(positions * mask, axis=1)  # [B]
    return tf.gather(sequence, last, axis=1, batch_dims=1)


def sequence_summary(sequence, input_mask, config, scope="model"):
    """[B, S, d_model] -> [B, d_model]: see XLNetModel.get_pooled_output."""
    with tf.variable_scope(scope, reuse=tf.AUTO_REUSE), \
            tf.variable_scope("sequnece_summary"):
        return layers.dense(last_real_token(sequence, input_mask), config.d_model, "summary",
                            activation=tf.tanh, initializer_range=config.init_std)


def lm_logits(hidden, embedding_table, config, scope="model"):
    """[..., d_model] -> [..., n_token]: the tied LM head, hidden . table^T + `lm_loss/bias`."""
    with tf.variable_scope(scope), tf.variable_scope("lm_loss"):
        bias = tf.get_variable("bias", [config.n_token], initializer=tf.zeros_initializer())
    # A matmul over the flattened rows: einsum's "...d,nd->...n" can be lowered to an
    # outer product of the table and the batch ([n, d, ...]), far too big for a real vocab.
    shape = layers.get_shape_list(hidden, name="hidden")
    flat = tf.reshape(hidden, [-1, shape[-1]])
    logits = tf.matmul(flat, tf.cast(embedding_table, flat.dtype), transpose_b=True)
    return tf.reshape(logits, shape[:-1] + [config.n_token]) + tf.cast(bias, logits.dtype)
