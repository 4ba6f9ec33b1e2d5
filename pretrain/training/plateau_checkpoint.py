"""The plateau checkpoint of a warmup_stable_decay run, and a later run that starts from it.

A warmup_stable_decay run (pretrain.training.lr_schedules) saves, when its stable phase
ends (global step (N - D) * k: every warmup and stable update applied, none of the
decay's), a full checkpoint into OUTPUT_DIR/plateau/: weights, optimizer slots, global
step, loss scale, and the input position and seed (pretrain.training.input_state), with
the model's config and vocab beside it. Its own Saver writes it, so --keep_checkpoint_max
never rotates it away; it is written under OUTPUT_DIR/.plateau.incomplete-PID and
renamed, so a kill leaves no half-written plateau under its final name (a plateau saved
again replaces the old one only once complete).

`--resume_from=OLD/plateau` starts a new --output_dir from it (`start_from`): its
checkpoint files are copied in (OUTPUT_DIR/resumed_from.json says from where), and the
run resumes from them as from its own checkpoint, with the same checks (input_state:
another schedule needs --allow_schedule_change). A rerun of the same command continues
that run; another --resume_from into a run that has checkpoints is refused.
"""
import json
import os

import tensorflow.compat.v1 as tf
from absl import logging

from common.cli_options import UserError
from pretrain.checkpoints import checkpoint_assets
from pretrain.training import input_state, lr_schedules

PLATEAU_DIR = "plateau"
RESUMED_FROM_NAME = "resumed_from.json"
_MODEL_FILES = (checkpoint_assets.CONFIG_NAME, checkpoint_assets.VOCAB_NAME,
                checkpoint_assets.SPM_NAME)
RESUME_FROM_HELP = (
    "Start this new --output_dir from the checkpoint in this directory, with its optimizer "
    "state, step and input position: a warmup_stable_decay run's OUTPUT_DIR/plateau, to "
    "branch a decay from it or continue its stable phase (a larger --num_train_steps). "
    "Other schedule flags need --allow_schedule_change.")


def saver_hooks(output_dir, scheduler, num_train_steps, steps_per_update, distribution=None,
                use_tpu=False):
    """[PlateauSaverHook] for a warmup_stable_decay run ([] for the other schedules and
    for the workers that do not save checkpoints)."""
    update = lr_schedules.plateau_update(scheduler, num_train_steps)
    if update is None or update <= 0:
        return []
    if use_tpu:
        logging.warning("--strategy=tpu: the plateau checkpoint is not saved (TPUEstimator "
                        "runs no hooks of ours); keep a checkpoint of step %d with "
                        "--save_checkpoints_steps", update)
        return []
    if distribution is not None and not distribution.extended.should_checkpoint:
        return []
    return [PlateauSaverHook(output_dir, update * int(steps_per_update))]


class PlateauSaverHook(tf.train.SessionRunHook):
    """Saves the full training state into OUTPUT_DIR/plateau/ when the global step reaches
    `plateau_step` (also when a rerun starts there and the plateau does not hold it yet)."""

    def __init__(self, output_dir, plateau_step):
        self._output_dir = output_dir
        self._plateau_step = int(plateau_step)
        self._done = False

    def begin(self):
        self._global_step = tf.train.get_global_step()
        # Beside the trainer's Saver, not it: its rotation would count (and delete) this one.
        self._saver = tf.train.Saver(sharded=True, max_to_keep=None, save_relative_paths=True)

    def after_create_session(self, session, coord):
        del coord
        step = int(session.run(self._global_step))
        self._done = step > self._plateau_step
        if step == self._plateau_step:
            saved = tf.train.latest_checkpoint(os.path.join(self._output_dir, PLATEAU_DIR))
            if saved is None or not saved.endswith(f"-{step}"):
                self._save(session, step)
            self._done = True

    def before_run(self, run_context):
        return None if self._done else tf.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        # The step read with the train op may be before or after its increment.
        if self._done or run_values.results + 1 < self._plateau_step:
            return
        step = int(run_context.session.run(self._global_step))
        if step >= self._plateau_step:
            self._done = True
            if step == self._plateau_step:
                self._save(run_context.session, step)

    def _save(self, session, step):
        input_state.InputPositionListener().before_save(session, step)  # the input position
        final = os.path.join(self._output_dir, PLATEAU_DIR)
        staging = os.path.join(self._output_dir, f".{PLATEAU_DIR}.incomplete-{os.getpid()}")
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
        tf.io.gfile.makedirs(staging)
        prefix = self._saver.save(session, os.path.join(staging, "model.ckpt"),
                                  global_step=step, write_meta_graph=False)
        for name in _MODEL_FILES:
            model_file = os.path.join(self._output_dir, name)
            if tf.io.gfile.exists(model_file):
                tf.io.gfile.copy(model_file, os.path.join(staging, name))
        if tf.io.gfile.exists(final):
            previous = os.path.join(self._output_dir, f".{PLATEAU_DIR}.previous-{os.getpid()}")
            tf.io.gfile.rename(final, previous, overwrite=True)
        tf.io.gfile.rename(staging, final)
        # The old plateau, and what killed saves left (a kill between the two renames leaves
        # the old one whole under .plateau.previous-PID until the next save succeeds).
        for leftover in tf.io.gfile.glob(os.path.join(self._output_dir, f".{PLATEAU_DIR}.*")):
            tf.io.gfile.rmtree(leftover)
        logging.info("plateau checkpoint (step %d, the end of the stable phase): %s; branch a "
                     "decay from it or continue its stable phase with --resume_from=%s",
                     step, os.path.join(final, os.path.basename(prefix)), final)


def start_from(resume_from, output_dir, check=None):
    """Copies the latest checkpoint of `resume_from` into `output_dir` as its starting point
    (and records where from), unless output_dir already started from it (a rerun); returns
    `check(model_dir)` (None without), called first on the directory whose checkpoint the run
    starts from: `resume_from` when it is to be copied (nothing is copied if check raises),
    else output_dir. A UserError when `resume_from` holds no checkpoint, or output_dir holds
    another run's."""
    check = check or (lambda model_dir: None)
    if not resume_from:
        return check(output_dir)
    record = os.path.join(output_dir, RESUMED_FROM_NAME)
    existing = tf.train.latest_checkpoint(output_dir)
    if existing is not None:
        if _same_place(_recorded_source(record), resume_from):
            logging.info("--output_dir=%s started from --resume_from=%s before: it continues "
                         "from its own latest checkpoint, %s", output_dir, resume_from, existing)
            return check(output_dir)
        raise UserError(f"--resume_from={resume_from}: --output_dir={output_dir} already holds "
                        f"a run ({existing}); give a new --output_dir, or leave --resume_from "
                        "out to continue that run")
    source = (tf.train.latest_checkpoint(resume_from)
              if tf.io.gfile.isdir(resume_from) else None)
    if source is None:
        raise UserError(f"--resume_from={resume_from} holds no checkpoint: give the "
                        f"{PLATEAU_DIR}/ directory of a --lr_scheduler_type=warmup_stable_decay "
                        "run that reached the end of its stable phase")
    checked = check(resume_from)
    tf.io.gfile.makedirs(output_dir)
    with tf.io.gfile.GFile(record, "w") as writer:  # first: a kill while copying is redone
        writer.write(json.dumps({"resume_from": resume_from, "checkpoint": source}) + "\n")
    for path in tf.io.gfile.glob(source + ".*"):
        tf.io.gfile.copy(path, os.path.join(output_dir, os.path.basename(path)), overwrite=True)
    # Last: the state file makes the copy this directory's latest checkpoint.
    copied = os.path.join(output_dir, os.path.basename(source))  # relative if output_dir is
    tf.train.update_checkpoint_state(output_dir, copied, all_model_checkpoint_paths=[copied])
    logging.info("--output_dir=%s starts from %s (step %d, with its optimizer state and "
                 "input position)", output_dir, source,
                 int(tf.train.load_variable(source, "global_step")))
    return checked


def _recorded_source(record):
    """The --resume_from that `record` (resumed_from.json) names, or None."""
    if not tf.io.gfile.exists(record):
        return None
    with tf.io.gfile.GFile(record) as reader:
        return json.loads(reader.read())["resume_from"]


def _same_place(path_a, path_b):
    def normal(path):
        return path.rstrip("/") if "://" in path else os.path.abspath(path)
    return path_a is not None and normal(path_a) == normal(path_b)
