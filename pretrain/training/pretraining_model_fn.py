"""Estimator model_fn for pretraining: encoder + masked LM + optional SOP/NSP and SBO heads,
and the heads' eval metrics (`metric_fn`).

Works under `tf.estimator.Estimator` (with or without a tf.distribute
strategy) and `TPUEstimator` (TPU or `use_tpu=False`): it returns a
`TPUEstimatorSpec` when `params["strategy"] == "tpu"`, else an EstimatorSpec.
"""
import tensorflow.compat.v1 as tf
from absl import logging

from pretrain.checkpoints import checkpoint_compat, checkpoint_loading
from pretrain.models import registry
from pretrain.training import baseline_metrics, mixed_precision, optimization, training_hooks


def pretraining_losses(bert_config, features, is_training, use_sentence_head,
                       use_one_hot_embeddings=False, compute_type=tf.float32,
                       span_boundary_objective=False):
    """The pretraining objective of the config's model family (pretrain.models.registry):
    a dict with `loss` and the tensors `metric_fn` reads (for BERT and ALBERT, see
    pretrain.models.masked_lm_pretraining)."""
    objective = registry.family_of(bert_config).pretraining_losses
    return objective(bert_config, features, is_training, use_sentence_head,
                     use_one_hot_embeddings=use_one_hot_embeddings, compute_type=compute_type,
                     span_boundary_objective=span_boundary_objective)


def _init_from_checkpoint(init_checkpoint, use_tpu, ignore_invalid_weights=False,
                          heading="Initial weights"):
    """Weights only, through the name/shape-checked loader (shape mismatches stop the
    run unless `ignore_invalid_weights`, which keeps those variables' initial values).

    Its table, under `heading`, is printed by the first replica only (model_fn runs
    once per replica under MirroredStrategy).
    """
    tvars = tf.trainable_variables()
    context = tf.distribute.get_replica_context()
    replica_id = (tf.get_static_value(context.replica_id_in_sync_group)
                  if context is not None else None)
    log_fn = ((lambda table: print(f"{heading}:\n{table}")) if replica_id in (None, 0)
              else None)

    def load():
        checkpoint_loading.init_from_checkpoint(init_checkpoint, tvars=tvars, log_fn=log_fn,
                                                allow_shape_mismatch=ignore_invalid_weights)

    if use_tpu:
        def scaffold_fn():
            load()
            return tf.train.Scaffold()
        return scaffold_fn
    load()
    return None


def _eval_metrics(outputs, features, use_sentence_head):
    """(metric function, its keyword arguments) of the objective's outputs (TPUEstimator
    passes a dict as keywords too): permutation_lm_metrics for XLNet, else metric_fn."""
    if "plm_log_probs" in outputs:  # XLNet (pretrain.models.xlnet.pretraining)
        return permutation_lm_metrics, {name: outputs[name] for name in PLM_METRIC_INPUTS}
    return metric_fn, _metric_args(outputs, features, use_sentence_head)


PLM_METRIC_INPUTS = ("plm_example_loss", "plm_log_probs", "plm_ids", "plm_weights")


def permutation_lm_metrics(plm_example_loss, plm_log_probs, plm_ids, plm_weights):
    """XLNet's eval metrics ([B*P] inputs, log_probs [B*P, V]): plm_accuracy and plm_loss
    over the real predictions, and their unigram baseline plm_unigram_accuracy /
    plm_unigram_loss / plm_num_targets (pretrain.training.learning_check reads them)."""
    metrics = _prediction_metrics("plm", plm_example_loss, plm_log_probs, plm_ids, plm_weights)
    metrics.update(baseline_metrics.label_distribution_metrics(
        plm_ids, plm_weights, int(plm_log_probs.shape[-1]), "plm_unigram_accuracy",
        "plm_unigram_loss", "plm_num_targets"))
    return metrics


def _metric_args(outputs, features, use_sentence_head):
    """metric_fn's keyword arguments."""
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
    if "disc_labels" in outputs:  # ELECTRA (pretrain.models.electra.pretraining)
        args.update({name: outputs[name] for name in ELECTRA_METRIC_INPUTS})
    return args


ELECTRA_METRIC_INPUTS = ("sampled_ids", "disc_example_loss", "disc_labels", "disc_probs",
                         "disc_preds", "input_mask")


def _replaced_token_metrics(masked_lm_ids, masked_lm_weights, sampled_ids, disc_example_loss,
                            disc_labels, disc_probs, disc_preds, input_mask):
    """google-research/electra's eval metrics: the generator's samples at the masked
    positions, and the discriminator over real tokens ([B, S] inputs; AUC weighted by the
    mask, where upstream counts padding as negatives scored 0)."""
    real = tf.reshape(tf.cast(input_mask, tf.float32), [-1])
    labels = tf.reshape(disc_labels, [-1])
    preds = tf.reshape(disc_preds, [-1])
    metrics = baseline_metrics.replaced_token_baseline_metrics(disc_labels, input_mask)
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


def metric_fn(masked_lm_example_loss, masked_lm_log_probs, masked_lm_ids,
              masked_lm_weights, sentence_example_loss=None, sentence_log_probs=None,
              sentence_labels=None, span_boundary_example_loss=None,
              span_boundary_log_probs=None, **replaced_token_inputs):
    """Eval metrics (tf.metrics pairs) for Estimator.

    Returns a dict with masked_lm_accuracy and masked_lm_loss (weighted by
    masked_lm_weights), plus, when the sentence head's tensors are given,
    next_sentence_accuracy and next_sentence_loss (google-research/bert's
    names, also for SOP) and the same two metrics as sentence_accuracy and
    sentence_loss; when the span boundary head's are given (pretrain.models.span_boundary),
    span_boundary_accuracy and span_boundary_loss, against the same labels and weights.
    Each head's baseline from the evaluated labels themselves (pretrain.training.baseline_metrics):
    masked_lm_unigram_accuracy / _loss / masked_lm_num_targets, and
    sentence_chance_accuracy / _loss / sentence_num_examples. With ELECTRA's tensors
    (ELECTRA_METRIC_INPUTS as keywords): upstream's sampled_masked_lm_accuracy, disc_loss,
    disc_auc, disc_accuracy, disc_precision and disc_recall, and the discriminator's
    baseline: disc_majority_accuracy / disc_label_entropy / disc_num_tokens.
    """
    metrics = _prediction_metrics("masked_lm", masked_lm_example_loss, masked_lm_log_probs,
                                  masked_lm_ids, masked_lm_weights)
    metrics.update(baseline_metrics.masked_lm_baseline_metrics(
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
        metrics.update(baseline_metrics.sentence_baseline_metrics(sentence_labels))
    if span_boundary_log_probs is not None:
        metrics.update(_prediction_metrics("span_boundary", span_boundary_example_loss,
                                           span_boundary_log_probs, masked_lm_ids,
                                           masked_lm_weights))
    if replaced_token_inputs:
        metrics.update(_replaced_token_metrics(masked_lm_ids, masked_lm_weights,
                                               **replaced_token_inputs))
    return metrics


def _prediction_metrics(prefix, example_loss, log_probs, label_ids, weights):
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


pretraining_metrics = metric_fn


def _logged_losses(outputs):
    """The losses the logs show; build_train_op averages them over replicas (and the
    micro-batches of a gradient-accumulation cycle) in the gradients' all-reduce."""
    names = ("loss", "masked_lm_loss", "sentence_loss", "span_boundary_loss", "disc_loss",
             "plm_loss")
    return {name: outputs[name] for name in names if name in outputs}


def _reported_loss(loss, num_replicas):
    """The training loss Estimator logs (`loss = ...`, TensorBoard's `loss`).

    Under a strategy Estimator SUMs the replicas' values, so each replica
    reports its share of the mean: the log shows the global-batch mean, as
    one device would. It is computed on the host CPU, so Estimator's sum is a
    host-side (ring) collective, never a second NCCL launch beside the
    gradients' all-reduce (TF1 graphs cannot order two NCCL launches).
    """
    if num_replicas <= 1:
        return loss
    with tf.device("/device:CPU:0"):
        return tf.identity(loss) / float(num_replicas)


def model_fn_builder(bert_config, init_checkpoint=None, learning_rate=1e-4, num_train_steps=1000,
                     num_warmup_steps=0, use_one_hot_embeddings=False, optimizer="adamw",
                     poly_power=1.0, weight_decay_rate=0.01, gradient_accumulation_steps=1,
                     precision="fp32", use_sentence_head=True, span_boundary_objective=False,
                     ignore_invalid_weights=False, bias_correction=False):
    """Returns `model_fn(features, labels, mode, params)`.

    span_boundary_objective: add SpanBERT's SBO head (pretrain.models.span_boundary); the
    input must carry masked_lm_span_left/right (input_fn_builder(span_boundaries=True)).
    ignore_invalid_weights: `init_checkpoint` variables of another shape keep their
    initial values (reported) instead of stopping the run.
    bias_correction: Adam's bias correction (pretrain.training.optimization.build_train_op).

    `num_train_steps`/`num_warmup_steps` count optimizer updates; with
    gradient accumulation the Estimator runs k times as many micro-steps.
    Logging scalars are registered for `training_hooks.PretrainingLoggingHook`
    (pass one to `estimator.train(hooks=...)`) and written as summaries.
    """
    compute_type = mixed_precision.compute_dtype(precision)

    def model_fn(features, labels, mode, params, config=None):
        del labels
        params = params or {}
        on_tpu_estimator = params.get("strategy") == "tpu"
        use_tpu = on_tpu_estimator and bool(params.get("use_tpu", False))
        is_training = mode == tf.estimator.ModeKeys.TRAIN
        for name in sorted(features):
            logging.debug("feature %s: %s %s", name, features[name].shape, features[name].dtype)
        outputs = pretraining_losses(bert_config, features, is_training, use_sentence_head,
                                     use_one_hot_embeddings or use_tpu, compute_type,
                                     span_boundary_objective=span_boundary_objective)
        scaffold_fn = None
        restored = (tf.train.latest_checkpoint(config.model_dir)
                    if config is not None and config.model_dir else None)
        if init_checkpoint and restored:
            # The Estimator restores every variable from model_dir's checkpoint: the
            # --init_checkpoint would not be what this graph runs with.
            logging.info("%s graph: weights restored from %s (--init_checkpoint is not loaded)",
                         "training" if is_training else "eval", restored)
        elif init_checkpoint:
            heading = ("Initial weights for training" if is_training else
                       "Weights evaluated (the starting checkpoint, nothing trained yet)")
            scaffold_fn = _init_from_checkpoint(init_checkpoint, use_tpu, ignore_invalid_weights,
                                                heading)

        if mode == tf.estimator.ModeKeys.TRAIN:
            if config is not None:  # resuming from a checkpoint with the old slot names
                checkpoint_compat.install_legacy_slot_saver(
                    config.model_dir, config.keep_checkpoint_max,
                    config.keep_checkpoint_every_n_hours)
            scaler = None
            if mixed_precision.needs_loss_scaling(precision):
                scaler = mixed_precision.DynamicLossScale()
            train = optimization.build_train_op(
                outputs["loss"], learning_rate, num_train_steps, num_warmup_steps,
                optimizer=optimizer, poly_power=poly_power, weight_decay_rate=weight_decay_rate,
                gradient_accumulation_steps=gradient_accumulation_steps, loss_scaler=scaler,
                use_tpu=use_tpu, log_scalars=_logged_losses(outputs),
                bias_correction=bias_correction)
            train_op = train.train_op
            logged = dict(train.logged)
            logged.update(learning_rate=train.learning_rate, grad_norm=train.grad_norm,
                          grads_finite=train.grads_finite, update_applied=train.update_applied,
                          loss_scale=train.loss_scale)
            if not use_tpu:
                if params.get("num_replicas", 1) <= 1:
                    training_hooks.add_summaries(logged)
                training_hooks.register_log_tensors(logged)
            if on_tpu_estimator:
                return tf.estimator.tpu.TPUEstimatorSpec(
                    mode=mode, loss=outputs["loss"], train_op=train_op, scaffold_fn=scaffold_fn)
            return tf.estimator.EstimatorSpec(
                mode=mode, loss=_reported_loss(outputs["loss"], params.get("num_replicas", 1)),
                train_op=train_op)

        if mode == tf.estimator.ModeKeys.EVAL:
            metrics, metric_args = _eval_metrics(outputs, features, use_sentence_head)
            if on_tpu_estimator:
                return tf.estimator.tpu.TPUEstimatorSpec(
                    mode=mode, loss=outputs["loss"], scaffold_fn=scaffold_fn,
                    eval_metrics=(metrics, metric_args))
            return tf.estimator.EstimatorSpec(mode=mode, loss=outputs["loss"],
                                              eval_metric_ops=metrics(**metric_args))
        raise ValueError(f"pretraining model_fn supports TRAIN and EVAL, not {mode}")

    return model_fn
