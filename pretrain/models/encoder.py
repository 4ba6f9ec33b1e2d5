"""One transformer encoder for every variant: BERT, Google ALBERT, brightmart ALBERT.

The variants differ only in (a) where the factorized embedding projection
sits, (b) the variable-scope names of each block's sub-layers and which
layers share them, and (c) pre- or post-LayerNorm. (a) is in
`embeddings()`, (b) is `block_scopes()`, (c) is a flag of `transformer_block()`.

Variable names (relative to the model scope, normally `bert/`):
  BERT        encoder/layer_N/attention/self/{query,key,value}, .../attention/output/
              {dense,LayerNorm}, .../intermediate/dense, .../output/{dense,LayerNorm}
  Google      encoder/embedding_hidden_mapping_in, encoder/transformer/group_G/
              inner_group_I/{attention_1/self/*, attention_1/output/dense, LayerNorm,
              ffn_1/intermediate/dense, ffn_1/intermediate/output/dense, LayerNorm_1}
  brightmart  embeddings/word_embeddings_2 [E, H]; encoder/layer_shared/... with
              BERT's inner names (sharing "all"); for sharing "attention" the
              per-layer FFN is layer_shared/{intermediate_N,output_N}, for "ffn"
              the per-layer attention is layer_shared/attention_N, for "none"
              layer_N/... (the names of brightmart's modeling_preln.py).
Pre-LN keeps the same LayerNorm variables and applies them to each
sub-layer's input instead of its output (as brightmart's pre-LN code does).
"""
import tensorflow.compat.v1 as tf

from pretrain.models import attention, layers
from pretrain.models import position_embeddings as positions


def embedding_lookup(input_ids, vocab_size, width, initializer_range,
                     use_one_hot_embeddings, name="word_embeddings"):
    """Word embeddings.

    Args:
      input_ids: [B, S] int.
    Returns:
      (output [B, S, width] float32, table variable [vocab_size, width]).
    """
    batch_size, seq_length = layers.get_shape_list(input_ids, 2, "input_ids")
    with layers.float32_reads():
        table = tf.get_variable(name, [vocab_size, width],
                                initializer=layers.create_initializer(initializer_range))
    flat_ids = tf.reshape(input_ids, [-1])
    if use_one_hot_embeddings:
        output = tf.matmul(tf.one_hot(flat_ids, depth=vocab_size, dtype=tf.float32), table)
    else:
        output = tf.gather(table, flat_ids)
    return tf.reshape(output, [batch_size, seq_length, width]), table


def embedding_postprocessor(input_tensor, token_type_ids, config, dropout_prob, condition=None):
    """Adds segment and position embeddings, then LayerNorm and dropout.

    Args:
      input_tensor: [B, S, W] float32 word embeddings.
      token_type_ids: [B, S] int.
      condition: [B, C'] float32 condition of conditional LayerNorm, or None.
    Returns:
      [B, S, W] float32. Creates token_type_embeddings [T, W],
      position_embeddings [P, W] and LayerNorm/{gamma,beta} [W]. S may exceed P
      (up to P * P) with config.hierarchical_position (pretrain.models.position_embeddings).
    """
    batch_size, seq_length, width = layers.get_shape_list(input_tensor, 3)
    init = layers.create_initializer(config.initializer_range)
    with layers.float32_reads():
        token_type_table = tf.get_variable(
            "token_type_embeddings", [config.type_vocab_size, width], initializer=init)
        position_table = tf.get_variable(
            "position_embeddings", [config.max_position_embeddings, width], initializer=init)
    one_hot_types = tf.one_hot(tf.reshape(token_type_ids, [-1]),
                               depth=config.type_vocab_size, dtype=tf.float32)
    token_type_embeddings = tf.reshape(tf.matmul(one_hot_types, token_type_table),
                                       [batch_size, seq_length, width])
    position_embeddings = positions.position_embeddings(
        position_table, seq_length, config.hierarchical_position)
    output = input_tensor + token_type_embeddings + position_embeddings[tf.newaxis]
    output = layers.layer_norm(output, "LayerNorm", condition=condition)
    return layers.dropout(output, dropout_prob)


def embeddings(config, input_ids, token_type_ids, use_one_hot_embeddings, dropout_prob,
               condition=None):
    """The `embeddings` scope for the configured layout (call inside it).

    Returns:
      (output [B, S, W] float32 where W = E for Google ALBERT, else H;
       word table [V, E]; projection variable [E, H] (brightmart) or None).
    """
    output, table = embedding_lookup(input_ids, config.vocab_size,
                                     config.word_embedding_width,
                                     config.initializer_range, use_one_hot_embeddings)
    projection = None
    if config.is_albert and config.albert_layout == "brightmart":
        with layers.float32_reads():
            projection = tf.get_variable(
                "word_embeddings_2", [config.embedding_size, config.hidden_size],
                initializer=layers.create_initializer(config.initializer_range))
        output = tf.einsum("bse,eh->bsh", output, projection)
    output = embedding_postprocessor(output, token_type_ids, config, dropout_prob, condition)
    return output, table, projection


def block_scopes(config, layer_index, inner_index=0):
    """Variable-scope names (under encoder/) of one transformer block.

    Returns (scopes dict with keys query, key, value, attention_output,
    attention_layer_norm, intermediate, output, output_layer_norm; shared bool).
    """
    if config.is_albert and config.albert_layout == "google":
        group = layer_index * config.num_hidden_groups // config.num_hidden_layers
        base = "transformer/group_%d/inner_group_%d/" % (group, inner_index)
        attn = base + "attention_1/"
        return {
            "query": attn + "self/query", "key": attn + "self/key",
            "value": attn + "self/value",
            "attention_output": attn + "output/dense",
            "attention_layer_norm": base + "LayerNorm",
            "intermediate": base + "ffn_1/intermediate/dense",
            "output": base + "ffn_1/intermediate/output/dense",
            "output_layer_norm": base + "LayerNorm_1",
        }, config.num_hidden_layers > config.num_hidden_groups
    sharing = config.sharing if config.is_albert else "none"
    if sharing == "none":
        attn = "layer_%d/attention/" % layer_index
        inter = "layer_%d/intermediate/" % layer_index
        out = "layer_%d/output/" % layer_index
    else:
        attn = "layer_shared/attention/"
        inter = "layer_shared/intermediate/"
        out = "layer_shared/output/"
        if sharing == "attention":
            inter = "layer_shared/intermediate_%d/" % layer_index
            out = "layer_shared/output_%d/" % layer_index
        elif sharing == "ffn":
            attn = "layer_shared/attention_%d/" % layer_index
    return {
        "query": attn + "self/query", "key": attn + "self/key",
        "value": attn + "self/value",
        "attention_output": attn + "output/dense",
        "attention_layer_norm": attn + "output/LayerNorm",
        "intermediate": inter + "dense",
        "output": out + "dense",
        "output_layer_norm": out + "LayerNorm",
    }, sharing != "none"


def transformer_block(layer_input, attention_mask, config, scopes, batch_size,
                      seq_length, dropout_prob, attention_dropout_prob, reuse=None,
                      previous_scores=None, condition=None):
    """One attention + feed-forward block.

    Args:
      layer_input: [B*S, H] in the compute dtype.
      attention_mask: [B, S, S] float32.
      scopes: from `block_scopes`.
      previous_scores: [B, N, S, S] float32 running sum of the earlier blocks'
        attention scores (residual attention), or None.
      condition: [B, C'] float32 condition of conditional LayerNorm, or None.
    Returns:
      (output [B*S, H] in the compute dtype, attention scores [B, N, S, S]
      float32 before masking, including `previous_scores`).
    """
    pre_ln = config.layer_norm_position == "pre"
    hidden = config.hidden_size
    init_range = config.initializer_range

    def layer_norm(tensor, name):
        return layers.layer_norm(tensor, scopes[name], reuse=reuse, condition=condition)

    attn_input = layer_input
    if pre_ln:
        attn_input = layer_norm(layer_input, "attention_layer_norm")
    context, scores = attention.attention_layer(
        attn_input, attention_mask, batch_size, seq_length, config.num_attention_heads,
        config.key_size_per_head, config.value_size_per_head, scopes,
        attention_dropout_prob, init_range, reuse=reuse, previous_scores=previous_scores)
    attn_output = layers.dense(context, hidden, scopes["attention_output"],
                               initializer_range=init_range, reuse=reuse)
    attn_output = layers.dropout(attn_output, dropout_prob) + layer_input
    if not pre_ln:
        attn_output = layer_norm(attn_output, "attention_layer_norm")

    ffn_input = attn_output
    if pre_ln:
        ffn_input = layer_norm(attn_output, "output_layer_norm")
    intermediate = layers.dense(ffn_input, config.intermediate_size, scopes["intermediate"],
                                activation=layers.get_activation(config.hidden_act),
                                initializer_range=init_range, reuse=reuse)
    ffn_output = layers.dense(intermediate, hidden, scopes["output"],
                              initializer_range=init_range, reuse=reuse)
    output = layers.dropout(ffn_output, dropout_prob) + attn_output
    if not pre_ln:
        output = layer_norm(output, "output_layer_norm")
    return output, scores


def transformer(input_tensor, attention_mask, config, dropout_prob, attention_dropout_prob,
                condition=None):
    """The stacked encoder (call inside the `encoder` scope).

    Args:
      input_tensor: [B, S, W] in the compute dtype (W = E for Google ALBERT
        with E != H, mapped to H by `embedding_hidden_mapping_in`).
      condition: [B, C'] float32 condition of conditional LayerNorm, or None.
    Returns:
      list of num_hidden_layers tensors [B, S, H] in the compute dtype.
    """
    batch_size, seq_length, width = layers.get_shape_list(input_tensor, 3)
    hidden = config.hidden_size
    if width != hidden:
        if not (config.is_albert and config.albert_layout == "google"):
            raise ValueError("encoder input width %d != hidden_size %d" % (width, hidden))
        input_tensor = layers.dense(input_tensor, hidden, "embedding_hidden_mapping_in",
                                    initializer_range=config.initializer_range)
    prev_output = tf.reshape(input_tensor, [-1, hidden])
    inner_count = config.inner_group_num if config.is_albert else 1
    scores = None  # residual attention: the running sum over every block run so far
    all_layers = []
    for layer_index in range(config.num_hidden_layers):
        with tf.name_scope("layer_%d" % layer_index):
            for inner_index in range(inner_count):
                scopes, shared = block_scopes(config, layer_index, inner_index)
                prev_output, block_scores = transformer_block(
                    prev_output, attention_mask, config, scopes, batch_size, seq_length,
                    dropout_prob, attention_dropout_prob,
                    reuse=tf.AUTO_REUSE if shared else None, previous_scores=scores,
                    condition=condition)
                if config.residual_attention:
                    scores = block_scores
        all_layers.append(tf.reshape(prev_output, [batch_size, seq_length, hidden]))
    return all_layers
