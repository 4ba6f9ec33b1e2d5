"""The eval pass's baselines, measured on the batches it scores (graph code).

A head's accuracy means something only beside what its labels alone give:
the masked LM's unigram plateau and the sentence head's chance level.
pretrain.training.learning_check reads these numbers back from
eval_results.txt and says whether a checkpoint has left them.
"""
import tensorflow.compat.v1 as tf


def label_distribution_metrics(label_ids, weights, num_classes, accuracy_name, loss_name,
                               count_name):
    """tf.metrics-style (value, update_op) pairs of the labels' own baseline.

    Args:
      label_ids: int labels of any shape, values in [0, num_classes).
      weights: float weights of the same number of elements (0 = padding), or None.
      num_classes: V, the number of label values.
    Returns:
      {accuracy_name: majority share, loss_name: entropy (nats), count_name: total
      weight}, each a scalar metric accumulated over every evaluated batch.
    """
    label_ids = tf.reshape(tf.cast(label_ids, tf.int32), [-1])
    if weights is None:
        weights = tf.ones_like(label_ids, dtype=tf.float32)
    weights = tf.reshape(tf.cast(weights, tf.float32), [-1])
    batch_counts = tf.math.unsorted_segment_sum(weights, label_ids, num_classes)   # [V]
    # The mean of the per-batch counts is proportional to the total counts, which is
    # all a distribution needs; tf.metrics keeps it right across replicas and hosts.
    mean_counts, counts_update = tf.metrics.mean_tensor(batch_counts)
    # tf.metrics has no plain sum; the weighted count of "true positives" of an
    # always-true prediction is the sum of the weights.
    always = tf.ones_like(weights, dtype=tf.bool)
    total, total_update = tf.metrics.true_positives(always, always, weights=weights)
    probabilities = mean_counts / tf.maximum(tf.reduce_sum(mean_counts), 1e-12)
    entropy = -tf.reduce_sum(tf.math.multiply_no_nan(
        tf.math.log(probabilities), probabilities))
    return {accuracy_name: (tf.reduce_max(probabilities), counts_update),
            loss_name: (entropy, counts_update),
            count_name: (total, total_update)}


def masked_lm_baseline_metrics(masked_lm_ids, masked_lm_weights, vocab_size):
    """The masked labels' unigram baseline: masked_lm_unigram_{accuracy,loss}, _num_targets."""
    return label_distribution_metrics(masked_lm_ids, masked_lm_weights, vocab_size,
                                      "masked_lm_unigram_accuracy", "masked_lm_unigram_loss",
                                      "masked_lm_num_targets")


def sentence_baseline_metrics(sentence_labels):
    """The sentence labels' chance level: sentence_chance_{accuracy,loss}, _num_examples."""
    return label_distribution_metrics(sentence_labels, None, 2, "sentence_chance_accuracy",
                                      "sentence_chance_loss", "sentence_num_examples")


def replaced_token_baseline_metrics(disc_labels, input_mask):
    """ELECTRA's discriminator against always answering "original" on the real tokens:
    disc_majority_accuracy (the original tokens' share), disc_label_entropy,
    disc_num_tokens. disc_labels, input_mask: [B, S]."""
    return label_distribution_metrics(disc_labels, input_mask, 2, "disc_majority_accuracy",
                                      "disc_label_entropy", "disc_num_tokens")

