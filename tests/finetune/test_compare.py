"""finetune/compare.py: several starting points x seeds, its files (results.json,
results.md, runs/<n>-<label>/seed<S>/) and the dev-curve plot beside them. (The shell
wrappers scripts/finetune.sh and lcqmc_finetune.sh are tests/scripts/test_finetune_script.py's.)

Tolerances: accuracies and their differences are float64 ratios of counts, so
pytest.approx's default (relative 1e-6) is far above their rounding and below 1/N."""
import importlib.util
import json
import re
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.cli_runs import run_main_in_process
from common.cli_options import UserError
from experiments import from_scratch_table
from finetune import comparison_report, compare, dev_curve_plot
from tests.testutil.finetune_task import TINY_CONFIG, fast_settings, trained_run
from pretrain.models.bert.config import BertConfig

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB,
                                      reason="matplotlib (the plots extra) is not installed")
TAB10_BLUE, TAB10_ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # first two line colours


def synthetic_comparison():
    """Two runs x two seeds as compare.compare builds them (no training)."""
    def seed_row(seed, curve, test):
        return {"seed": seed, "run_dir": f"runs/seed{seed}",
                "dev": {"accuracy": max(curve), "macro_f1": max(curve) - 0.01},
                "test": {"accuracy": test, "macro_f1": test - 0.01},
                "best_step": 1000 * curve.index(max(curve)), "num_train_steps": 2000,
                "wall_time_seconds": 12.0, "collapsed": False,
                "dev_curve": [{"step": 1000 * i, "accuracy": a, "macro_f1": a - 0.01}
                              for i, a in enumerate(curve)]}
    return {
        "task": "pair", "labels": ["0", "1"], "title": "pair fine-tuning on lcqmc",
        "metrics": ["accuracy", "macro_f1"], "selection_metric": "accuracy", "seeds": [1, 2],
        "evaluated_split": "test", "differences": [], "settings": {},
        "runs": [{"label": "random init", "model": "bert L2 H32 V32", "init_checkpoint": None,
                  "per_seed": [seed_row(1, [0.5, 0.5312, 0.5524], 0.6197),
                               seed_row(2, [0.5, 0.52, 0.56], 0.61)]},
                 {"label": "after pretraining", "model": "bert L2 H32 V32",
                  "init_checkpoint": "out/pretrain",
                  "per_seed": [seed_row(1, [0.5, 0.598, 0.614], 0.6738),
                               seed_row(2, [0.5, 0.6, 0.62], 0.68)]}],
    }


@needs_matplotlib
def test_plot_goes_beside_results_md_as_a_png(tmp_path):
    from matplotlib import image
    comparison = synthetic_comparison()
    path, note = compare.write_plot(comparison, "accuracy", str(tmp_path))
    assert path == str(tmp_path / "dev_curve.png")
    assert (tmp_path / "dev_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = (image.imread(path)[..., :3] * 255).round().astype(int)
    width, height = (round(d * dev_curve_plot.DPI) for d in dev_curve_plot.FIGURE_INCHES)
    assert pixels.shape == (height, width, 3)
    for colour in (TAB10_BLUE, TAB10_ORANGE):  # both runs are drawn
        assert (abs(pixels - colour).max(axis=-1) <= 2).sum() > 200
    assert os.listdir(tmp_path) == ["dev_curve.png"]  # no temporary file left
    assert note == ("Dev accuracy per evaluation step, one line per starting point (mean over "
                    "seeds, band = min..max over 2 seeds): dev_curve.png.")
    markdown = comparison_report.render_markdown(dict(comparison, plot_note=note))
    assert [line for line in markdown.splitlines() if "dev_curve.png" in line] == [note]


def test_without_matplotlib_no_plot_and_one_line_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` -> ImportError
    (tmp_path / "dev_curve.png").write_bytes(b"a previous comparison's picture")
    comparison = synthetic_comparison()
    path, note = compare.write_plot(comparison, "accuracy", str(tmp_path))
    assert path is None
    assert not (tmp_path / "dev_curve.png").exists()  # the stale picture does not stay
    assert note.startswith("No dev_curve.png: matplotlib cannot be imported")
    assert "pip install" in note
    markdown = comparison_report.render_markdown(dict(comparison, plot_note=note))
    assert [line for line in markdown.splitlines() if "dev_curve.png" in line] == [note]


def test_compare_layout_table_files_and_reuse(tmp_path, tmp_path_factory):
    # Starting point "solved": the best checkpoint of a finished fine-tuning run
    # (encoder and classifier head, bert_config.json and vocab.txt beside it), so the two
    # rows differ: about 50% from random initialisation, about 100% from "solved".
    task, trained_dir, trained_results, _ = trained_run(tmp_path_factory)
    checkpoint_dir = str(trained_dir / "best")
    other_config = tmp_path / "other_config.json"
    other_config.write_text(json.dumps(dict(TINY_CONFIG, hidden_size=16)))
    common = fast_settings(dict(task, bert_config_file=str(other_config)), "unused",
                           max_train_examples=64, num_train_epochs=1, eval_every_steps=10)
    del common["output_dir"]
    out = tmp_path / "out"
    specs = ["random init=", f"solved={checkpoint_dir}"]
    printed = []
    comparison = compare.compare(specs, common, str(out), seeds=[3], bootstrap_samples=200,
                                 log_fn=printed.append)
    random_init, solved = comparison["runs"]
    starts = [m for m in printed if m.startswith("== run ")]
    assert starts[0].startswith("== run 1 of 2: random init, seed 3: fine-tuning from")
    # the second knows how long the first took: an ETA for the whole comparison
    assert re.match(r"== run 2 of 2, about (\d+m\d\ds|\d+s) left in all: solved, seed 3: ",
                    starts[1])
    # The random-init run borrows the checkpoint's architecture, not --bert_config_file.
    assert [run["bert_config_file"] for run in comparison["runs"]] == [
        f"{checkpoint_dir}/bert_config.json"] * 2
    assert random_init["checkpoint"] is None
    assert solved["checkpoint"] == tf.train.latest_checkpoint(checkpoint_dir)
    assert [run["run_dir"] for run in comparison["runs"]] == [
        str(out / "runs" / "1-random_init"), str(out / "runs" / "2-solved")]
    assert comparison["seeds"] == [3] and comparison["evaluated_split"] == "test"
    for run in comparison["runs"]:
        (row,) = run["per_seed"]
        assert row["seed"] == 3 and row["run_dir"] == f"{run['run_dir']}/seed3"
        per_run = json.loads(open(f"{row['run_dir']}/results.json", encoding="utf-8").read())
        assert per_run["settings"]["random_seed"] == 3
        assert per_run["init"]["checkpoint"] == run["checkpoint"]
        if run["checkpoint"]:  # what makes a rewritten checkpoint's runs stale
            from pretrain.checkpoints import checkpoint_assets
            assert per_run["init"]["fingerprint"] == checkpoint_assets.checkpoint_fingerprint(
                run["checkpoint"])
        assert row["test"]["accuracy"] == per_run["test_accuracy"] == run["test_accuracy"]
        assert row["dev"]["accuracy"] == per_run["dev_accuracy"] == run["dev_accuracy"]
        assert row["dev_curve"] == per_run["dev_curve"]
        assert [p["step"] for p in row["dev_curve"]] == [0, 2]
    assert random_init["dev_accuracy"] < 0.8 < 0.9 < solved["dev_accuracy"]
    assert solved["per_seed"][0]["dev_curve"][0]["accuracy"] == trained_results["dev_accuracy"]
    differences = {d["metric"]: d for d in comparison["differences"]}
    assert set(differences) == {"accuracy", "macro_f1"}
    assert differences["accuracy"]["label"] == "solved"
    assert differences["accuracy"]["difference"] == pytest.approx(
        solved["test_accuracy"] - random_init["test_accuracy"])
    assert differences["accuracy"]["interval_verdict"] == "better"
    # one seed: the interval stands for the examples, not for the seeds; no verdict
    assert "too_few_seeds" in differences["accuracy"]["flags"]
    assert differences["accuracy"]["verdict"] not in ("better", "worse")
    assert [row["label"] for row in comparison["rows"]] == ["random init", "solved"]

    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert printed[-1] == markdown == comparison_report.render_markdown(comparison)
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(comparison))
    table = [line for line in markdown.splitlines() if line.startswith("| solved")]
    assert f"| {100 * solved['dev_accuracy']:.2f} |" in table[0]
    assert f"{100 * differences['accuracy']['difference']:+.2f}" in table[1]
    assert (out / "dev_curve.png").is_file() == HAVE_MATPLOTLIB
    assert ("one line per starting point (mean over seeds): dev_curve.png" in markdown
            ) == HAVE_MATPLOTLIB
    # experiments.from_scratch_table reads a comparison's results.json: both runs and the accuracy Δ.
    row = from_scratch_table.read_comparison(str(out / "results.json"), "solved")
    assert row["model"] == "bert L2 H32 V32" and row["seeds"] == [3]
    assert row["random_init"]["dev"]["accuracy"] == {"mean": random_init["dev_accuracy"],
                                                     "std": None}
    assert row["pretrained"]["test"]["accuracy"]["mean"] == solved["test_accuracy"]
    assert row["difference"] == differences["accuracy"] and row["split"] == "test"
    line = from_scratch_table.markdown_table([dict(row, pretraining={})]).splitlines()[2]
    # A random-init run at this budget may predict one class: the verdict then says so too.
    collapsed = comparison["rows"][0]["collapsed_seeds"]
    assert collapsed == ([3] if random_init["per_seed"][0]["collapsed"] else [])
    assert (" collapsed (seed 3) |" in line) == bool(collapsed)
    assert ("baseline_collapsed" in differences["accuracy"]["flags"]) == bool(collapsed)
    assert line.endswith(f"| {100 * differences['accuracy']['difference']:+.2f} "
                         f"[{100 * differences['accuracy']['low']:+.2f}, "
                         f"{100 * differences['accuracy']['high']:+.2f}] | "
                         + differences["accuracy"]["verdict"]
                         + " | 3 | — |")  # no pretraining run: no compute

    # Same settings again: every run is collected, not retrained; same table.
    printed.clear()
    again = compare.compare(specs, common, str(out), seeds=[3], bootstrap_samples=200,
                            log_fn=printed.append)
    assert sum(m.startswith("== ") and "collecting" in m for m in printed) == 2
    assert not [m for m in printed if "fine-tuning from" in m]
    assert again == comparison
    assert (out / "results.md").read_text(encoding="utf-8") == markdown
    # Changed settings never reuse a stale run.
    with pytest.raises(UserError, match="run 'random init', seed 3: no finished run with "
                                        "these settings"):
        compare.compare(specs, dict(common, learning_rate=5e-4), str(out), collect_only=True,
                        seeds=[3], log_fn=lambda m: None)

    # Another comparison collects these finished runs by settings, seed and starting weights,
    # whatever their labels and order (a sweep's baseline fine-tuned once); without
    # --reuse_from it has nothing to collect.
    sweep_out = tmp_path / "sweep"
    with pytest.raises(UserError, match="run 'baseline', seed 3: no finished run"):
        compare.compare([f"baseline={checkpoint_dir}"], common, str(sweep_out), seeds=[3],
                        collect_only=True, log_fn=lambda m: None)
    printed.clear()
    reused = compare.compare([f"baseline={checkpoint_dir}", "from scratch="], common,
                             str(sweep_out), seeds=[3], collect_only=True,
                             reuse_from=[str(out)], bootstrap_samples=200,
                             log_fn=printed.append)
    assert [run["per_seed"][0]["run_dir"] for run in reused["runs"]] == [
        str(out / "runs" / "2-solved" / "seed3"), str(out / "runs" / "1-random_init" / "seed3")]
    assert [run["test_accuracy"] for run in reused["runs"]] == [
        solved["test_accuracy"], random_init["test_accuracy"]]
    assert sum(f"collecting the finished run in {out}" in m for m in printed) == 2
    assert not [m for m in printed if "fine-tuning from" in m]
    # The same data folder spelled another way (another checkout's ../shared) is the same.
    data_dir = common["data_dir"]
    respelled = os.path.join(data_dir, "..", os.path.basename(data_dir))
    again = compare.compare([f"baseline={checkpoint_dir}"], dict(common, data_dir=respelled),
                            str(sweep_out), seeds=[3], collect_only=True,
                            reuse_from=[str(out)], bootstrap_samples=200, log_fn=lambda m: None)
    assert again["runs"][0]["test_accuracy"] == solved["test_accuracy"]
    # A comparison made only of collected runs has no runs/ of its own; reusing from it
    # collects them where its results.json says they are.
    assert not (sweep_out / "runs").exists()
    chained = compare.compare([f"baseline={checkpoint_dir}"], common, str(tmp_path / "chained"),
                              seeds=[3], collect_only=True, reuse_from=[str(sweep_out)],
                              bootstrap_samples=200, log_fn=lambda m: None)
    assert chained["runs"][0]["per_seed"][0]["run_dir"] == str(out / "runs" / "2-solved" / "seed3")
    assert chained["runs"][0]["test_accuracy"] == solved["test_accuracy"]

    # The random-init run alone, its config now from --bert_config_file: the same model
    # written elsewhere in another form (defaults spelled out) is collected; another
    # architecture is not.
    same_model = tmp_path / "same_model.json"
    same_model.write_text(json.dumps(BertConfig.from_json_file(
        f"{checkpoint_dir}/bert_config.json").to_dict(), indent=1, sort_keys=True))
    alone = compare.compare(["random init="], dict(common, bert_config_file=str(same_model)),
                            str(out), seeds=[3], collect_only=True, bootstrap_samples=200,
                            log_fn=lambda m: None)
    assert alone["runs"][0]["test_accuracy"] == random_init["test_accuracy"]
    with pytest.raises(UserError, match="no finished run with these settings"):
        compare.compare(["random init="], dict(common, bert_config_file=str(other_config)),
                        str(out), seeds=[3], collect_only=True, log_fn=lambda m: None)
    # Its vocab copied elsewhere is the same input; one of the same size with two tokens
    # swapped is not (the same ids would stand for other characters).
    shutil.copy(trained_dir / "best" / "vocab.txt", tmp_path / "copied_vocab.txt")
    vocab_lines = (trained_dir / "best" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab_lines[-1], vocab_lines[-2] = vocab_lines[-2], vocab_lines[-1]
    (tmp_path / "swapped_vocab.txt").write_text("\n".join(vocab_lines) + "\n", encoding="utf-8")
    same_vocab = dict(common, bert_config_file=str(same_model),
                      vocab_file=str(tmp_path / "copied_vocab.txt"))
    copied = compare.compare(["random init="], same_vocab, str(out), seeds=[3],
                             collect_only=True, bootstrap_samples=200, log_fn=lambda m: None)
    assert copied["runs"][0]["test_accuracy"] == random_init["test_accuracy"]
    with pytest.raises(UserError, match="no finished run with these settings"):
        compare.compare(["random init="], dict(same_vocab, vocab_file=str(
            tmp_path / "swapped_vocab.txt")), str(out), seeds=[3], collect_only=True,
            log_fn=lambda m: None)

    # A second seed (here: seed 3's finished runs, copied and given other dev/test
    # accuracies, so nothing trains): each run's number is the mean over its seeds.
    edits = {"1-random_init": (0.4, 0.3), "2-solved": (0.9, 0.8)}
    for name, (dev, test) in edits.items():
        shutil.copytree(out / "runs" / name / "seed3", out / "runs" / name / "seed4")
        path = out / "runs" / name / "seed4" / "results.json"
        results = json.loads(path.read_text(encoding="utf-8"))
        results["settings"]["random_seed"] = 4
        results["dev"]["accuracy"] = results["dev_accuracy"] = dev
        results["test"]["accuracy"] = results["test_accuracy"] = test
        path.write_text(json.dumps(results), encoding="utf-8")
    two = compare.compare(specs, common, str(out), seeds=[3, 4], collect_only=True,
                          bootstrap_samples=200, log_fn=lambda m: None)
    for before, after, (dev, test) in zip(comparison["runs"], two["runs"], edits.values()):
        assert [row["seed"] for row in after["per_seed"]] == [3, 4]
        assert after["dev_accuracy"] == pytest.approx((before["dev_accuracy"] + dev) / 2)
        assert after["test_accuracy"] == pytest.approx((before["test_accuracy"] + test) / 2)
    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert "mean ± sample standard deviation over the 2 seeds (3, 4)" in markdown
    # The differences come from the predictions, which seed 4 shares with seed 3.
    assert two["differences"][0]["difference"] == pytest.approx(
        differences["accuracy"]["difference"])


def test_same_starting_point_is_fine_tuned_once(tmp_path, tmp_path_factory):
    task, trained_dir, _, _ = trained_run(tmp_path_factory)
    common = dict(fast_settings(task, "unused"), bert_config_file=None)
    del common["output_dir"]
    plans = compare.plan_runs([f"a={trained_dir / 'best'}", "random init=",
                               f"b={trained_dir / 'best'}"], common, str(tmp_path))
    assert [plan["same_as"] for plan in plans] == [None, None, 0]
    assert [plan["run_dir"] for plan in plans] == [
        str(tmp_path / "runs" / name) for name in ("1-a", "2-random_init", "3-b")]
    assert plans[1]["bert_config_file"] == str(trained_dir / "best" / "bert_config.json")


def test_run_specs_and_seeds_are_checked():
    with pytest.raises(UserError, match="expected LABEL=CHECKPOINT"):
        compare.parse_run("no separator")
    assert compare.parse_run("random init=") == ("random init", None)
    assert compare.parse_run("after = out/p ") == ("after", "out/p")
    with pytest.raises(UserError, match="must differ"):
        compare.plan_runs(["a=", "a="], {"bert_config_file": "c.json"}, "out")
    assert compare.parse_seeds("1, 2,3", 7) == [1, 2, 3]
    assert compare.parse_seeds("", 7) == [7]
    with pytest.raises(UserError, match="expected comma-separated integers"):
        compare.parse_seeds("1,x", 7)
    with pytest.raises(UserError, match="give each seed once"):
        compare.parse_seeds("1,1", 7)


def test_cli_errors_are_one_line_with_exit_code_2(repo_root, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(repo_root))
    done = subprocess.run([sys.executable, "-m", "finetune.compare", "--data_dir=d",
                           "--vocab_file=v", f"--output_dir={tmp_path}/out"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: give at least one --run=LABEL=CHECKPOINT")


def test_reuse_from_must_name_a_comparison_folder(tmp_path):
    (tmp_path / "not_a_comparison").mkdir()
    code, _, err, _ = run_main_in_process("finetune.compare", [
        "--data_dir=d", "--vocab_file=v", f"--output_dir={tmp_path}/out", "--run=a=",
        f"--reuse_from={tmp_path}/not_a_comparison"], tmp_path)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"error: --reuse_from={tmp_path}/not_a_comparison: no runs/ folder or results.json there "
        "(give the --output_dir of an earlier finetune.compare)")


def test_a_checkpoint_rewritten_under_the_same_path_is_not_reused(tmp_path):
    # A pretraining redone into the same folder leaves model.ckpt-N at the same path with
    # other weights: its fine-tunings must not be collected as if they started from them.
    import hashlib
    from finetune import run_finetune
    from pretrain.checkpoints import checkpoint_assets
    checkpoint = str(tmp_path / "model.ckpt-10")
    index = tmp_path / "model.ckpt-10.index"
    index.write_bytes(b"weights A")
    fingerprint = checkpoint_assets.checkpoint_fingerprint(checkpoint)
    assert fingerprint == hashlib.sha256(b"weights A").hexdigest()
    assert checkpoint_assets.checkpoint_fingerprint(str(tmp_path / "absent")) is None
    settings = {name: run_finetune.DEFAULTS.get(name) for name in compare.COMPARED_SETTINGS}
    settings["random_seed"] = 1
    config = str(tmp_path / "bert_config.json")
    plan = {"checkpoint": checkpoint, "bert_config_file": config, "vocab_file": None,
            "spm_model_file": None}
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def finished(init):
        (run_dir / "results.json").write_text(json.dumps(
            {"settings": settings, "bert_config_file": config, "init": init}))

    finished({"checkpoint": checkpoint, "fingerprint": fingerprint})
    assert compare.reusable(str(run_dir), plan, settings) is not None
    index.write_bytes(b"weights B")
    assert compare.reusable(str(run_dir), plan, settings) is None
    # Runs saved before fingerprints: reused only if the checkpoint is not newer.
    finished({"checkpoint": checkpoint})
    assert compare.reusable(str(run_dir), plan, settings) is not None
    later = os.path.getmtime(run_dir / "results.json") + 60
    os.utime(index, (later, later))
    assert compare.reusable(str(run_dir), plan, settings) is None
