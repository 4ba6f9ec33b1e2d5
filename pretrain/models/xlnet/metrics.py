"""XLNet's eval metrics: the permutation LM's accuracy and loss and their unigram baseline."""
from pretrain.models import eval_metrics


def eval_metric_inputs(outputs, features, use_sentence_head):
    """(metric function, keyword arguments) of the objective's outputs (ModelFamily.eval_metrics)."""
    del features, use_sentence_head  # the permutation LM is XLNet's only head
    return permutation_lm_metrics, {name: outputs[name] for name in METRIC_INPUTS}


METRIC_INPUTS = ("plm_example_loss", "plm_log_probs", "plm_ids", "plm_weights")


def permutation_lm_metrics(plm_example_loss, plm_log_probs, plm_ids, plm_weights):
    """XLNet's eval metrics ([B*P] inputs, log_probs [B*P, V]): plm_accuracy and plm_loss
    over the real predictions, and their unigram baseline plm_unigram_accuracy /
    plm_unigram_loss / plm_num_targets (pretrain.training.learning_check reads them)."""
    metrics = eval_metrics.prediction_metrics("plm", plm_example_loss, plm_log_probs, plm_ids, plm_weights)
    metrics.update(eval_metrics.label_distribution_metrics(
        plm_ids, plm_weights, int(plm_log_probs.shape[-1]), "plm_unigram_accuracy",
        "plm_unigram_loss", "plm_num_targets"))
    return metrics
