"""Checkpoints cross the two runtimes (.venv: TensorFlow 2.15 on Python 3.11; .venv-tf2.21:
TensorFlow 2.21 on Python 3.12/3.13): a pretraining run started under one resumes under the
other (weights, Adam slots, step, fp16 loss scale) with the same variable names and shapes,
in both directions, and export_hf writes the same bytes from the same checkpoint on both.

Both directions are tested from one side, so `make test` runs this in the TensorFlow 2.21
runtime's run only (Python >= 3.12); skipped, with the reason, where the other runtime's
environment was not built.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.cli_runs import TIMEOUT_SECONDS, other_runtime, tool_env
from pretrain import run_pretraining
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records
from tests.testutil.hf_interop import write_tiny_vocab

SEQ, PREDS, BATCH = 16, 4, 8
RUN = ("import json, sys, tensorflow as tf; tf.get_logger().setLevel('INFO'); "
       "from absl import logging; logging.set_verbosity(logging.INFO); "
       "from pretrain import run_pretraining; "
       "print('RESULT ' + json.dumps(run_pretraining.run(json.loads(sys.argv[1])), default=str))")


@pytest.fixture(scope="module")
def other():
    python = other_runtime()
    if python is not None and sys.version_info < (3, 12):
        pytest.skip(f"run from the other runtime's run ({python}): both directions are tested "
                    "from either side")
    if python is None:
        pytest.skip("the other runtime's environment is not built (make setup builds .venv "
                    "and .venv-tf2.21 where their Pythons exist)")
    return python


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross_runtime")
    vocab = write_tiny_vocab(root / "vocab.txt", 50)
    return {"cfg": tiny_config(root / "cfg.json"), "vocab": str(vocab),
            "records": write_records(root / "a.tfrecord", make_examples(4 * BATCH, seed=5))}


def _options(data, out, steps):
    """3 steps, then a rerun to 6 (a schedule change, accepted on purpose)."""
    return run_options(SEQ, PREDS, BATCH, bert_config_file=data["cfg"],
                       input_file=data["records"], output_dir=out, vocab_file=data["vocab"],
                       learning_rate=3e-3, num_train_steps=steps, precision="fp16",
                       save_checkpoints_steps=3, allow_schedule_change=steps > 3)


def _run_other(python, options):
    done = subprocess.run([str(python), "-c", RUN, json.dumps(options)], env=tool_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [text for text in done.stdout.splitlines() if text.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):]), done.stderr


def _shapes(folder, step):
    reader = tf.train.load_checkpoint(os.path.join(folder, f"model.ckpt-{step}"))
    return reader.get_variable_to_shape_map(), reader


@pytest.mark.parametrize("first", ["this", "other"])
def test_a_run_resumes_under_the_other_runtime(data, tmp_path, other, first):
    out = str(tmp_path / "run")
    if first == "this":
        assert run_pretraining.run(_options(data, out, 3))["global_step"] == 3
        result, log = _run_other(other, _options(data, out, 6))
    else:
        assert _run_other(other, _options(data, out, 3))[0]["global_step"] == 3
        result, log = run_pretraining.run(_options(data, out, 6)), ""
    assert result["global_step"] == 6
    if log:  # restored, input position too, not started again
        assert re.search(r"Restoring parameters from \S*model\.ckpt-3\b", log), log[-3000:]
        assert "resumed at step 3, input position restored" in log
    before, at_3 = _shapes(out, 3)
    after, at_6 = _shapes(out, 6)
    assert after == before  # the same names and shapes
    assert any(name.endswith("/adam_m") for name in after)
    scale = [name for name in after if "loss_scale" in name]
    assert scale, sorted(after)
    assert int(at_6.get_tensor("global_step")) == 6 and int(at_3.get_tensor("global_step")) == 3
    moved = [name for name in before if name.startswith("bert/") and
             (at_6.get_tensor(name) != at_3.get_tensor(name)).any()]
    assert moved  # trained on from the restored weights


def test_export_hf_writes_the_same_bytes_under_both(data, tmp_path, other):
    out = str(tmp_path / "run")
    run_pretraining.run(_options(data, out, 3))
    folders = {name: tmp_path / name for name in ("this", "other")}
    for name, python in (("this", None), ("other", other)):
        done = subprocess.run([str(python or sys.executable), "-m", "pretrain.interop.export_hf",
                               f"--init_checkpoint={out}", f"--output_dir={folders[name]}"],
                              env=tool_env(), capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS)
        assert done.returncode == 0, done.stderr[-3000:]
    files = {name: {path.name: path.read_bytes() for path in sorted(folder.iterdir())}
             for name, folder in folders.items()}
    assert "model.safetensors" in files["this"]
    assert files["this"] == files["other"]
