"""A fine-tuning run's --output_dir: a new run, a finished one (refused unless
--overwrite_output_dir), or an unfinished one, which the same settings resume: its
checkpoints save what the run computes (run_setup, in pretrain.training.input_state's
setup variable) with the weights and the input position."""
import os
import shutil

import tensorflow.compat.v1 as tf

from common import cli_options
from pretrain.training import input_state

# Settings that do not change what a run computes: a rerun may change them and resume.
NOT_IN_SETUP = ("output_dir", "overwrite_output_dir", "keep_checkpoints", "log_every_n_steps",
                "cache_dir")


def run_setup(settings):
    """The JSON its checkpoints save of what a run computes (input_state.setup_json): every
    setting but NOT_IN_SETUP, by flag."""
    return input_state.setup_json({}, {f"--{name}": value for name, value in settings.items()
                                       if name not in NOT_IN_SETUP})


def unfinished_run(settings):
    """(the latest checkpoint of an unfinished run in --output_dir or None, the settings it
    was made with that differ from these: ["--flag=new (was old)"])."""
    output_dir = settings["output_dir"]
    latest = tf.train.latest_checkpoint(output_dir)
    if latest is None or os.path.exists(os.path.join(output_dir, "results.json")):
        return None, []
    return latest, input_state.setup_changes(latest, run_setup(settings))


def prepare(settings):
    """Returns the step an unfinished run of the same settings in --output_dir is resumed
    from (None: a new run); refuses a finished run or an unfinished one of other settings
    unless --overwrite_output_dir, which deletes it."""
    output_dir = settings["output_dir"]
    latest, changed = unfinished_run(settings)
    finished = os.path.exists(os.path.join(output_dir, "results.json"))
    if finished or latest:
        if settings["overwrite_output_dir"]:
            shutil.rmtree(output_dir)
        elif finished:
            raise cli_options.UserError(
                f"{output_dir} already holds a fine-tuning run; pass --overwrite_output_dir or "
                "choose another --output_dir")
        elif changed:
            raise cli_options.UserError(
                f"{output_dir} holds an unfinished run with other settings: "
                f"{', '.join(changed)}; rerun with its settings to resume it, or pass "
                "--overwrite_output_dir to start over")
        else:
            os.makedirs(output_dir, exist_ok=True)
            return int(tf.train.load_variable(latest, "global_step"))
    os.makedirs(output_dir, exist_ok=True)
    return None
