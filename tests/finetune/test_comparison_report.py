"""finetune/comparison_report.py: the results table (mean ± std over seeds, best seed),
the differences table (Δ, CI, verdict), the footnotes and valid Markdown.

Tolerances: means and standard deviations are float64 NumPy arithmetic, so pytest.approx's
default (relative 1e-6) is far above their rounding and below any digit the table shows."""
import copy
import re

import numpy as np
import pytest

from finetune import comparison_report, statistics

METHOD = "Hierarchical paired bootstrap: 2000 replicates (test description)."


def seed_result(seed, dev, test, collapsed=False):
    return {"seed": seed, "dev": dev, "test": test, "best_step": 500, "num_train_steps": 600,
            "wall_time_seconds": 80.0, "collapsed": collapsed}


def difference(label, metric, value, low, high, verdict):
    return {"label": label, "metric": metric, "difference": value, "low": low, "high": high,
            "verdict": verdict, "num_samples": 2000, "confidence": 0.95, "method": METHOD}


def make_comparison():
    """Two runs x three seeds; numbers chosen so the means and stds are round."""
    random_init = [  # dev accuracy 85, 87, 86 -> 86.00 ± 1.00; test 80, 84, 82 -> 82.00 ± 2.00
        seed_result(1, {"accuracy": 0.85, "macro_f1": 0.80}, {"accuracy": 0.80, "macro_f1": 0.70}),
        seed_result(2, {"accuracy": 0.87, "macro_f1": 0.82}, {"accuracy": 0.84, "macro_f1": 0.74}),
        seed_result(3, {"accuracy": 0.86, "macro_f1": 0.84}, {"accuracy": 0.82, "macro_f1": 0.78})]
    pretrained = [  # dev accuracy 90, 90, 93 -> 91.00 ± 1.73 (sqrt 3); best seed 3
        seed_result(1, {"accuracy": 0.90, "macro_f1": 0.88}, {"accuracy": 0.88, "macro_f1": 0.86}),
        seed_result(2, {"accuracy": 0.90, "macro_f1": 0.88}, {"accuracy": 0.89, "macro_f1": 0.87}),
        seed_result(3, {"accuracy": 0.93, "macro_f1": 0.91}, {"accuracy": 0.90, "macro_f1": 0.88})]
    return {
        "task": "classification", "title": "ChnSentiCorp: does pretraining help?",
        "metrics": ["accuracy", "macro_f1"], "selection_metric": "accuracy",
        "seeds": [1, 2, 3], "evaluated_split": "test",
        "runs": [{"label": "random init", "model": "bert L4 H256 V21128", "init_checkpoint": None,
                  "per_seed": random_init},
                 {"label": "after pretraining", "model": "bert L4 H256 V21128",
                  "init_checkpoint": "out/pretrain/model.ckpt-1000", "per_seed": pretrained}],
        "differences": [difference("after pretraining", "accuracy", 0.07, 0.051, 0.0893, "better"),
                        difference("after pretraining", "macro_f1", 0.013, -0.004, 0.03,
                                   "no evidence")],
        "settings": {"learning_rate": 5e-5, "train_batch_size": 32, "max_seq_length": 128},
        "plot_note": "Dev accuracy per evaluation step, mean and range over seeds: dev_curve.png.",
    }


def table_lines(markdown):
    return [line for line in markdown.splitlines() if line.startswith("|")]


def cells(line):
    """The cells of a Markdown table row, split at unescaped pipes."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_results_table_has_mean_std_per_split_and_the_best_seed():
    markdown = comparison_report.render_markdown(make_comparison())
    assert markdown.startswith("# ChnSentiCorp: does pretraining help?\n\n")
    lines = table_lines(markdown)
    assert cells(lines[0]) == ["starting point", "model", "dev accuracy", "test accuracy",
                               "dev macro F1", "test macro F1", "best seed (dev accuracy)"]
    assert cells(lines[2]) == ["random init", "bert L4 H256 V21128", "86.00 ± 1.00",
                               "82.00 ± 2.00", "82.00 ± 2.00", "74.00 ± 4.00", "seed 2: 87.00"]
    assert cells(lines[3]) == ["after pretraining", "bert L4 H256 V21128", "91.00 ± 1.73",
                               "89.00 ± 1.00", "89.00 ± 1.73", "87.00 ± 1.00", "seed 3: 93.00"]


def test_differences_table_in_points_with_interval_and_verdict():
    lines = table_lines(comparison_report.render_markdown(make_comparison()))
    assert cells(lines[4]) == ["starting point", "metric", "Δ vs random init (points)",
                               "95% CI", "verdict"]
    assert cells(lines[6]) == ["after pretraining", "accuracy", "+7.00", "[+5.10, +8.93]",
                               "**better**"]
    assert cells(lines[7]) == ["after pretraining", "macro F1", "+1.30", "[-0.40, +3.00]",
                               "no evidence"]
    assert len(lines) == 8


def test_footnotes_say_what_the_numbers_are():
    markdown = comparison_report.render_markdown(make_comparison())
    assert "sample standard deviation over the 3 seeds (1, 2, 3)" in markdown
    assert "the same seeds were used for every run" in markdown
    # the table's mean of each seed's best is told apart from the curve legend's peak
    assert "of each seed's best-on-dev checkpoint" in markdown
    assert "legend gives the peak of the mean curve instead" in markdown
    assert "on the test split" in markdown and METHOD in markdown
    assert "Settings: learning_rate=5e-05, train_batch_size=32, max_seq_length=128." in markdown
    assert markdown.rstrip().endswith("mean and range over seeds: dev_curve.png.")
    assert "WARNING" not in markdown and "collapsed" not in markdown


def test_a_different_architecture_gets_a_warning():
    comparison = make_comparison()
    comparison["runs"][1]["model"] = "bert L2 H128 V21128"
    warnings = [line for line in comparison_report.render_markdown(comparison).splitlines()
                if line.startswith("WARNING")]
    assert warnings == ["WARNING: the runs differ in model architecture (bert L4 H256 V21128 "
                        "vs bert L2 H128 V21128); the comparison is not like for like."]


def test_collapsed_seeds_are_marked_and_get_no_verdict():
    comparison = make_comparison()
    comparison["runs"][0]["per_seed"][1]["collapsed"] = True
    comparison["runs"][0]["per_seed"][2]["collapsed"] = True
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[2])[0] == "random init — collapsed (seeds 2, 3)"
    assert cells(lines[3])[0] == "after pretraining"
    # the interval says better, but a collapsed baseline is not a result to beat
    assert cells(lines[6])[-1] == "no verdict: baseline collapsed (seeds 2, 3)"
    assert cells(lines[7])[-1] == "no verdict: baseline collapsed (seeds 2, 3)"
    stored = comparison["differences"][0]
    assert stored["verdict"] == "no verdict: baseline collapsed (seeds 2, 3)"
    assert stored["flags"] == ["baseline_collapsed"] and stored["interval_verdict"] == "better"
    rows = comparison_report.comparison_rows(comparison)
    assert [row["collapsed_seeds"] for row in rows] == [[2, 3], []]


def test_a_baseline_at_chance_gets_no_verdict_and_the_table_says_why():
    comparison = make_comparison()
    for seed_row, accuracy in zip(comparison["runs"][0]["per_seed"], (0.50, 0.52, 0.51)):
        seed_row["dev"]["accuracy"] = accuracy
    for run in comparison["runs"]:
        for seed_row in run["per_seed"]:
            seed_row.update(dev_majority_share=0.5, dev_examples=1000)
    # 3 binomial standard errors of a 50% share over 1000 examples: 4.74 points; 51% is inside
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[6])[-1] == (
        "no verdict: baseline at chance (dev accuracy 51.00% vs the majority share 50.00%, "
        "within 3 standard errors over 1000 examples)")
    assert comparison["differences"][0]["flags"] == ["baseline_at_chance"]
    # 56% is 3.8 standard errors above: a learned baseline, and the verdict stands
    comparison = make_comparison()
    for seed_row in comparison["runs"][0]["per_seed"]:
        seed_row.update(dev={"accuracy": 0.56, "macro_f1": 0.5}, dev_majority_share=0.5,
                        dev_examples=1000)
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[6])[-1] == "**better**"
    assert comparison["differences"][0]["flags"] == []


def test_fewer_than_three_seeds_give_no_bold_verdict():
    comparison = make_comparison()
    comparison["seeds"] = [1, 2]
    for run in comparison["runs"]:
        run["per_seed"] = run["per_seed"][:2]
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[6])[-1] == "2 seeds: too few for a verdict"
    assert comparison["differences"][0]["flags"] == ["too_few_seeds"]
    assert "**" not in "".join(lines[4:])


def test_one_seed_dev_only_and_a_single_run():
    comparison = make_comparison()
    comparison["seeds"] = [1]
    comparison["evaluated_split"] = "dev"
    for run in comparison["runs"]:
        run["per_seed"] = [dict(run["per_seed"][0], test=None)]
    markdown = comparison_report.render_markdown(comparison)
    lines = table_lines(markdown)
    assert cells(lines[0]) == ["starting point", "model", "dev accuracy", "dev macro F1",
                               "best seed (dev accuracy)"]
    assert cells(lines[2])[2:] == ["85.00", "80.00", "seed 1: 85.00"]  # no ± for one seed
    assert "one seed (1), so no standard deviation" in markdown
    assert "on the dev split" in markdown
    comparison["runs"] = comparison["runs"][:1]
    comparison["differences"] = []
    single = comparison_report.render_markdown(comparison)
    assert len(table_lines(single)) == 3 and "Δ" not in single


def test_pipes_and_line_breaks_in_labels_keep_the_tables_valid():
    comparison = make_comparison()
    comparison["runs"][1]["label"] = "pretrained | wwm\nv2"
    for item in comparison["differences"]:
        item["label"] = "pretrained | wwm\nv2"
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[3])[0] == "pretrained \\| wwm v2"
    assert cells(lines[6])[0] == "pretrained \\| wwm v2"
    for table in (lines[:4], lines[4:]):
        assert len({len(cells(line)) for line in table}) == 1


def test_comparison_rows_hold_the_numbers_behind_the_tables():
    rows = comparison_report.comparison_rows(
        comparison_report.judge_differences(make_comparison()))
    first, second = rows
    assert first["seeds"] == [1, 2, 3] and first["against_first_run"] is None
    assert first["dev"]["accuracy"]["mean"] == pytest.approx(0.86)
    assert first["dev"]["accuracy"]["std"] == pytest.approx(0.01)
    assert first["test"]["macro_f1"]["std"] == pytest.approx(0.04)
    assert second["best_seed"] == {"seed": 3, "metric": "accuracy", "dev": 0.93}
    assert second["init_checkpoint"] == "out/pretrain/model.ckpt-1000"
    assert second["against_first_run"]["accuracy"] == {
        "difference": 0.07, "low": 0.051, "high": 0.0893, "verdict": "better", "flags": [],
        "interval_verdict": "better", "confidence": 0.95, "num_samples": 2000}


def test_identical_runs_through_the_bootstrap_read_as_no_evidence():
    comparison = make_comparison()
    comparison["runs"][1] = dict(copy.deepcopy(comparison["runs"][0]), label="same again")
    rng = np.random.default_rng(0)
    stats = (rng.random((3, 400, 1)) < 0.8).astype(float)
    comparison["differences"] = [
        dict(statistics.paired_bootstrap(stats, stats.copy(), "accuracy", num_samples=200),
             label="same again", metric=metric) for metric in ("accuracy", "macro_f1")]
    lines = table_lines(comparison_report.render_markdown(comparison))
    assert cells(lines[6])[2:] == ["+0.00", "[+0.00, +0.00]", "no evidence"]


def test_inconsistent_input_is_refused():
    comparison = make_comparison()
    comparison["runs"][1]["label"] = "random init"
    with pytest.raises(ValueError, match="unique"):
        comparison_report.render_markdown(comparison)
    comparison = make_comparison()
    del comparison["runs"][1]["per_seed"][2]
    with pytest.raises(ValueError, match="every run must use the same seeds"):
        comparison_report.render_markdown(comparison)
    comparison = make_comparison()
    comparison["selection_metric"] = "f1"
    with pytest.raises(ValueError, match="selection metric"):
        comparison_report.comparison_rows(comparison)
