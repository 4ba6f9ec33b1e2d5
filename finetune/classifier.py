"""Sentence-pair classifier on the pretraining encoder, as an Estimator model_fn.

Graph: encoder (`pretrain.modeling.create_model`, BERT/RoBERTa or ALBERT by
config) -> pooled output [B, H] -> dropout (training only) -> logits [B, 2]
from `classifier/output_weights` [2, H] and `classifier/output_bias` [2]
(`pretrain.task_heads.get_classifier_output`) -> softmax cross-entropy. The encoder's variables keep their pretraining
names, so a starting point is any of: nothing (random initialisation), a
released Google / brightmart / ymcui checkpoint, or a `run_pretraining` output
directory (its latest checkpoint), loaded through
`pretrain.checkpoint_loading.init_from_checkpoint` (which prints its table of
loaded / missing / unused variables). Training uses AdamW with linear warmup
and decay (`pretrain.optimization.create_optimizer`).

A conditional model (config `layer_norm_cond_size` = C) reads the float32
feature `condition` [B, C] and passes it to the encoder's conditional
LayerNorm; without that field the graph is exactly the plain classifier's.
"""
import tensorflow.compat.v1 as tf

from pretrain import task_heads
from pretrain import modeling
from pretrain import optimization


def create_classifier(bert_config, is_training, input_ids, input_mask, segment_ids, labels,
                      num_labels=2, condition=None):
    """Builds the classifier graph.

    Args:
      input_ids, input_mask, segment_ids: int32 [B, S].
      labels: int32 [B] or None (prediction).
      condition: float32 [B, C] for a conditional config (layer_norm_cond_size = C),
        else None.
    Returns:
      (loss scalar or None, per_example_loss [B] or None, logits [B, num_labels],
       probabilities [B, num_labels]).
    """
    model = modeling.create_model(bert_config, is_training, input_ids,
                                  input_mask=input_mask, token_type_ids=segment_ids,
                                  condition=condition)
    logits, probabilities = task_heads.get_classifier_output(
        bert_config, model.get_pooled_output(), num_labels, is_training)
    if labels is None:
        return None, None, logits, probabilities
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot * log_probs, axis=-1)  # [B]
    loss = tf.reduce_mean(per_example_loss)
    return loss, per_example_loss, logits, probabilities


def model_fn_builder(bert_config, init_checkpoint, learning_rate, num_train_steps,
                     num_warmup_steps, num_labels=2, optimizer="adamw", log_fn=print,
                     init_summary=None, training_hooks_fn=None, ignore_invalid_weights=False):
    """Returns an Estimator model_fn for TRAIN / EVAL / PREDICT.

    init_summary: optional dict filled (when training starts) with the
    checkpoint that was loaded and the counts of loaded / missing / unused
    variables, for the results file.
    training_hooks_fn: optional callable(loss tensor) -> [SessionRunHook] for TRAIN.
    ignore_invalid_weights: variables whose shape differs from the checkpoint's keep
    their initial values (listed in init_summary["shape_mismatches"]) instead of stopping.

    Features: input_ids, input_mask, segment_ids int32 [B, S]; condition float32
    [B, C] exactly when bert_config.layer_norm_cond_size = C (the encoder checks;
    lcqmc_data.input_fn_builder with condition_size yields it).
    EVAL metrics: `accuracy`, `mean_loss` (cross-entropy averaged over dev examples).
    PREDICT outputs: `probabilities` [B, 2], `predictions` [B] (argmax).
    """
    def model_fn(features, labels, mode, params=None):
        is_training = mode == tf.estimator.ModeKeys.TRAIN
        if labels is not None:
            labels = tf.reshape(labels, [-1])
        loss, per_example_loss, logits, probabilities = create_classifier(
            bert_config, is_training, features["input_ids"], features["input_mask"],
            features["segment_ids"], labels, num_labels, condition=features.get("condition"))
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)

        if init_checkpoint and is_training:
            # Weights only; when model_dir already holds a checkpoint the
            # Estimator restores that instead and these initialisers are unused.
            from pretrain.checkpoint_loading import init_from_checkpoint  # only when needed
            report = init_from_checkpoint(init_checkpoint, tf.trainable_variables(),
                                          log_fn=log_fn,
                                          allow_shape_mismatch=ignore_invalid_weights)
            if init_summary is not None:
                init_summary.update(
                    checkpoint=report.checkpoint, loaded=len(report.loaded),
                    missing_in_checkpoint=list(report.missing_in_checkpoint),
                    unused_in_checkpoint=len(report.unused_in_checkpoint),
                    shape_mismatches=[name for name, _, _ in report.shape_mismatches])

        if mode == tf.estimator.ModeKeys.TRAIN:
            train_op = optimization.create_optimizer(
                loss, learning_rate, num_train_steps, num_warmup_steps, optimizer=optimizer)
            hooks = training_hooks_fn(loss) if training_hooks_fn else []
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                              training_hooks=hooks)
        if mode == tf.estimator.ModeKeys.EVAL:
            metrics = {
                "accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions),
                "mean_loss": tf.metrics.mean(per_example_loss),
            }
            return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
        return tf.estimator.EstimatorSpec(
            mode, predictions={"probabilities": probabilities, "predictions": predictions})

    return model_fn
