"""ELECTRA's eval metrics: the masked LM of its generator (pretrain.models.eval_metrics) and
google-research/electra's replaced-token metrics of the discriminator, with its baseline."""
import tensorflow.compat.v1 as tf

from pretrain.models import eval_metrics


def eval_metric_inputs(outputs, features, use_sentence_head):
    """(metric function, keyword arguments) of the objective's outputs (ModelFamily.eval_metrics)."""
    _, args = eval_metrics.masked_lm_eval_metrics(outputs, features, use_sentence_head)
    args.update({name: outputs[name] for name in METRIC_INPUTS})
    return metric_fn, args


def metric_fn(**inputs):
    """eval_metrics.metric_fn's metrics, and with the tensors named in METRIC_INPUTS:
    sampled_masked_lm_accuracy, disc_loss, disc_auc, disc_accuracy, disc_precision,
    disc_recall, and the discriminator's baseline (disc_majority_accuracy,
    disc_label_entropy, disc_num_tokens)."""
    replaced = {name: inputs.pop(name) for name in METRIC_INPUTS}
    metrics = eval_metrics.metric_fn(**inputs)
    metrics.update(replaced_token_metrics(inputs["masked_lm_ids"], inputs["masked_lm_weights"],
                                          **replaced))
    return metrics


METRIC_INPUTS = ("sampled_ids", "disc_example_loss", "disc_labels", "disc_probs",
                         "disc_preds", "input_mask")


def replaced_token_metrics(masked_lm_ids, masked_lm_weights, sampled_ids, disc_example_loss,
                            disc_labels, disc_probs, disc_preds, input_mask):
    """google-research/electra's eval metrics: the generator's samples at the masked
    positions, and the discriminator over real tokens ([B, S] inputs; AUC weighted by the
    mask, where upstream counts padding as negatives scored 0)."""
    real = tf.reshape(tf.cast(input_mask, tf.float32), [-1])
    labels = tf.reshape(disc_labels, [-1])
    preds = tf.reshape(disc_preds, [-1])
    metrics = replaced_token_baseline_metrics(disc_labels, input_mask)
    return dict(metrics, **{
        "sampled_masked_lm_accuracy": tf.metrics.accuracy(
            labels=tf.reshape(masked_lm_ids, [-1]), predictions=tf.reshape(sampled_ids, [-1]),
            weights=tf.reshape(masked_lm_weights, [-1])),
        "disc_loss": tf.metrics.mean(tf.reshape(disc_example_loss, [-1])),
        "disc_auc": tf.metrics.auc(labels, tf.reshape(disc_probs, [-1]), weights=real),
        "disc_accuracy": tf.metrics.accuracy(labels=labels, predictions=preds, weights=real),
        "disc_precision": tf.metrics.accuracy(
            labels=labels, predictions=preds, weights=tf.cast(preds, tf.float32) * real),
        "disc_recall": tf.metrics.accuracy(
            labels=labels, predictions=preds, weights=tf.cast(labels, tf.float32) * real),
    })


def replaced_token_baseline_metrics(disc_labels, input_mask):
    """ELECTRA's discriminator against always answering "original" on the real tokens:
    disc_majority_accuracy (the original tokens' share), disc_label_entropy,
    disc_num_tokens. disc_labels, input_mask: [B, S]."""
    return eval_metrics.label_distribution_metrics(disc_labels, input_mask, 2, "disc_majority_accuracy",
                                      "disc_label_entropy", "disc_num_tokens")

