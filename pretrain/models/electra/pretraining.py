"""ELECTRA's pretraining objective, replaced-token detection, on data_gen's masked records.

The generator predicts the record's masked positions (whatever masking data_gen recorded:
whole-word, n-gram, span, MacBERT); a token is sampled at each of them (Gumbel-max at
`temperature`, no gradient through the sample) and written into the original text; the
discriminator labels every real token replaced (1) or original (0). A sample equal to
the original token counts as original. Loss = gen_weight x MLM + disc_weight x the
discriminator's mean sigmoid cross-entropy over real tokens.

Variables besides the two ElectraEncoders' (google-research/electra's names):
  generator_predictions/{dense [Hg, E], LayerNorm, output_bias [V]}
  discriminator_predictions/{dense [H, H], dense_1 [H, 1]}
"""
import tensorflow.compat.v1 as tf

from pretrain.models import heads, layers, random_draws
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.electra.modeling import ElectraEncoder


def sample_replacements(logits, temperature, uniform):
    """Gumbel-max: one token per row, drawn from softmax(logits / temperature).

    logits: [N, V] float32; uniform: [N, V] float32 draws in [0, 1). Returns [N] int32,
    with no gradient."""
    gumbel = -tf.log(-tf.log(uniform + 1e-9) + 1e-9)
    return tf.stop_gradient(tf.argmax(logits / temperature + gumbel, axis=-1,
                                      output_type=tf.int32))


def scatter_at_positions(input_ids, positions, values, weights):
    """input_ids [B, S] with values [B, P] written at positions [B, P] where weights
    [B, P] > 0 (padding predictions write nothing). Returns [B, S] int32."""
    seq_length = layers.get_shape_list(input_ids, 2, "input_ids")[1]
    at = tf.one_hot(positions, seq_length, dtype=tf.int32)  # [B, P, S]
    at *= tf.cast(tf.cast(weights, tf.float32) > 0, tf.int32)[:, :, tf.newaxis]
    covered = tf.reduce_sum(at, axis=1) > 0  # [B, S]
    written = tf.reduce_sum(at * tf.cast(values, tf.int32)[:, :, tf.newaxis], axis=1)
    return tf.where(covered, written, tf.cast(input_ids, tf.int32))


def _generator_logits(config, generator, positions):
    """[B*P, V] float32 logits of the generator at the masked positions."""
    table = generator.get_embedding_table()  # [V, E] (E = generator width if untied)
    with tf.variable_scope("generator_predictions"):
        hidden = heads.gather_indexes(generator.get_sequence_output(), positions)
        hidden = layers.dense(hidden, layers.get_shape_list(table)[-1], "dense",
                              activation=layers.get_activation(config.hidden_act),
                              initializer_range=config.initializer_range)
        hidden = layers.layer_norm(hidden, "LayerNorm")
        output_bias = tf.get_variable("output_bias", [config.vocab_size],
                                      initializer=tf.zeros_initializer())
        return tf.nn.bias_add(tf.matmul(hidden, table, transpose_b=True), output_bias)


def _discriminator_logits(config, discriminator):
    """[B, S] float32 replaced-token logits."""
    with tf.variable_scope("discriminator_predictions"):
        hidden = layers.dense(discriminator.get_sequence_output(), config.hidden_size,
                              "dense", activation=layers.get_activation(config.hidden_act),
                              initializer_range=config.initializer_range)
        return tf.squeeze(layers.dense(hidden, 1, "dense_1",
                                       initializer_range=config.initializer_range), -1)


def electra_pretraining_losses(config, features, is_training, use_sentence_head=False,
                               use_one_hot_embeddings=False, compute_type=tf.float32,
                               span_boundary_objective=False, sampling_seed=None):
    """Builds generator, sampling and discriminator; returns a dict of loss and eval tensors.

    features: input_ids, input_mask, segment_ids [B, S]; masked_lm_positions,
    masked_lm_ids, masked_lm_weights [B, P] (data_gen's records). Training samples are
    stateless draws (pretrain.models.random_draws); sampling_seed is the op seed of an eval's.
    Keys: loss; masked_lm_loss, masked_lm_example_loss [B*P], masked_lm_log_probs [B*P, V]
    (the generator's); sampled_ids [B*P]; replaced_input_ids [B, S]; disc_labels [B, S]
    int32; disc_logits, disc_probs [B, S]; disc_preds [B, S] int32; disc_loss;
    disc_example_loss [B]; input_mask [B, S] float32.
    """
    if not isinstance(config, ElectraConfig):
        raise TypeError("the ELECTRA objective needs an ElectraConfig, got %r"
                        % type(config).__name__)
    if use_sentence_head or span_boundary_objective:
        raise ValueError("ELECTRA has no sentence or span boundary head: pretrain it without "
                         "--use_sentence_head / --span_boundary_objective (data_gen "
                         "--mode=roberta records)")
    input_ids = tf.cast(features["input_ids"], tf.int32)
    input_mask = tf.cast(features["input_mask"], tf.int32)
    segment_ids = tf.cast(features["segment_ids"], tf.int32)
    positions = tf.cast(features["masked_lm_positions"], tf.int32)
    label_ids = tf.cast(features["masked_lm_ids"], tf.int32)
    label_weights = tf.cast(features["masked_lm_weights"], tf.float32)
    untied = config.untied_generator_embeddings
    encoder_options = dict(use_one_hot_embeddings=use_one_hot_embeddings,
                           compute_type=compute_type)

    generator = ElectraEncoder(
        config.generator_config(), is_training, input_ids, input_mask, segment_ids,
        scope="generator", embedding_size=None if untied else config.embedding_width,
        untied_embeddings=untied, **encoder_options)
    generator_logits = _generator_logits(config, generator, positions)  # [B*P, V]
    mlm_loss, mlm_example_loss, mlm_log_probs = heads.weighted_prediction_loss(
        generator_logits, label_ids, label_weights)

    # Training draws are stateless (keyed by seed, step, replica: a resumed run samples what
    # an unkilled one does); an eval's differ from batch to batch.
    draw_shape = tf.shape(generator_logits)
    uniform = (random_draws.uniform(draw_shape) if is_training
               else tf.random.uniform(draw_shape, seed=sampling_seed))
    sampled = sample_replacements(generator_logits, config.temperature, uniform)
    sampled = tf.reshape(sampled, tf.shape(positions))  # [B, P]
    original_ids = scatter_at_positions(input_ids, positions, label_ids, label_weights)
    replaced_ids = scatter_at_positions(original_ids, positions, sampled, label_weights)
    disc_labels = tf.cast(tf.not_equal(replaced_ids, original_ids), tf.int32)  # [B, S]

    discriminator = ElectraEncoder(
        config.discriminator_config(), is_training, replaced_ids, input_mask, segment_ids,
        embedding_size=config.embedding_width, **encoder_options)
    disc_logits = _discriminator_logits(config, discriminator)  # [B, S]
    real = tf.cast(input_mask, tf.float32)
    token_losses = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(disc_labels, tf.float32), logits=disc_logits) * real
    disc_loss = tf.reduce_sum(token_losses) / (tf.reduce_sum(real) + 1e-6)
    disc_example_loss = tf.reduce_sum(token_losses, -1) / (tf.reduce_sum(real, -1) + 1e-6)
    return {
        "loss": config.gen_weight * mlm_loss + config.disc_weight * disc_loss,
        "masked_lm_loss": mlm_loss, "masked_lm_example_loss": mlm_example_loss,
        "masked_lm_log_probs": mlm_log_probs, "sampled_ids": tf.reshape(sampled, [-1]),
        "replaced_input_ids": replaced_ids, "disc_labels": disc_labels,
        "disc_logits": disc_logits, "disc_probs": tf.sigmoid(disc_logits),
        "disc_preds": tf.cast(disc_logits > 0, tf.int32), "disc_loss": disc_loss,
        "disc_example_loss": disc_example_loss, "input_mask": real,
    }
