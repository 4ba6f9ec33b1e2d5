"""Resume after SIGKILL: a rerun of `python -m pretrain.run_pretraining` into the same
--output_dir continues the killed run exactly.

Restored from the last complete checkpoint: the global step, the weights, AdamW's slots,
the input position (tf.data's iterator state, saved in the same checkpoint) and the seed;
dropout masks are stateless draws keyed by seed and step. So a run SIGKILLed three times at
whatever step it has reached and rerun each time with the same command ends with the weights
and slots of the same command never killed, bit for bit: both build the same graph and run
it on this machine's same CPU kernels (the environment passes TF_ENABLE_ONEDNN_OPTS /
ONEDNN_MAX_CPU_ISA on to the tools) from bit-identical restored values. The command has no
--random_seed: the first run draws one and saves it, the reruns keep it, and the unkilled
run is given it. The data is shuffled
(a buffer of 16) and every batch distinct, so a rerun that read the data from its start
again, or drew other dropout masks, would end elsewhere (test_exact_resume.py checks the
batches step by step, in process, for every family).
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

from tests.testutil.cli_runs import module_command, tool_env
from tests.testutil.pretrain_data import make_examples, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 4
SAVE_EVERY = 2  # updates between checkpoints
KILL_AT = (4, 12, 20)  # kill once a checkpoint at or beyond this step exists (one per run)
TOTAL_STEPS = 100  # the last kill lands at 20; the rest is margin for a slow machine
RUN_TIMEOUT = 180  # seconds for one subprocess


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume_data")
    examples = make_examples(TOTAL_STEPS * BATCH, max_seq_length=SEQ,
                             max_predictions_per_seq=PREDS, seed=5)
    return {"cfg": tiny_config(root / "cfg.json", dropout=0.1),
            "distinct": write_records(root / "distinct.tfrecord", examples)}


def _options(data, input_file, output_dir, total_steps, **seed):
    """The run's options (no --random_seed unless given) as a dict."""
    return dict(bert_config_file=data["cfg"], input_file=str(input_file),
                output_dir=str(output_dir), do_train=True, max_seq_length=SEQ,
                max_predictions_per_seq=PREDS, train_batch_size=BATCH, learning_rate=1e-3,
                num_train_steps=total_steps, num_warmup_steps=5,
                save_checkpoints_steps=SAVE_EVERY, keep_checkpoint_max=3,
                log_every_n_steps=1, shuffle_buffer=16, **seed)


def _command(options):
    flags = [f"--{name}" if value is True else f"--{name}={value}"
             for name, value in options.items()]
    return module_command("pretrain.run_pretraining", *flags)


def _checkpoint_steps(output_dir):
    steps = []
    for path in glob.glob(os.path.join(output_dir, "model.ckpt-*.index")):
        steps.append(int(re.search(r"model\.ckpt-(\d+)\.index$", path).group(1)))
    return steps


def _train_and_kill(command, output_dir, log_path, kill_at):
    """Runs `command`; SIGKILLs it once a checkpoint >= kill_at is on disk. Returns the
    process's log; fails the test if it ended before it could be killed."""
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, env=tool_env(), stdout=log, stderr=log)
    deadline = time.time() + RUN_TIMEOUT
    try:
        while process.poll() is None:
            if max(_checkpoint_steps(output_dir), default=0) >= kill_at:
                process.send_signal(signal.SIGKILL)
                break
            if time.time() > deadline:
                pytest.fail(f"no checkpoint >= {kill_at} after {RUN_TIMEOUT}s; log: {log_path}")
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait()
    text = log_path.read_text(encoding="utf-8")
    assert code == -signal.SIGKILL, f"exit {code} before the kill at {kill_at}: {text[-3000:]}"
    return text


def _model_tensors(output_dir):
    """{name: array} of the final checkpoint's model weights and their Adam slots."""
    reader = tf.train.load_checkpoint(output_dir)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("bert/", "cls/"))}


def test_sigkilled_three_times_and_rerun_ends_with_the_unkilled_runs_weights(data, tmp_path):
    output_dir = tmp_path / "killed"
    # No --random_seed: the first run draws one and saves it with its checkpoints, and the
    # reruns of the same command continue with it (not with a new draw, nor from the start).
    command = _command(_options(data, data["distinct"], output_dir, TOTAL_STEPS))
    straight_run, resumed_at = None, []
    for attempt, kill_at in enumerate(KILL_AT):
        log = _train_and_kill(command, str(output_dir), tmp_path / f"run{attempt}.log",
                              kill_at)
        if attempt == 0:
            seed = int(re.search(r"random seed (\d+) \(drawn", log).group(1))
            assert int(tf.train.load_variable(str(output_dir), "random_seed")) == seed
            # The same run never killed: its seed given, in another --output_dir, beside.
            straight_dir = tmp_path / "straight"
            straight_run = subprocess.Popen(
                _command(_options(data, data["distinct"], straight_dir, TOTAL_STEPS,
                                  random_seed=seed)),
                env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        else:
            assert f"random seed {seed} (saved with the run)" in log
            resumed_at.append(int(re.search(r"resumed at step (\d+), input position restored",
                                            log).group(1)))
    final = subprocess.run(command, env=tool_env(), capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, check=False)
    assert final.returncode == 0, final.stderr[-3000:]
    resumed_at.append(int(re.search(r"resumed at step (\d+), input position restored",
                                    final.stderr).group(1)))
    # each rerun restored the latest checkpoint the previous run completed (the kill may
    # land between a checkpoint's files and the state file naming it), before the end
    assert all(kill_at - SAVE_EVERY <= step < TOTAL_STEPS
               for kill_at, step in zip(KILL_AT, resumed_at)), resumed_at
    assert re.search(rf"Restoring parameters from \S*model\.ckpt-{resumed_at[-1]}\b",
                     final.stderr)
    # each log record printed once: absl's line, not also TensorFlow's `INFO:tensorflow:` copy
    assert len(re.findall(r"Restoring parameters from", final.stderr)) == 1
    assert not [line for line in final.stderr.splitlines() if line.startswith("INFO:tensorflow:")]
    trained_steps = [int(s) for s in re.findall(r"\] step (\d+): loss=", final.stderr)]
    assert trained_steps == list(range(resumed_at[-1], TOTAL_STEPS))
    assert int(tf.train.load_variable(str(output_dir), "global_step")) == TOTAL_STEPS

    _, straight_log = straight_run.communicate(timeout=RUN_TIMEOUT)
    assert straight_run.returncode == 0, straight_log[-3000:]
    resumed, straight = _model_tensors(str(output_dir)), _model_tensors(str(straight_dir))
    slots = [n for n in resumed if n.endswith(("/adam_m", "/adam_v"))]
    assert sorted(resumed) == sorted(straight) and len(slots) * 3 == len(resumed) * 2 > 0
    for name in sorted(resumed):  # weights and both Adam slots
        np.testing.assert_array_equal(resumed[name], straight[name], err_msg=name)
