"""The fine-tuning model function: encoder + the task's head, for every task.

The encoder (`pretrain.models.registry.create_encoder`, BERT/RoBERTa, ALBERT or
ELECTRA's discriminator by config) and the head come from `task.build_model`; the
encoder's variables keep their pretraining names, so a starting point is nothing
(random initialisation), a released Google / brightmart / ymcui / google-research
electra checkpoint, a `run_pretraining` output (of ELECTRA: its generator and
pretraining heads are left unused) or another fine-tuning run, loaded through
`pretrain.checkpoints.checkpoint_loading.init_from_checkpoint` (which prints its table of
loaded / missing / unused variables). Training uses AdamW with linear warmup
and decay (`pretrain.training.optimization.create_optimizer`).
"""
import tensorflow.compat.v1 as tf

from pretrain.training import mixed_precision, optimization
from pretrain.training.model_spec import ModeKeys, ModelSpec


def model_fn_builder(task, bert_config, num_labels, init_checkpoint, learning_rate,
                     num_train_steps, num_warmup_steps, optimizer="adamw", log_fn=print,
                     init_summary=None, training_hooks_fn=None, ignore_invalid_weights=False,
                     bias_correction=False, precision="fp32"):
    """Returns a model function (pretrain.training.model_spec) for TRAIN / EVAL / PREDICT.

    Features: the task's records (finetune.features.input_fn_builder): input_ids,
    input_mask, segment_ids int32 [B, S], plus label_weights float32 [B, S] for
    tagging and condition float32 [B, C] for a conditional model. Labels: int32
    [B] (sequence tasks) or [B, S] (tagging), None when predicting.
    init_summary: optional dict filled (when training starts) with the checkpoint
    that was loaded and the counts of loaded / missing / unused variables.
    training_hooks_fn: optional callable(loss tensor) -> [SessionRunHook] for TRAIN.
    ignore_invalid_weights: variables whose shape differs from the checkpoint's keep
    their initial values (listed in init_summary["shape_mismatches"]).
    bias_correction: Adam's bias correction (pretrain.training.optimization.build_train_op).
    precision: fp32 | bf16 | fp16, the encoder's compute type as in pretraining
    (pretrain.training.mixed_precision: variables, heads and loss stay float32; fp16 trains
    with dynamic loss scaling).
    EVAL: `mean_loss`. PREDICT: the task's outputs (`probabilities` [B, N] or
    `tag_probabilities` [B, S, N]).
    """
    compute_type = mixed_precision.compute_dtype(precision)

    def model_fn(features, labels, mode, params=None, config=None):
        del params, config
        is_training = mode == ModeKeys.TRAIN
        if mode == ModeKeys.PREDICT:
            labels = None
        loss, per_example_loss, outputs = task.build_model(bert_config, is_training, features,
                                                           labels, num_labels, compute_type)
        if init_checkpoint and is_training:
            # Weights only; when model_dir already holds a checkpoint the
            # trainer restores that instead and these initialisers are unused.
            # only when needed
            from pretrain.checkpoints.checkpoint_loading import init_from_checkpoint
            report = init_from_checkpoint(init_checkpoint, tf.trainable_variables(),
                                          log_fn=log_fn,
                                          allow_shape_mismatch=ignore_invalid_weights)
            if init_summary is not None:
                init_summary.update(
                    checkpoint=report.checkpoint, loaded=len(report.loaded),
                    missing_in_checkpoint=list(report.missing_in_checkpoint),
                    unused_in_checkpoint=len(report.unused_in_checkpoint),
                    shape_mismatches=[name for name, _, _ in report.shape_mismatches])

        if mode == ModeKeys.TRAIN:
            scaler = (mixed_precision.DynamicLossScale()
                      if mixed_precision.needs_loss_scaling(precision) else None)
            train_op = optimization.create_optimizer(
                loss, learning_rate, num_train_steps, num_warmup_steps, optimizer=optimizer,
                bias_correction=bias_correction, loss_scaler=scaler)
            hooks = training_hooks_fn(loss) if training_hooks_fn else []
            return ModelSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)
        if mode == ModeKeys.EVAL:
            return ModelSpec(mode, loss=loss, eval_metrics=(
                lambda per_example_loss: {"mean_loss": tf.metrics.mean(per_example_loss)},
                {"per_example_loss": per_example_loss}))
        return ModelSpec(mode, predictions=outputs)

    return model_fn
