"""Eval metrics every family builds on (graph code): token-prediction accuracy and loss,
the baselines the labels alone give, measured on the batches scored (a masked LM's unigram
plateau, a sentence head's chance level), and the masked-LM families' `metric_fn`.

A head's accuracy means something only beside its baseline: pretrain.training.
learning_check reads both back from eval_results.txt. A family's own metrics sit in its
folder (ModelFamily.eval_metrics).
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


def masked_lm_eval_metrics(outputs, features, use_sentence_head):
    """(metric_fn, its keyword arguments) of a masked-LM objective's outputs (the
    ModelFamily.eval_metrics of BERT and ALBERT)."""
    args = dict(masked_lm_example_loss=outputs["masked_lm_example_loss"],
                masked_lm_log_probs=outputs["masked_lm_log_probs"],
                masked_lm_ids=features["masked_lm_ids"],
                masked_lm_weights=features["masked_lm_weights"])
    if use_sentence_head:
        args.update(sentence_example_loss=outputs["sentence_example_loss"],
                    sentence_log_probs=outputs["sentence_log_probs"],
                    sentence_labels=features["next_sentence_labels"])
    if "span_boundary_log_probs" in outputs:
        args.update(span_boundary_example_loss=outputs["span_boundary_example_loss"],
                    span_boundary_log_probs=outputs["span_boundary_log_probs"])
    return metric_fn, args


def metric_fn(masked_lm_example_loss, masked_lm_log_probs, masked_lm_ids,
              masked_lm_weights, sentence_example_loss=None, sentence_log_probs=None,
              sentence_labels=None, span_boundary_example_loss=None,
              span_boundary_log_probs=None):
    """Eval metrics (tf.metrics pairs) for Estimator.

    Returns a dict with masked_lm_accuracy and masked_lm_loss (weighted by
    masked_lm_weights), plus, when the sentence head's tensors are given,
    next_sentence_accuracy and next_sentence_loss (google-research/bert's
    names, also for SOP) and the same two metrics as sentence_accuracy and
    sentence_loss; when the span boundary head's are given (pretrain.models.bert.span_boundary),
    span_boundary_accuracy and span_boundary_loss, against the same labels and weights.
    Each head's baseline from the evaluated labels themselves (below):
    masked_lm_unigram_accuracy / _loss / masked_lm_num_targets, and
    sentence_chance_accuracy / _loss / sentence_num_examples.
    """
    metrics = prediction_metrics("masked_lm", masked_lm_example_loss, masked_lm_log_probs,
                                  masked_lm_ids, masked_lm_weights)
    metrics.update(masked_lm_baseline_metrics(
        masked_lm_ids, masked_lm_weights, int(masked_lm_log_probs.shape[-1])))
    if sentence_log_probs is not None:
        sentence_predictions = tf.argmax(tf.reshape(sentence_log_probs, [-1, 2]),
                                         axis=-1, output_type=tf.int32)
        metrics["next_sentence_accuracy"] = tf.metrics.accuracy(
            labels=tf.reshape(sentence_labels, [-1]), predictions=sentence_predictions)
        metrics["next_sentence_loss"] = tf.metrics.mean(
            values=tf.reshape(sentence_example_loss, [-1]))
        metrics["sentence_accuracy"] = metrics["next_sentence_accuracy"]
        metrics["sentence_loss"] = metrics["next_sentence_loss"]
        metrics.update(sentence_baseline_metrics(sentence_labels))
    if span_boundary_log_probs is not None:
        metrics.update(prediction_metrics("span_boundary", span_boundary_example_loss,
                                           span_boundary_log_probs, masked_lm_ids,
                                           masked_lm_weights))
    return metrics


def prediction_metrics(prefix, example_loss, log_probs, label_ids, weights):
    """{prefix_accuracy, prefix_loss, prefix_loss_squared} of token predictions (any [B, P] /
    [B*P] shapes); the mean squared loss gives the loss's standard error (the learning
    check's comparison of a continued run with its start)."""
    vocab_size = log_probs.shape[-1]
    log_probs = tf.reshape(log_probs, [-1, vocab_size])
    predictions = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
    label_ids = tf.reshape(label_ids, [-1])
    weights = tf.reshape(weights, [-1])
    example_loss = tf.reshape(example_loss, [-1])
    return {
        prefix + "_accuracy": tf.metrics.accuracy(
            labels=label_ids, predictions=predictions, weights=weights),
        prefix + "_loss": tf.metrics.mean(values=example_loss, weights=weights),
        prefix + "_loss_squared": tf.metrics.mean(values=tf.square(example_loss),
                                                  weights=weights),
    }
