"""Resume after SIGKILL: what a rerun of `python -m pretrain.run_pretraining` restores.

Restored from the last complete checkpoint: the global step, the weights and
AdamW's slots (`<var>/adam_m`, `<var>/adam_v`). NOT restored: the input
position. Estimator calls the input_fn again and initialises a fresh iterator
when the session starts (tensorflow_estimator's `_DatasetInitializerHook`), and
no iterator state is saved, so the rerun reads the data from its first record
again, as google-research/bert's run_pretraining.py does.

The data holds one distinct batch per step (shuffle_buffer=0, one file, fixed
seed: batch i feeds step i), so where the input resumes changes the result.
The killed-and-rerun training must equal, bit for bit, one uninterrupted run on
"spliced" data (batches 0..N-1, then 0..T-N-1 again, N = the checkpoint's
step), and must differ from an uninterrupted run on the original data.
"""
import glob
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from cli_testutil import module_command, tool_env
from pretrain import run_pretraining
from pretrain_testdata import make_examples, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 4
SAVE_EVERY = 2  # updates between checkpoints
MIN_KILL_STEP = 4  # kill once a checkpoint at or beyond this step exists
STEP_ATTEMPTS = (24, 240)  # --num_train_steps; the second if the first ends before the kill
RUN_TIMEOUT = 180  # seconds for one subprocess
# The killed, rerun and reference runs build the same graph (run_pretraining, same
# options) and run it on this machine's same CPU kernels (the environment passes
# TF_ENABLE_ONEDNN_OPTS / ONEDNN_MAX_CPU_ISA on to the tools) from bit-identical restored
# values: they agree bit for bit, no tolerance. An uninterrupted run on the original data
# differs from the rerun by more than this share of each tensor's largest magnitude.
DIFFERENT_DATA = 1e-2


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume_data")
    examples = make_examples(max(STEP_ATTEMPTS) * BATCH, max_seq_length=SEQ,
                             max_predictions_per_seq=PREDS, seed=5)
    return {"root": root, "cfg": tiny_config(root / "cfg.json"), "examples": examples,
            "distinct": write_records(root / "distinct.tfrecord", examples)}


def _options(data, input_file, output_dir, total_steps):
    """The run's options; the same dict feeds the CLI (as flags) and run()."""
    return dict(bert_config_file=data["cfg"], input_file=str(input_file),
                output_dir=str(output_dir), do_train=True, max_seq_length=SEQ,
                max_predictions_per_seq=PREDS, train_batch_size=BATCH, learning_rate=1e-3,
                num_train_steps=total_steps, num_warmup_steps=5,
                save_checkpoints_steps=SAVE_EVERY, keep_checkpoint_max=3,
                log_every_n_steps=1, random_seed=11, shuffle_buffer=0)


def _command(options):
    flags = [f"--{name}" if value is True else f"--{name}={value}"
             for name, value in options.items()]
    return module_command("pretrain.run_pretraining", *flags)


def _checkpoint_steps(output_dir):
    steps = []
    for path in glob.glob(os.path.join(output_dir, "model.ckpt-*.index")):
        steps.append(int(re.search(r"model\.ckpt-(\d+)\.index$", path).group(1)))
    return steps


def _train_and_kill(command, output_dir, log_path):
    """Starts `command`; SIGKILLs it once a checkpoint >= MIN_KILL_STEP is on disk.

    Returns True if it was killed while still training, False if it exited first.
    """
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, env=tool_env(), stdout=log, stderr=log)
    deadline = time.time() + RUN_TIMEOUT
    try:
        while process.poll() is None:
            if max(_checkpoint_steps(output_dir), default=0) >= MIN_KILL_STEP:
                process.send_signal(signal.SIGKILL)
                break
            if time.time() > deadline:
                pytest.fail(f"no checkpoint >= {MIN_KILL_STEP} after {RUN_TIMEOUT}s; "
                            f"log: {log_path}")
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait()
    if code == -signal.SIGKILL:
        return True
    assert code == 0, f"training failed (exit {code}); log: {log_path}"
    return False


def _global_step(checkpoint_prefix):
    return int(tf.train.load_checkpoint(checkpoint_prefix).get_tensor("global_step"))


def _model_tensors(output_dir):
    """{name: array} of the final checkpoint's model weights and their Adam slots."""
    reader = tf.train.load_checkpoint(output_dir)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("bert/", "cls/"))}


def _relative_difference(a, b):
    """max |a - b| / max |b| (b nonzero)."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_sigkill_then_rerun_resumes_step_and_optimizer_state_but_restarts_input(data, tmp_path):
    # 1. Train through the CLI and SIGKILL it after a checkpoint beyond step 0.
    for total in STEP_ATTEMPTS:
        killed_dir = tmp_path / f"killed_{total}"
        command = _command(_options(data, data["distinct"], killed_dir, total))
        if _train_and_kill(command, str(killed_dir), tmp_path / f"killed_{total}.log"):
            break
    else:
        pytest.fail(f"training finished before it could be killed even with {total} steps "
                    "(raise STEP_ATTEMPTS)")
    last_checkpoint = tf.train.latest_checkpoint(str(killed_dir))
    assert last_checkpoint, "the killed run left no complete checkpoint"
    resume_step = _global_step(last_checkpoint)
    assert last_checkpoint.endswith(f"model.ckpt-{resume_step}")
    assert 0 < resume_step < total, f"killed at step {resume_step} of {total}: not mid-training"
    # 2. The same command again: restores step N and trains exactly steps N..T-1. It runs
    #    while this process trains the two references (3.), which need nothing from it.
    rerun_log = tmp_path / "rerun.log"
    with open(rerun_log, "w", encoding="utf-8") as log:
        rerun = subprocess.Popen(command, env=tool_env(), stdout=subprocess.DEVNULL, stderr=log)
    try:
        spliced, straight = _references(data, tmp_path, resume_step, total)
        rerun_code = rerun.wait(timeout=RUN_TIMEOUT)
    finally:
        if rerun.poll() is None:
            rerun.kill()
            rerun.wait()
    rerun_stderr = rerun_log.read_text(encoding="utf-8")
    assert rerun_code == 0, rerun_stderr[-3000:]
    assert re.search(rf"Restoring parameters from \S*model\.ckpt-{resume_step}\b", rerun_stderr)
    # each log record printed once: absl's line, not also TensorFlow's `INFO:tensorflow:` copy
    assert len(re.findall(r"Restoring parameters from", rerun_stderr)) == 1
    assert not [line for line in rerun_stderr.splitlines() if line.startswith("INFO:tensorflow:")]
    trained_steps = [int(s) for s in re.findall(r"\] step (\d+): loss=", rerun_stderr)]
    assert trained_steps == list(range(resume_step, total))
    assert _global_step(tf.train.latest_checkpoint(str(killed_dir))) == total
    resumed = _model_tensors(str(killed_dir))
    weights = [n for n in resumed if not n.endswith(("/adam_m", "/adam_v"))]
    slots = [n for n in resumed if n.endswith(("/adam_m", "/adam_v"))]
    assert len(slots) == 2 * len(weights) > 0  # every weight has both Adam slots

    # 3. Reference: one uninterrupted run whose data repeats the first batches at
    #    step N, which is what a rerun reads if the input restarts from the beginning.
    assert sorted(spliced) == sorted(resumed)
    for name in sorted(resumed):  # weights and both Adam slots
        np.testing.assert_array_equal(resumed[name], spliced[name], err_msg=name)

    # The test can tell where input resumes: an uninterrupted run on the original
    # data (input position continued) ends far from the rerun.
    assert max(_relative_difference(resumed[n], straight[n]) for n in weights) > DIFFERENT_DATA
    assert max(_relative_difference(resumed[n], straight[n]) for n in slots) > DIFFERENT_DATA


def _references(data, tmp_path, resume_step, total):
    """The final tensors of two uninterrupted runs of `total` steps: on the data spliced at
    `resume_step` (batches 0..N-1, then 0..T-N-1 again), and on the original data."""
    examples = data["examples"]
    spliced_records = (examples[:resume_step * BATCH]
                       + examples[:(total - resume_step) * BATCH])
    spliced_file = write_records(tmp_path / "spliced.tfrecord", spliced_records)
    spliced_dir = tmp_path / "spliced"
    # Checkpoints and logs only at the end: their frequency does not change the math.
    quiet = dict(save_checkpoints_steps=total, log_every_n_steps=total)
    assert run_pretraining.run(dict(_options(data, spliced_file, spliced_dir, total), **quiet))[
        "global_step"] == total
    straight_dir = tmp_path / "straight"
    run_pretraining.run(dict(_options(data, data["distinct"], straight_dir, total), **quiet))
    return _model_tensors(str(spliced_dir)), _model_tensors(str(straight_dir))
