"""Evaluate on dev after every checkpoint save and keep the best one aside.

`DevEvaluationListener` is a `tf.train.CheckpointSaverListener`: the trainer's
`CheckpointSaverHook` (the Estimator's or the session loop's) calls it after each save
(every `save_checkpoints_steps` and at the end of training), so training runs as one
`train` call with one input pipeline (the shuffle order is never
restarted), and dev evaluation happens at exactly the saved steps.

Dev is scored by a callback (run_finetune predicts dev and computes the
task's metrics in Python, so any metric can choose). The save at step 0, before
any training, is scored for the curve but is never the best: its head is
random, and a dev score that luck puts above the trained checkpoints' would
report a model that was never fine-tuned. The best checkpoint of the trained
steps (highest `selection_metric`; the earliest step wins a tie) is copied to
`<model_dir>/best/`, weights only (no optimizer slots), with its own `checkpoint`
state file, a `best.json` and the files that describe the model (config, vocab,
task), so `keep_checkpoint_max` can stay small, the test set is scored with the
best weights, not the last ones, and best/ is a model directory by itself. After every
scoring the curve and the best so far are written to `dev_state.json`, which a rerun of a
killed run takes up (`resume`).
"""
import glob
import json
import os
import shutil
import time

import tensorflow.compat.v1 as tf

from common.file_utils import write_json_atomically
from pretrain.checkpoints import checkpoint_io, checkpoint_loading

BEST_DIR_NAME = "best"
# The curve, best and scoring times so far, rewritten after every scoring: what a rerun of a
# killed run takes up (DevEvaluationListener.resume).
STATE_FILE_NAME = "dev_state.json"


def copy_weights(checkpoint_prefix, target_dir):
    """Writes the weights of `checkpoint_prefix` (and global_step, which a predict graph
    restores) into an emptied target_dir, without optimizer slots: a third
    of the size for Adam. Returns the new prefix; target_dir's `checkpoint` state file
    names it, so `tf.train.latest_checkpoint(target_dir)` finds it."""
    if not os.path.exists(checkpoint_prefix + ".index"):
        raise FileNotFoundError(f"checkpoint {checkpoint_prefix} has no .index file to copy")
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    names = [name for name in reader.get_variable_to_shape_map()
             if name == "global_step" or not checkpoint_loading.is_training_state(name)]
    if os.path.isdir(target_dir):
        shutil.rmtree(target_dir)
    prefix = os.path.join(target_dir, os.path.basename(checkpoint_prefix))
    return checkpoint_io.write_checkpoint({name: reader.get_tensor(name) for name in names},
                                          prefix, write_state=True)


def remove_training_checkpoints(model_dir):
    """Deletes model_dir's model.ckpt-* files and its `checkpoint` state file (best/ stays):
    a finished run is read from results.json and best/. Returns the bytes freed."""
    freed = 0
    for path in glob.glob(os.path.join(model_dir, "model.ckpt-*")) + [
            os.path.join(model_dir, "checkpoint")]:
        if os.path.isfile(path):
            freed += os.path.getsize(path)
            os.remove(path)
    return freed


def disk_bytes(folder):
    """Total size of the files under `folder`."""
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(folder) for name in names)


class DevEvaluationListener(tf.train.CheckpointSaverListener):
    """Scores each saved checkpoint on dev and tracks the best.

    evaluate_fn: callable(checkpoint prefix) -> {metric: float, ..., "loss": float}.
    Attributes after training:
      curve: [{"step", <metrics>, "loss"}] in step order.
      best: {"step", <metrics>, "loss", "checkpoint"} or None.
      eval_seconds: total time spent evaluating; scoring_seconds: [seconds] per scoring.
      copy_seconds: total time spent copying to best/.
    """

    def __init__(self, trainer, evaluate_fn, model_dir, selection_metric="accuracy",
                 log_fn=print, extra_best_files=()):
        self._trainer = trainer
        self._evaluate_fn = evaluate_fn
        self._best_dir = os.path.join(model_dir, BEST_DIR_NAME)
        self._state_path = os.path.join(model_dir, STATE_FILE_NAME)
        self._metric = selection_metric
        self._log_fn = log_fn
        self._extra_best_files = tuple(extra_best_files)
        self.curve = []
        self.best = None
        self.eval_seconds = self.copy_seconds = 0.0
        self.scoring_seconds = []
        self.resumed_from = None

    def resume(self, step):
        """Takes up the curve and best of the run that saved `step` (its latest checkpoint):
        the scorings it recorded up to that step (a kill can fall between a save and its
        scoring: a later one is dropped and scored again when the rerun saves again)."""
        if not os.path.isfile(self._state_path):  # killed before its first scoring
            state = {"curve": [], "best": None, "scoring_seconds": []}
        else:
            with open(self._state_path, encoding="utf-8") as f:
                state = json.load(f)
        kept = [i for i, point in enumerate(state["curve"]) if point["step"] <= step]
        self.curve = [state["curve"][i] for i in kept]
        self.scoring_seconds = [state["scoring_seconds"][i] for i in kept]
        best = state["best"]
        self.best = best if best is not None and best["step"] <= step else None
        self.resumed_from = step

    def after_save(self, session, global_step_value):
        step = int(global_step_value)
        if any(point["step"] == step for point in self.curve):
            return  # the final save can repeat the last periodic one
        checkpoint = os.path.join(self._trainer.model_dir, f"model.ckpt-{step}")
        started = time.time()
        scores = self._evaluate_fn(checkpoint)
        self.scoring_seconds.append(time.time() - started)
        self.eval_seconds += self.scoring_seconds[-1]
        point = {"step": step, **{name: value for name, value in scores.items()
                                  if isinstance(value, float) or value is None}}
        self.curve.append(point)
        improved = step > 0 and (self.best is None or point[self._metric] > self.best[self._metric])
        if improved:
            started = time.time()
            best_prefix = copy_weights(checkpoint, self._best_dir)
            for path in self._extra_best_files:
                if os.path.isfile(path):
                    shutil.copy2(path, self._best_dir)
            self.best = dict(point, checkpoint=best_prefix)
            with open(os.path.join(self._best_dir, "best.json"), "w", encoding="utf-8") as f:
                json.dump(self.best, f, indent=1)
            self.copy_seconds += time.time() - started
        write_json_atomically(self._state_path, {"curve": self.curve, "best": self.best,
                                                 "scoring_seconds": self.scoring_seconds})
        shown = ", ".join(f"{name} {value:.4f}" for name, value in point.items()
                          if name != "step" and value is not None)
        if improved:
            verdict = "new best, copied to best/"
        elif self.best is None:
            verdict = "before training: not a candidate for best"
        else:
            verdict = (f"best {self._metric} {self.best[self._metric]:.4f} at step "
                       f"{self.best['step']}")
        self._log_fn(f"step {step}: dev {shown}  ({verdict})")
        return False  # never ask training to stop
