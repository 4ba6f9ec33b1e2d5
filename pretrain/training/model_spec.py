"""What a model function returns, on any TensorFlow: the contract between the model
functions (pretraining's, fine-tuning's) and the two things that run them.

A model function is `model_fn(features, labels, mode, params, config)`, as Estimator's
(`config` carries model_dir, keep_checkpoint_max and keep_checkpoint_every_n_hours); it
returns a ModelSpec. pretrain.training.training_loop runs it in a graph and session of
ours (every TensorFlow 2.x); pretrain.training.estimator_runtime turns a ModelSpec into an
EstimatorSpec or TPUEstimatorSpec for tf.estimator (TensorFlow <= 2.15 only). Neither
the model functions nor this module import tf.estimator.
"""
import collections


class ModeKeys:
    """The three modes, with tf.estimator.ModeKeys' values (so either side reads them)."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_FIELDS = ("mode", "loss", "train_op", "eval_metrics", "predictions", "training_hooks",
           "scaffold_fn")


class ModelSpec(collections.namedtuple("ModelSpec", _FIELDS)):
    """One mode's graph outputs.

    loss: scalar float32 tensor (TRAIN, EVAL).
    train_op: the op of one training step (TRAIN).
    eval_metrics: (metric_fn, {name: tensor}) with metric_fn(**tensors) -> {name: (value,
      update_op)}, TPUEstimator's form, which the Estimator path calls in place (EVAL).
    predictions: {name: tensor [B, ...]} (PREDICT).
    training_hooks: SessionRunHooks run with training (TRAIN).
    scaffold_fn: TPU only: a callable that loads initial weights inside the TPU program
      and returns a Scaffold (the initial weights are otherwise loaded in the model_fn).
    """

    def __new__(cls, mode, loss=None, train_op=None, eval_metrics=None, predictions=None,
                training_hooks=(), scaffold_fn=None):
        return super().__new__(cls, mode, loss, train_op, eval_metrics, predictions,
                               tuple(training_hooks or ()), scaffold_fn)

    def metric_ops(self):
        """{name: (value, update_op)} of eval_metrics ({} without)."""
        if self.eval_metrics is None:
            return {}
        metric_fn, tensors = self.eval_metrics
        return metric_fn(**tensors)
