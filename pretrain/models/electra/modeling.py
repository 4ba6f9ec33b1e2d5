"""ELECTRA's transformer: today's encoder (`pretrain.models.encoder`) under
google-research/electra's variable names, with the embeddings the two networks share.

    discriminator = ElectraEncoder(config.discriminator_config(), is_training, ids, mask,
                                   segments, embedding_size=config.embedding_width)
    generator = ElectraEncoder(config.generator_config(), is_training, masked_ids, mask,
                               segments, scope="generator",
                               embedding_size=config.embedding_width)

Variables (E = embedding_size, H = the network's hidden_size):
  electra/embeddings/{word_embeddings [V, E], token_type_embeddings [T, E],
      position_embeddings [P, E], LayerNorm/{gamma, beta} [E]}   shared by both networks
      (`<scope>/embeddings/...` of width H instead with untied_embeddings)
  <scope>/embeddings_project/{kernel [E, H], bias [H]}           only when E != H
  <scope>/encoder/layer_N/...                                    BERT's block names
There is no pooler: `get_pooled_output` is the first token's final hidden state.
`embeddings_project` starts from the truncated normal of every other dense layer here;
upstream's tf.layers.dense starts it from Glorot uniform (names and shapes are the same,
tests/pretrain/models/electra/test_electra_modeling.py checks them against upstream's own graph).
"""
import copy

import tensorflow.compat.v1 as tf

from pretrain.models import attention, encoder, layers
from pretrain.models.bert.config import BertConfig

SHARED_EMBEDDINGS_SCOPE = "electra"


class ElectraEncoder(object):
    """One of ELECTRA's two networks (the discriminator `electra`, or the `generator`)."""

    def __init__(self, config, is_training, input_ids, input_mask=None, token_type_ids=None,
                 use_one_hot_embeddings=False, scope=SHARED_EMBEDDINGS_SCOPE,
                 embedding_size=None, untied_embeddings=False, compute_type=tf.float32):
        """Builds the graph.

        Args:
          config: this network's `BertConfig` (`ElectraConfig.discriminator_config()` or
            `.generator_config()`).
          is_training: bool; False disables dropout.
          input_ids: [B, S] int32 token ids.
          input_mask: [B, S] int, 1 real / 0 padding (default all ones).
          token_type_ids: [B, S] int segment ids (default zeros).
          scope: "electra" (discriminator) or "generator".
          embedding_size: width E of the embedding tables (None: the network's H).
          untied_embeddings: own embeddings under `<scope>/embeddings` (width H) instead
            of the shared `electra/embeddings`.
          compute_type: tf.float32, tf.bfloat16 or tf.float16 (variables stay float32).
        """
        if not isinstance(config, BertConfig) or config.is_albert:
            raise TypeError("ElectraEncoder needs a BERT-type BertConfig (from ElectraConfig), "
                            "got %r" % (config,))
        compute_type = tf.as_dtype(compute_type)
        self.config = copy.deepcopy(config)
        dropout_prob = config.hidden_dropout_prob if is_training else 0.0
        attention_dropout_prob = config.attention_probs_dropout_prob if is_training else 0.0
        batch_size, seq_length = layers.get_shape_list(input_ids, 2, "input_ids")
        if input_mask is None:
            input_mask = tf.ones([batch_size, seq_length], dtype=tf.int32)
        if token_type_ids is None:
            token_type_ids = tf.zeros([batch_size, seq_length], dtype=tf.int32)
        width = config.hidden_size if untied_embeddings or embedding_size is None \
            else embedding_size

        embedding_scope = (scope if untied_embeddings else SHARED_EMBEDDINGS_SCOPE)
        with tf.variable_scope(embedding_scope + "/embeddings", reuse=tf.AUTO_REUSE), \
                layers.float32_reads():
            word_embeddings, self.embedding_table = encoder.embedding_lookup(
                input_ids, config.vocab_size, width, config.initializer_range,
                use_one_hot_embeddings)
            self.embedding_output = encoder.embedding_postprocessor(
                word_embeddings, token_type_ids, config, dropout_prob)  # [B, S, E]

        with layers.mixed_precision_scope(scope, compute_type):
            hidden = tf.cast(self.embedding_output, compute_type)
            if width != config.hidden_size:
                hidden = layers.dense(hidden, config.hidden_size, "embeddings_project",
                                      initializer_range=config.initializer_range)  # [B, S, H]
            with tf.variable_scope("encoder"):
                self.attention_mask = attention.create_attention_mask(
                    input_mask, token_type_ids, "bidirectional")
                encoder_layers = encoder.transformer(
                    hidden, self.attention_mask, config, dropout_prob, attention_dropout_prob)

        self.all_encoder_layers = [tf.cast(t, tf.float32) for t in encoder_layers]
        self.sequence_output = self.all_encoder_layers[-1]

    def get_sequence_output(self):
        """[B, S, H] float32: final encoder layer."""
        return self.sequence_output

    def get_pooled_output(self):
        """[B, H] float32: the first token's final hidden state (ELECTRA has no pooler)."""
        return self.sequence_output[:, 0]

    def get_all_encoder_layers(self):
        """List of num_hidden_layers tensors [B, S, H] float32."""
        return self.all_encoder_layers

    def get_embedding_output(self):
        """[B, S, E] float32: the embeddings before `embeddings_project`."""
        return self.embedding_output

    def get_embedding_table(self):
        """[V, E] float32 word-embedding variable (the generator's tied output layer)."""
        return self.embedding_table


class ElectraDiscriminator(ElectraEncoder):
    """The encoder of an ELECTRA checkpoint (its discriminator, scope `electra`), built from
    the ElectraConfig alone: what fine-tuning and the registry's create_encoder use."""

    def __init__(self, config, is_training, input_ids, input_mask=None, token_type_ids=None,
                 **options):
        super().__init__(config.discriminator_config(), is_training, input_ids, input_mask,
                         token_type_ids, embedding_size=config.embedding_width, **options)
