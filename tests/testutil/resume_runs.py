"""Stopping a run at a chosen step, in process, and seeing what every step trained on: the
tests of exact resume (pretraining's and fine-tuning's)."""
import hashlib

import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.training import estimator_runtime
from pretrain.training.training_loop import TrainingLoop


class Crash(Exception):
    """Raised by the recorder after the crash step: the run stops without its final save."""


class Recorder(tf.train.SessionRunHook):
    """Hashes each step's batch (the training iterator's get_next outputs); raises Crash
    after step `crash_after` (global step numbering)."""

    def __init__(self, batches, crash_after=None):
        self._batches, self._crash_after = batches, crash_after

    def begin(self):
        get_next = [op for op in tf.get_default_graph().get_operations()
                    if op.type == "IteratorGetNext"]
        assert len(get_next) == 1, [op.name for op in get_next]
        self._outputs = list(get_next[0].outputs)
        self._step_tensor = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._step_tensor))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._outputs)

    def after_run(self, run_context, run_values):
        digest = hashlib.sha256()
        for value in run_values.results:
            digest.update(np.ascontiguousarray(value).tobytes())
        self._batches[self._step] = digest.hexdigest()
        if self._step == self._crash_after:
            raise Crash(self._step)
        self._step += 1


_TRAIN = {TrainingLoop: TrainingLoop.train,
          estimator_runtime.PositionSavingEstimator:
              estimator_runtime.PositionSavingEstimator.train}


def instrument(monkeypatch, batches, crash_after=None):
    """Both loops' train() run one recorder (this one) too."""
    def wrap(original):
        def train(self, input_fn, hooks=None, max_steps=None, saving_listeners=None, **kw):
            hooks = list(hooks or ()) + [Recorder(batches, crash_after)]
            return original(self, input_fn, hooks=hooks, max_steps=max_steps,
                            saving_listeners=saving_listeners or (), **kw)
        return train
    for cls, original in _TRAIN.items():
        monkeypatch.setattr(cls, "train", wrap(original))
