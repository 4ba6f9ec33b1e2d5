"""Fine-tuning heads on the encoder: one label per sequence, or one tag per token.

Both are a single dense layer in float32 (inputs are cast), with dropout of
`hidden_dropout_prob` while training, initialised as google-research/bert's
run_classifier initialises its head:

  sequence: pooled output [B, H] -> `classifier/output_weights` [N, H],
            `classifier/output_bias` [N] -> logits [B, N]
  token:    sequence output [B, S, H] -> `token_classifier/output_weights` [N, H],
            `token_classifier/output_bias` [N] -> logits [B, S, N]

The names are the contract with the exports: transformers'
BertForSequenceClassification / BertForTokenClassification call both
`classifier.weight` / `classifier.bias` (pretrain.interop.hf_weights maps them).
"""
import tensorflow.compat.v1 as tf

from pretrain.models import layers

CLASSIFIER_SCOPE = "classifier"
TOKEN_CLASSIFIER_SCOPE = "token_classifier"


def _output_variables(config, num_labels, width):
    weights = tf.get_variable("output_weights", [num_labels, width],
                              initializer=layers.create_initializer(config.initializer_range))
    bias = tf.get_variable("output_bias", [num_labels], initializer=tf.zeros_initializer())
    return weights, bias


def get_classifier_output(config, pooled_output, num_labels, is_training):
    """Sequence classification head under `classifier/`.

    Args:
      pooled_output: [B, H].
      num_labels: number of classes N.
      is_training: applies dropout (hidden_dropout_prob) to the pooled output.
    Returns:
      (logits [B, N], probabilities [B, N]), float32.
    """
    pooled = tf.cast(pooled_output, tf.float32)
    with tf.variable_scope(CLASSIFIER_SCOPE):
        output_weights, output_bias = _output_variables(config, num_labels,
                                                        int(pooled.shape[-1]))
        if is_training:
            pooled = layers.dropout(pooled, config.hidden_dropout_prob)
        logits = tf.nn.bias_add(tf.matmul(pooled, output_weights, transpose_b=True), output_bias)
        return logits, tf.nn.softmax(logits, axis=-1)


def get_token_classifier_output(config, sequence_output, num_labels, is_training):
    """Token classification (tagging) head under `token_classifier/`.

    Args:
      sequence_output: [B, S, H].
      num_labels: number of tags N.
      is_training: applies dropout (hidden_dropout_prob) to the sequence output.
    Returns:
      (logits [B, S, N], probabilities [B, S, N]), float32.
    """
    sequence = tf.cast(sequence_output, tf.float32)
    with tf.variable_scope(TOKEN_CLASSIFIER_SCOPE):
        output_weights, output_bias = _output_variables(config, num_labels,
                                                        int(sequence.shape[-1]))
        if is_training:
            sequence = layers.dropout(sequence, config.hidden_dropout_prob)
        logits = tf.nn.bias_add(tf.einsum("bsh,nh->bsn", sequence, output_weights), output_bias)
        return logits, tf.nn.softmax(logits, axis=-1)
