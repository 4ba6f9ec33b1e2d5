"""Public model API, shaped like google-research/bert's `modeling.py`.

    config = BertConfig.from_json_file("configs/roberta_zh_base.json")
    model = BertModel(config, is_training, input_ids, input_mask, token_type_ids)
    model.get_sequence_output()   # [B, S, H]
    model.get_pooled_output()     # [B, H]

`BertModel` builds whatever `config.model_type` describes (so code written for
brightmart's albert_zh, which calls BertModel with ALBERT configs, ports
unchanged); `AlbertModel` insists on an ALBERT config. The encoder of any registered
family: `pretrain.models.registry.create_encoder`.

Precision: with `compute_type` bfloat16/float16, variables are stored in
float32 and cast when read; matmuls run in the compute type, LayerNorm and
softmax in float32. Every `get_*` output below is returned in float32.
"""
import collections
import copy

import tensorflow.compat.v1 as tf

from pretrain.models import attention, encoder, layers
from pretrain.models.attention import ATTENTION_MODES, create_attention_mask  # noqa: F401
from pretrain.models.bert.config import BertConfig  # noqa: F401
from pretrain.models.config import ConfigError
from pretrain.models.layers import (EMBEDDING_PROJECTION_COLLECTION,  # noqa: F401
                                    create_initializer, dropout, gelu, get_activation,
                                    get_shape_list, layer_norm)

class BertModel(object):
    """BERT/RoBERTa or ALBERT encoder, chosen by `config.model_type`."""

    def __init__(self, config, is_training, input_ids, input_mask=None,
                 token_type_ids=None, use_one_hot_embeddings=False, scope=None,
                 attention_mode="bidirectional", compute_type=tf.float32, condition=None):
        """Builds the graph.

        Args:
          config: `BertConfig`.
          is_training: bool; False disables dropout.
          input_ids: [B, S] int32 token ids.
          input_mask: [B, S] int, 1 real / 0 padding (default all ones).
          token_type_ids: [B, S] int segment ids (default zeros).
          use_one_hot_embeddings: one-hot matmul lookup (TPU) instead of gather.
          scope: variable scope, default "bert".
          attention_mode: "bidirectional" | "causal" | "unilm".
          compute_type: tf.float32, tf.bfloat16 or tf.float16.
          condition: [B, C] float32 condition vector of conditional LayerNorm,
            required when config.layer_norm_cond_size = C, else None.
        """
        if not isinstance(config, BertConfig):
            raise TypeError("config must be a pretrain.models.bert.config.BertConfig, got %r"
                            % type(config).__name__)
        if attention_mode not in ATTENTION_MODES:
            raise ValueError("attention_mode %r is unknown; use one of %s"
                             % (attention_mode, ", ".join(ATTENTION_MODES)))
        compute_type = tf.as_dtype(compute_type)
        if compute_type not in (tf.float32, tf.bfloat16, tf.float16):
            raise ValueError("compute_type must be float32, bfloat16 or float16, got %s"
                             % compute_type.name)
        self.config = copy.deepcopy(config)
        self.compute_type = compute_type
        dropout_prob = config.hidden_dropout_prob if is_training else 0.0
        attention_dropout_prob = config.attention_probs_dropout_prob if is_training else 0.0

        batch_size, seq_length = get_shape_list(input_ids, 2, "input_ids")
        if input_mask is None:
            input_mask = tf.ones([batch_size, seq_length], dtype=tf.int32)
        if token_type_ids is None:
            token_type_ids = tf.zeros([batch_size, seq_length], dtype=tf.int32)

        _check_condition(config, condition)
        with layers.mixed_precision_scope(scope, compute_type, default_name="bert"):
            if condition is not None:
                condition = _map_condition(config, condition)
            with tf.variable_scope("embeddings"), layers.float32_reads():
                (embedding_output, self.embedding_table,
                 self.embedding_projection) = encoder.embeddings(
                     config, input_ids, token_type_ids, use_one_hot_embeddings, dropout_prob,
                     condition)
            if self.embedding_projection is not None:
                tf.add_to_collection(EMBEDDING_PROJECTION_COLLECTION,
                                     self.embedding_projection)
            self.embedding_output = embedding_output

            with tf.variable_scope("encoder"):
                self.attention_mask = attention.create_attention_mask(
                    input_mask, token_type_ids, attention_mode)
                encoder_layers = encoder.transformer(
                    tf.cast(embedding_output, compute_type), self.attention_mask,
                    config, dropout_prob, attention_dropout_prob, condition)
            sequence_output = encoder_layers[-1]

            with tf.variable_scope("pooler"):
                first_token = sequence_output[:, 0, :]
                pooled = layers.dense(first_token, config.hidden_size, "dense",
                                      activation=tf.tanh,
                                      initializer_range=config.initializer_range)

        self.all_encoder_layers = [tf.cast(t, tf.float32) for t in encoder_layers]
        self.sequence_output = self.all_encoder_layers[-1]
        self.pooled_output = tf.cast(pooled, tf.float32)

    def get_pooled_output(self):
        """[B, H] float32: tanh dense on the first token's final hidden state."""
        return self.pooled_output

    def get_sequence_output(self):
        """[B, S, H] float32: final encoder layer."""
        return self.sequence_output

    def get_all_encoder_layers(self):
        """List of num_hidden_layers tensors [B, S, H] float32."""
        return self.all_encoder_layers

    def get_embedding_output(self):
        """[B, S, W] float32 input of the encoder (W = E for Google ALBERT, else H)."""
        return self.embedding_output

    def get_embedding_table(self):
        """[V, E] float32 word-embedding variable (E = H for BERT), for tied output."""
        return self.embedding_table

    def get_embedding_projection(self):
        """[E, H] float32 `word_embeddings_2` (brightmart layout) or None."""
        return self.embedding_projection


def _check_condition(config, condition):
    size = config.layer_norm_cond_size
    if size is None:
        if condition is not None:
            raise ValueError("a condition was given but the model config has no "
                             "layer_norm_cond_size; set it to the condition's width C")
        return
    if condition is None:
        raise ValueError("the model config sets layer_norm_cond_size=%d (conditional "
                         "LayerNorm): pass condition=[B, %d] float32" % (size, size))
    if condition.shape.ndims != 2 or condition.shape[-1] != size:
        raise ValueError("condition must have shape [B, %d] (layer_norm_cond_size), got %s"
                         % (size, condition.shape))


def _map_condition(config, condition):
    """[B, C] -> [B, C'] float32: the optional shared dense layer of conditional LayerNorm
    (`layer_norm_cond/dense`, C' = layer_norm_cond_hidden_size), else the condition itself."""
    condition = tf.cast(condition, tf.float32)
    if config.layer_norm_cond_hidden_size is None:
        return condition
    with tf.variable_scope("layer_norm_cond"), layers.float32_reads():
        return layers.dense(condition, config.layer_norm_cond_hidden_size, "dense",
                            activation=layers.get_activation(config.layer_norm_cond_hidden_act),
                            initializer_range=config.initializer_range)


class AlbertModel(BertModel):
    """ALBERT encoder (Google or brightmart layout); same arguments as BertModel."""

    def __init__(self, config, *args, **kwargs):
        if not isinstance(config, BertConfig) or not config.is_albert:
            raise ValueError("AlbertModel needs an ALBERT config (model_type \"albert\" "
                             "or an embedding_size field); got model_type=%r"
                             % getattr(config, "model_type", None))
        super(AlbertModel, self).__init__(config, *args, **kwargs)


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
    """google-research/bert's helper, for ported code: exact-name matches only.

    Returns (assignment_map {checkpoint name: variable name},
    initialized_variable_names {name: 1, name + ":0": 1}). Prefer
    `pretrain.checkpoints.checkpoint_loading.init_from_checkpoint`, which also checks
    shapes and reports what was not loaded.
    """
    checkpoint_names = {name for name, _ in tf.train.list_variables(init_checkpoint)}
    assignment_map, initialized = collections.OrderedDict(), {}
    for variable in tvars:
        name = variable.name.split(":")[0]
        if name in checkpoint_names:
            assignment_map[name] = name
            initialized[name] = 1
            initialized[name + ":0"] = 1
    return assignment_map, initialized
