"""The comparison table, its files and the dev-curve plot (finetune/compare.py,
finetune/dev_curve_plot.py), and the shell wrapper scripts/lcqmc_finetune.sh."""
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from finetune import compare, dev_curve_plot, run_lcqmc
from finetune_helpers import TINY_CONFIG, fast_settings, trained_run

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB,
                                      reason="matplotlib (the plots extra) is not installed")
TAB10_BLUE, TAB10_ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # first two line colours


def synthetic_rows():
    """Two summarised runs as compare.summarise returns them (no training)."""
    def row(label, curve, test):
        return {"label": label, "model": "bert L2 H32 V32", "dev_accuracy": max(curve),
                "test_accuracy": test, "best_step": 1000 * curve.index(max(curve)),
                "num_train_steps": 2000, "wall_time_seconds": 12.0,
                "dev_curve": [{"step": 1000 * i, "accuracy": a} for i, a in enumerate(curve)]}
    return [row("random init", [0.5, 0.5312, 0.5524], 0.6197),
            row("after pretraining", [0.5, 0.598, 0.614], 0.6738)]


@needs_matplotlib
def test_dev_curve_names_runs_and_axes_with_distinct_ticks():
    # Close accuracies and large step counts: the old writer printed 0.51, 0.51, ... here.
    series = [("random init", [0, 10000, 20000], [0.5, 0.505, 0.51]),
              ("after pretraining", [0, 10000, 20000], [0.49, 0.5, 0.5075])]
    figure = dev_curve_plot.make_figure(series)
    figure.canvas.draw()
    axes = figure.axes[0]
    assert axes.get_xlabel() == "fine-tuning step"
    assert axes.get_ylabel().startswith("dev accuracy")
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == ["random init (best 51.00 at step 20000)",
                      "after pretraining (best 50.75 at step 20000)"]
    for line, (_, steps, accuracies) in zip(axes.get_lines(), series):
        assert list(line.get_xdata()) == steps
        assert list(line.get_ydata()) == pytest.approx([100 * a for a in accuracies])
    low, high = axes.get_ylim()
    for axis, (visible_low, visible_high) in ((axes.yaxis, (low, high)),
                                              (axes.xaxis, axes.get_xlim())):
        ticks = [(tick.get_loc(), tick.label1.get_text()) for tick in axis.get_major_ticks()]
        labels = [text for loc, text in ticks if visible_low <= loc <= visible_high]
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        assert all(re.fullmatch(r"[0-9]+(\.[0-9]+)?", text.replace("\u2212", "-"))
                   for text in labels), labels  # plain numbers: no 1e4, no offset
        assert axis.get_offset_text().get_text() == ""
    assert {"10000", "20000"} <= set(labels)  # x labels are whole steps


@needs_matplotlib
def test_flat_curve_still_gets_a_readable_y_axis():
    for accuracies in ([0.5, 0.5, 0.5], [0.5, 0.50001, 0.5]):
        figure = dev_curve_plot.make_figure([("random init", [0, 100, 200], accuracies)])
        low, high = figure.axes[0].get_ylim()
        assert high - low >= dev_curve_plot.MIN_Y_SPAN - 1e-9 and low < 50 < high


@needs_matplotlib
def test_plot_goes_beside_results_md_as_a_png(tmp_path):
    from matplotlib import image
    compare.write_outputs(synthetic_rows(), dict(run_lcqmc.DEFAULTS), str(tmp_path),
                          log_fn=lambda m: None)
    path = tmp_path / "dev_curve.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = (image.imread(str(path))[..., :3] * 255).round().astype(int)
    width, height = (round(d * dev_curve_plot.DPI) for d in dev_curve_plot.FIGURE_INCHES)
    assert pixels.shape == (height, width, 3)
    for colour in (TAB10_BLUE, TAB10_ORANGE):  # both runs are drawn
        assert (abs(pixels - colour).max(axis=-1) <= 2).sum() > 200
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temp left
    saved = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert saved["plot"] == str(path)
    markdown = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "one line per starting point: dev_curve.png" in markdown


def test_without_matplotlib_the_table_is_written_and_one_line_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` -> ImportError
    (tmp_path / "dev_curve.png").write_bytes(b"a previous comparison's picture")
    printed = []
    table = compare.write_outputs(synthetic_rows(), dict(run_lcqmc.DEFAULTS), str(tmp_path),
                                  log_fn=printed.append)
    markdown = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert table in markdown and printed == [markdown]
    assert "| after pretraining | bert L2 H32 V32 | 61.40 | 67.38 | +6.16 | +5.41 |" in markdown
    why = [line for line in markdown.splitlines() if "dev_curve.png" in line]
    assert len(why) == 1 and why[0].startswith("No dev_curve.png: matplotlib cannot be imported")
    assert "pip install" in why[0]
    assert not (tmp_path / "dev_curve.png").exists()  # the stale picture does not stay
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["plot"] is None


def test_compare_table_files_and_reuse(tmp_path, tmp_path_factory):
    # Starting point "solved": the best checkpoint of a finished fine-tuning run
    # (encoder and classifier head, bert_config.json beside it), so the two rows
    # differ: about 50% from random initialisation, about 100% from "solved".
    task, trained_dir, trained_results, _ = trained_run(tmp_path_factory)
    checkpoint_dir = str(trained_dir / "best")
    other_config = tmp_path / "other_config.json"
    other_config.write_text(json.dumps(dict(TINY_CONFIG, hidden_size=16)))
    common = fast_settings(dict(task, bert_config_file=str(other_config)), "unused",
                           max_train_examples=320, num_train_epochs=1, eval_every_steps=10)
    del common["output_dir"]
    out = tmp_path / "out"
    specs = ["random init=", f"solved={checkpoint_dir}"]
    printed = []
    rows = compare.compare(specs, common, str(out), log_fn=printed.append)

    # The random-init run borrows the checkpoint's architecture, not --bert_config_file.
    assert [row["bert_config_file"] for row in rows] == [f"{checkpoint_dir}/bert_config.json"] * 2
    assert rows[0]["loaded_checkpoint"] is None
    assert rows[1]["loaded_checkpoint"] == tf.train.latest_checkpoint(checkpoint_dir)
    assert [p["step"] for p in rows[0]["dev_curve"]] == [0, 10]
    assert rows[0]["dev_accuracy"] < 0.8 < 0.9 < rows[1]["dev_accuracy"]
    assert rows[1]["dev_curve"][0]["accuracy"] == trained_results["dev_accuracy"]

    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert printed[-1] == markdown
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    table_rows = [line for line in markdown.splitlines() if line.startswith("| ") and
                  not line.startswith("| starting")]
    assert len(table_rows) == 2 == len(saved["runs"])
    first = saved["runs"][0]
    for line, run in zip(table_rows, saved["runs"]):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[0] == run["label"]
        assert float(cells[2]) == pytest.approx(100 * run["dev_accuracy"], abs=0.005)
        assert float(cells[3]) == pytest.approx(100 * run["test_accuracy"], abs=0.005)
        assert float(cells[4]) == pytest.approx(
            100 * (run["dev_accuracy"] - first["dev_accuracy"]), abs=0.005)
        assert float(cells[5]) == pytest.approx(
            100 * (run["test_accuracy"] - first["test_accuracy"]), abs=0.005)
        per_run = json.loads(open(f"{run['run_dir']}/results.json", encoding="utf-8").read())
        assert per_run["test_accuracy"] == run["test_accuracy"]
    assert (out / "dev_curve.png").is_file() == HAVE_MATPLOTLIB
    assert ("one line per starting point: dev_curve.png" in markdown) == HAVE_MATPLOTLIB

    # Same settings again: both runs are collected, not retrained; same table.
    printed.clear()
    again = compare.compare(specs, common, str(out), log_fn=printed.append)
    assert sum(m.startswith("== ") and "collecting" in m for m in printed) == 2
    assert [r["test_accuracy"] for r in again] == [r["test_accuracy"] for r in rows]
    assert (out / "results.md").read_text(encoding="utf-8") == markdown
    # Changed settings never reuse a stale run.
    with pytest.raises(ValueError, match="no finished run with these settings"):
        compare.compare(specs, dict(common, learning_rate=5e-4), str(out), collect_only=True,
                        log_fn=lambda m: None)


def test_run_specs_are_checked():
    with pytest.raises(ValueError, match="LABEL=CHECKPOINT"):
        compare.parse_run("no separator")
    assert compare.parse_run("random init=") == ("random init", None)
    assert compare.parse_run("after = out/p ") == ("after", "out/p")
    with pytest.raises(ValueError, match="must differ"):
        compare.plan_runs(["a=", "a="], {"bert_config_file": "c.json"}, "out")


def run_script(repo_root, cwd, *args, **env):
    return subprocess.run(["bash", str(repo_root / "scripts" / "lcqmc_finetune.sh"), *args],
                          cwd=cwd, env=dict(os.environ, **env), capture_output=True, text=True)


def test_script_help_and_missing_data_message(repo_root, tmp_path):
    shown = run_script(repo_root, tmp_path, "--help")
    assert shown.returncode == 0
    for setting in ("LCQMC_DIR", "BEFORE", "AFTER", "CONFIG", "VOCAB", "MAX_TRAIN_EXAMPLES",
                    "EPOCHS", "OUT"):
        assert setting in shown.stdout
    missing = run_script(repo_root, tmp_path, LCQMC_DIR="no_such_dir")
    assert missing.returncode == 2
    assert f"no LCQMC data at {tmp_path}/no_such_dir" in missing.stderr
    assert "text_a<TAB>text_b<TAB>label" in missing.stderr
    (tmp_path / "lcqmc").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "lcqmc" / f"{split}.txt").write_text("a\tb\t1\n", encoding="utf-8")
    no_checkpoint = run_script(repo_root, tmp_path, "--after", "nothing_here",
                               LCQMC_DIR="lcqmc")
    assert no_checkpoint.returncode == 2 and "holds no checkpoint" in no_checkpoint.stderr


def test_script_passes_only_the_settings_given_so_python_defaults_rule(repo_root, tmp_path):
    """The wrapper holds no copy of the training defaults: unset = finetune.compare's default."""
    (tmp_path / "lcqmc").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "lcqmc" / f"{split}.txt").write_text("a\tb\t1\n", encoding="utf-8")
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "checkpoint").write_text("")
    (tmp_path / "after" / "vocab.txt").write_text("[PAD]\n")
    fake_python = tmp_path / "python"  # records the command line instead of fine-tuning
    fake_python.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path}/args\n")
    fake_python.chmod(0o755)
    clean_env = {name: "" for name in ("EPOCHS", "SEED", "EVAL_EVERY", "MAX_TRAIN_EXAMPLES",
                                       "MAX_DEV_EXAMPLES", "MAX_SEQ_LENGTH", "BATCH_SIZE",
                                       "LEARNING_RATE", "WARMUP", "STRATEGY")}

    def passed(*args, **env):
        done = run_script(repo_root, tmp_path, "--lcqmc_dir", "lcqmc", "--after", "after",
                          "--out", "out", "--python", str(fake_python), *args,
                          **dict(clean_env, **env))
        assert done.returncode == 0, done.stderr
        lines = (tmp_path / "args").read_text(encoding="utf-8").splitlines()
        return lines[2:]  # after "-m finetune.compare"

    plain = passed()
    assert plain[:5] == [f"--data_dir={tmp_path}/lcqmc", f"--vocab_file={tmp_path}/after/vocab.txt",
                         f"--output_dir={tmp_path}/out", "--run=random init=",
                         f"--run=after pretraining={tmp_path}/after"]
    assert plain[5:] == ["--norerun"]
    given = passed("--seed", "7", "--strategy=auto", EPOCHS="1", EVAL_EVERY="250")
    assert sorted(given[5:]) == ["--eval_every_steps=250", "--norerun", "--num_train_epochs=1",
                                 "--random_seed=7", "--strategy=auto"]
    # Every flag the wrapper can pass is a flag of finetune.compare.
    script = (repo_root / "scripts" / "lcqmc_finetune.sh").read_text(encoding="utf-8")
    listed = re.search(r"TRAINING_SETTINGS=\(([^)]*)\)", script).group(1).split()
    flags = {field.name for field in dataclasses.fields(compare.CompareOptions)}
    assert len(listed) == 10 and {pair.split(":")[1] for pair in listed} <= flags
    bad = run_script(repo_root, tmp_path, "--lcqmc_dir", "lcqmc", "--after", "after",
                     "--python", str(fake_python), EPOCHS="two")
    assert bad.returncode == 2 and "EPOCHS must be a positive number, not 'two'" in bad.stderr


def test_cli_errors_are_one_line_with_exit_code_2(repo_root, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(repo_root))
    done = subprocess.run([sys.executable, "-m", "finetune.compare", "--data_dir=d",
                           "--vocab_file=v", f"--output_dir={tmp_path}/out"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: give at least one --run=LABEL=CHECKPOINT")
