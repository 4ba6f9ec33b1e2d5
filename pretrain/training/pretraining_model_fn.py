"""The pretraining model function: the config's family's objective (pretrain.models.
registry: encoder and heads) and eval metrics, the optimizer, and initial weights.

It returns a ModelSpec (pretrain.training.model_spec), which the session loop runs (with or
without a tf.distribute strategy) and pretrain.training.estimator_runtime hands to
`tf.estimator.Estimator` or, for `params["strategy"] == "tpu"`, to `TPUEstimator` (TPU or
`use_tpu=False`).
"""
import tensorflow.compat.v1 as tf
from absl import logging

from pretrain.checkpoints import checkpoint_compat, checkpoint_loading
from pretrain.models import registry
from pretrain.training import lr_schedules, mixed_precision, optimization, training_hooks
from pretrain.training.model_spec import ModeKeys, ModelSpec


def pretraining_losses(bert_config, features, is_training, use_sentence_head,
                       use_one_hot_embeddings=False, compute_type=tf.float32,
                       span_boundary_objective=False):
    """The pretraining objective of the config's model family (pretrain.models.registry):
    a dict with `loss` and the tensors its eval metrics read."""
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


def _eval_metrics(bert_config, outputs, features, use_sentence_head):
    """(metric function, its keyword arguments) of the objective's outputs, as the config's
    family builds them (ModelFamily.eval_metrics; TPUEstimator passes a dict as keywords)."""
    build = registry.family_of(bert_config).eval_metric_inputs
    return build(outputs, features, use_sentence_head)


def _logged_losses(bert_config, outputs):
    """The losses the logs show (ModelFamily.logged_losses); build_train_op averages them
    over replicas (and the micro-batches of a gradient-accumulation cycle) in the
    gradients' all-reduce."""
    names = registry.family_of(bert_config).logged_losses
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
                     ignore_invalid_weights=False, bias_correction=False,
                     lr_scheduler=lr_schedules.Scheduler()):
    """Returns `model_fn(features, labels, mode, params)`.

    span_boundary_objective: add SpanBERT's SBO head (pretrain.models.bert.span_boundary); the
    input must carry masked_lm_span_left/right (input_fn_builder(span_boundaries=True)).
    ignore_invalid_weights: `init_checkpoint` variables of another shape keep their
    initial values (reported) instead of stopping the run.
    bias_correction: Adam's bias correction (pretrain.training.optimization.build_train_op).
    lr_scheduler: the learning-rate schedule's type (pretrain.training.lr_schedules).

    `num_train_steps`/`num_warmup_steps` count optimizer updates; with
    gradient accumulation the Estimator runs k times as many micro-steps.
    Logging scalars are registered for `training_hooks.PretrainingLoggingHook`
    (pass one to `trainer.train(hooks=...)`) and written as summaries.
    """
    compute_type = mixed_precision.compute_dtype(precision)

    def model_fn(features, labels, mode, params, config=None):
        del labels
        params = params or {}
        on_tpu_estimator = params.get("strategy") == "tpu"
        use_tpu = on_tpu_estimator and bool(params.get("use_tpu", False))
        is_training = mode == ModeKeys.TRAIN
        for name in sorted(features):
            logging.debug("feature %s: %s %s", name, features[name].shape, features[name].dtype)
        outputs = pretraining_losses(bert_config, features, is_training, use_sentence_head,
                                     use_one_hot_embeddings or use_tpu, compute_type,
                                     span_boundary_objective=span_boundary_objective)
        scaffold_fn = None
        restored = (tf.train.latest_checkpoint(config.model_dir)
                    if config is not None and config.model_dir else None)
        if init_checkpoint and restored:
            # The trainer restores every variable from model_dir's checkpoint: the
            # --init_checkpoint would not be what this graph runs with.
            logging.info("%s graph: weights restored from %s (--init_checkpoint is not loaded)",
                         "training" if is_training else "eval", restored)
        elif init_checkpoint:
            heading = ("Initial weights for training" if is_training else
                       "Weights evaluated (the starting checkpoint, nothing trained yet)")
            scaffold_fn = _init_from_checkpoint(init_checkpoint, use_tpu, ignore_invalid_weights,
                                                heading)

        if mode == ModeKeys.TRAIN:
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
                use_tpu=use_tpu, log_scalars=_logged_losses(bert_config, outputs),
                bias_correction=bias_correction, lr_scheduler=lr_scheduler)
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
                return ModelSpec(mode, loss=outputs["loss"], train_op=train_op,
                                 scaffold_fn=scaffold_fn)
            return ModelSpec(
                mode, loss=_reported_loss(outputs["loss"], params.get("num_replicas", 1)),
                train_op=train_op)

        if mode == ModeKeys.EVAL:
            return ModelSpec(mode, loss=outputs["loss"], scaffold_fn=scaffold_fn,
                             eval_metrics=_eval_metrics(bert_config, outputs, features,
                                                        use_sentence_head))
        raise ValueError(f"pretraining model_fn supports TRAIN and EVAL, not {mode}")

    return model_fn
