"""The Estimator path (TensorFlow <= 2.15): our model functions under tf.estimator and
TPUEstimator. The only module that imports tf.estimator; pretrain.training.strategy.
build_trainer reaches it for --training_loop=estimator (the default where it exists).

`estimator_model_fn` turns a model function returning a ModelSpec
(pretrain.training.model_spec) into one returning an EstimatorSpec, or a TPUEstimatorSpec
for `params["strategy"] == "tpu"` (the ModelSpec's eval_metrics and scaffold_fn are
TPUEstimator's forms already). Its checkpoints hold the input position and the seed as the
session loop's do (pretrain.training.input_state); TPUEstimator's infeed does not.
"""
import tensorflow.compat.v1 as tf

from pretrain.models import random_draws
from pretrain.training import input_state


def estimator_model_fn(model_fn):
    """Estimator's `model_fn(features, labels, mode, params, config)` around ours."""
    def wrapped(features, labels, mode, params, config):
        spec = model_fn(features, labels, mode, params, config)
        if params.get("strategy") == "tpu":
            return tf.estimator.tpu.TPUEstimatorSpec(
                mode=mode, loss=spec.loss, train_op=spec.train_op,
                eval_metrics=spec.eval_metrics, predictions=spec.predictions,
                training_hooks=spec.training_hooks or None, scaffold_fn=spec.scaffold_fn)
        hooks = list(spec.training_hooks)
        # The input position, as the session loop's (not under a strategy: distributed input)
        if mode == tf.estimator.ModeKeys.TRAIN and not tf.distribute.has_strategy():
            hooks.append(input_state.track(random_draws.graph_seed(),
                                           input_state.only_iterator(), params))
        return tf.estimator.EstimatorSpec(
            mode=mode, loss=spec.loss, train_op=spec.train_op,
            eval_metric_ops=spec.metric_ops() or None, predictions=spec.predictions,
            training_hooks=hooks)
    return wrapped


class PositionSavingEstimator:
    """A tf.estimator.Estimator whose train() saves the input position with the checkpoints
    (input_state's listener); everything else is the Estimator's (Estimator refuses
    subclasses that override train)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def __getattr__(self, name):
        return getattr(self.estimator, name)

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        config = self.estimator.config
        saves = config.save_checkpoints_steps or config.save_checkpoints_secs
        # (the Estimator refuses listeners when nothing saves checkpoints)
        listeners = ([input_state.InputPositionListener()] if saves else []) + list(
            saving_listeners or ())
        self.estimator.train(input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
                             saving_listeners=listeners)
        return self


def run_config(strategy_name, settings):
    """Estimator's RunConfig (tpu: tf.estimator.tpu.RunConfig) of RunSettings."""
    common = dict(model_dir=settings.model_dir,
                  save_checkpoints_steps=settings.save_checkpoints_steps,
                  keep_checkpoint_max=settings.keep_checkpoint_max,
                  keep_checkpoint_every_n_hours=settings.keep_checkpoint_every_n_hours,
                  log_step_count_steps=settings.log_step_count_steps,
                  session_config=settings.session_config,
                  save_summary_steps=settings.save_summary_steps,
                  tf_random_seed=settings.tf_random_seed)
    if not settings.save_checkpoints_steps:  # no checkpoints, as in the session loop
        common["save_checkpoints_secs"] = None
    if strategy_name == "tpu":
        return tf.estimator.tpu.RunConfig(
            cluster=settings.tpu_cluster, **common,
            tpu_config=tf.estimator.tpu.TPUConfig(
                iterations_per_loop=settings.iterations_per_loop,
                num_shards=settings.num_tpu_cores,
                per_host_input_for_training=tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2))
    return tf.estimator.RunConfig(train_distribute=settings.distribution, **common)


def build_estimator(strategy_name, model_fn, settings, params=None, train_batch_size=None,
                    eval_batch_size=None, predict_batch_size=None, _tpu_estimator_on_cpu=False):
    """Estimator (or TPUEstimator(use_tpu=True) for `tpu`) with strategy facts in `params`.

    `_tpu_estimator_on_cpu` is a test device only (no flag reaches it): the
    TPUEstimator runs the model_fn on CPU, without TPU shards, so it checks
    the TPUEstimatorSpec plumbing and none of the TPU branches. TPUEstimator
    passes the per-call batch as `params["batch_size"]` and sets
    `params["use_tpu"]` itself.
    """
    params = dict(params or {}, training_loop="estimator")  # strategy.build_trainer's facts
    config = run_config(strategy_name, settings)
    if strategy_name == "tpu":
        use_tpu = not _tpu_estimator_on_cpu
        params.update(strategy="tpu", num_replicas=1, use_tpu=use_tpu)
        return tf.estimator.tpu.TPUEstimator(
            use_tpu=use_tpu, model_fn=estimator_model_fn(model_fn), config=config,
            params=params, train_batch_size=train_batch_size, eval_batch_size=eval_batch_size,
            predict_batch_size=predict_batch_size)
    return PositionSavingEstimator(tf.estimator.Estimator(
        model_fn=estimator_model_fn(model_fn), config=config, params=params))


def train_and_evaluate(estimator, train_input_fn, max_steps, hooks, eval_input_fn):
    """multi_worker: Estimator's train_and_evaluate (its server and cluster handling) with
    one eval batch at the end."""
    tf.estimator.train_and_evaluate(
        getattr(estimator, "estimator", estimator), tf.estimator.TrainSpec(train_input_fn, max_steps=max_steps, hooks=hooks),
        tf.estimator.EvalSpec(eval_input_fn, steps=1, start_delay_secs=0, throttle_secs=0))
