"""experiments/arms_table.py: a task's arms table (each arm against today's recipe, every MLM
number on the same static held-out batches) and #66's decision rule across the three tasks,
read from fixture files laid out as continued_experiment.sh TASK roberta arms leaves them."""
import json
import shutil

import pytest

from experiments import arms_table
from tests.experiments.test_continued_table import cells, table_lines
from tests.finetune.test_comparison_report import difference, seed_result
from tests.testutil.cli_runs import run_main_in_process

TODAY = "static15_poly"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_arms(runs, task, deltas, comparison_name="compare", seeds=(1, 2, 3)):
    """RUNS/TASK/roberta: today's continued/ and arms/ARM/ runs with their evals, and
    arms/COMPARISON/results.json with today's recipe and one run per arm of `deltas`
    ({arm: (difference, low, high, verdict)}, in accuracy)."""
    row = runs / task / "roberta"
    _write(row / "continued" / "eval_results.txt",
           "init_masked_lm_accuracy = 0.25\nmasked_lm_accuracy = 0.30\n"
           "general/init_masked_lm_accuracy = 0.22\ngeneral/masked_lm_accuracy = 0.20\n")
    for arm in deltas:
        if arm.startswith("tt"):  # its own (train-time) eval, and the static one
            _write(row / "arms" / arm / "eval_results.txt",
                   "init_masked_lm_accuracy = 0.18\nmasked_lm_accuracy = 0.27\n")
            _write(row / "arms" / arm / "static_eval" / "eval_results.txt",
                   "init_masked_lm_accuracy = 0.31\nmasked_lm_accuracy = 0.31\n"
                   "general/init_masked_lm_accuracy = 0.21\ngeneral/masked_lm_accuracy = 0.21\n")
        else:
            _write(row / "arms" / arm / "eval_results.txt",
                   "init_masked_lm_accuracy = 0.25\nmasked_lm_accuracy = 0.32\n"
                   "general/init_masked_lm_accuracy = 0.22\ngeneral/masked_lm_accuracy = 0.19\n")

    def runs_of(label, folder, test):
        return {"label": label, "model": "bert L4 H256 V21128", "init_checkpoint": str(folder),
                "per_seed": [seed_result(seed, {"accuracy": 0.80}, {"accuracy": test})
                             for seed in seeds]}
    comparison = {
        "task": "pair", "title": task, "metrics": ["accuracy"], "selection_metric": "accuracy",
        "seeds": list(seeds), "evaluated_split": "test",
        "settings": {"max_train_examples": 40000, "num_train_epochs": 1.0},
        "runs": [runs_of(TODAY, row / "continued", 0.78)] + [
            runs_of(arm, row / "arms" / arm, 0.78 + values[0]) for arm, values in deltas.items()],
        "differences": [difference(arm, "accuracy", *values) for arm, values in deltas.items()]}
    _write(row / "arms" / comparison_name / "results.json", json.dumps(comparison))
    return row / "arms"


def test_an_arms_table_scores_every_arm_on_the_static_held_out_data(tmp_path):
    arms_dir = write_arms(tmp_path, "lcqmc", {
        "tt30_poly": (0.02, 0.01, 0.03, "better"),
        "static15_wsd": (-0.01, -0.02, 0.005, "no evidence")})
    comparison = arms_table.read_arms_comparison(str(arms_dir), "compare")
    lines = table_lines(arms_table.arms_table(comparison))
    assert len(lines) == 5
    today, tt30, wsd = (cells(line) for line in lines[2:])
    assert today[0] == TODAY and today[2:5] == ["25.0 → 30.0", "22.0 → 20.0",
                                                "(static: the column before)"]
    assert today[5:] == ["80.00 ± 0.00 / 78.00 ± 0.00", "", "—"]
    # a train-time arm: the static end from static_eval/, the start today's (the general
    # model on the same batches), its own train-time eval beside them at its final rate
    assert tt30[0] == "tt30_poly"
    assert tt30[2:5] == ["25.0 → 31.0", "22.0 → 21.0", "18.0 → 27.0 (masks at 0.3)"]
    assert tt30[5:] == ["80.00 ± 0.00 / 80.00 ± 0.00", "+2.00 [+1.00, +3.00]", "**better**"]
    assert wsd[2:4] == ["25.0 → 32.0", "22.0 → 19.0"]
    assert wsd[6:] == ["-1.00 [-2.00, +0.50]", "no evidence"]
    text = arms_table.arms_table(comparison)
    assert ("Told apart from static15_poly on this task (seeds 1, 2, 3; fine-tuned on "
            "40,000 × 1 ep.; Δ in points of test accuracy): better: tt30_poly; worse: none."
            ) in text


def test_the_final_rate_of_a_train_time_arm():
    assert arms_table.final_rate(["--mlm_probability=0.3", "--final_mlm_probability=0.15",
                                  "--decay_type=cosine"]) == "0.15"
    assert arms_table.final_rate(["--mlm_probability=0.3"]) == "0.3"


@pytest.mark.parametrize("low,high,verdict,expected", [
    (0.01, 0.03, "better", "better"),
    (0.01, 0.03, "no verdict: collapsed run (seed 2)", "neither"),  # withheld: not better
    (-0.01, 0.03, "no evidence", "neither"),
    (-0.03, -0.01, "worse", "worse"),
    (-0.03, -0.01, "no verdict: baseline at chance", "worse"),  # below 0 counts, withheld
])
def test_told_apart_is_the_interval_with_a_standing_verdict_for_better(low, high, verdict,
                                                                       expected):
    assert arms_table.told_apart({"low": low, "high": high, "verdict": verdict}) == expected
    assert arms_table.told_apart(None) is None


def test_the_rule_needs_two_tasks_better_and_none_worse():
    by_task = {"chnsenticorp": {"a": "better", "b": "better", "c": "better", "d": "neither"},
               "msra": {"a": "better", "b": "better", "c": "neither", "d": "better"},
               "lcqmc": {"a": "neither", "b": "worse", "c": "neither", "d": None}}
    decided = arms_table.decide(by_task, ["a", "b", "c", "d"])
    assert decided["a"] == {"better": ["chnsenticorp", "msra"], "worse": [], "missing": [],
                            "adopted": True}
    assert decided["b"]["worse"] == ["lcqmc"] and not decided["b"]["adopted"]
    assert decided["c"]["better"] == ["chnsenticorp"] and not decided["c"]["adopted"]
    assert decided["d"]["missing"] == ["lcqmc"] and not decided["d"]["adopted"]
    tasks = list(by_task)
    assert arms_table.decision_line(decided, TODAY, tasks) == (
        "#66's decision: a meets the rule (better than static15_poly on at least 2 tasks, "
        "worse on none): the continuing default changes.")
    del decided["a"]
    assert arms_table.decision_line(decided, TODAY, tasks) == (
        "#66's decision: not yet: d still to be compared on 3 tasks (not compared on: no arms "
        "comparison there, or not in it).")
    del decided["d"]
    assert arms_table.decision_line(decided, TODAY, tasks) == (
        "#66's decision: static15_poly (today's recipe) stays the continuing default: no arm "
        "is better on at least 2 of the 3 tasks and worse on none.")


def _all_arms(delta):
    names = ["tt15_poly", "tt30_poly", "tt30to15_poly", "static15_wsd", "tt15_wsd", "tt30_wsd",
             "tt30to15_wsd"]
    return {name: delta for name in names}


def test_the_decision_reads_each_tasks_comparison_of_continuing_arms_json(tmp_path):
    neither = (0.0, -0.01, 0.01, "no evidence")
    better = (0.02, 0.01, 0.03, "better")
    write_arms(tmp_path, "chnsenticorp", dict(_all_arms(neither), tt30_poly=better))
    write_arms(tmp_path, "msra", dict(_all_arms(neither), tt30_poly=better))
    # lcqmc's is read at 40,000 pairs: its comparison at the task's budget is not the one
    write_arms(tmp_path, "lcqmc", _all_arms((-0.02, -0.03, -0.01, "worse")))
    write_arms(tmp_path, "lcqmc", _all_arms(neither), comparison_name="compare_train40000")
    code, out, err, _ = run_main_in_process(
        "experiments.arms_table", [f"--decision_runs={tmp_path}", "--measured_dir=none",
                                   f"--output_file={tmp_path / 'decision.md'}"], tmp_path)
    assert code == 0, err
    text = (tmp_path / "decision.md").read_text(encoding="utf-8")
    assert "| tt30_poly | chnsenticorp, msra | none | none | yes |" in text
    assert "| tt15_poly | none | none | none | no |" in text
    assert ("#66's decision: tt30_poly meets the rule (better than static15_poly on at least 2 "
            "tasks, worse on none): the continuing default changes.") in text
    assert text.rstrip("\n").endswith(f"Read from: chnsenticorp: {tmp_path}/chnsenticorp/roberta/"
                                      f"arms/compare; msra: {tmp_path}/msra/roberta/arms/compare; "
                                      f"lcqmc: {tmp_path}/lcqmc/roberta/arms/compare_train40000.")
    assert "wrote " in out


def test_a_tasks_table_ends_with_the_decision_so_far(tmp_path):
    arms_dir = write_arms(tmp_path, "msra", {"tt15_poly": (0.0, -0.01, 0.01, "no evidence")})
    out = tmp_path / "table.md"
    code, _, err, _ = run_main_in_process("experiments.arms_table", [
        f"--arms_dir={arms_dir}", "--comparison=compare", f"--output_file={out}",
        f"--measured_dir={tmp_path / 'none'}"], tmp_path)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert "| tt15_poly | masks drawn at train time, 15% |" in text
    assert "| tt15_poly | none | none | chnsenticorp, lcqmc | no |" in text
    assert "| tt30_poly | none | none | chnsenticorp, msra, lcqmc | no |" in text
    assert ("#66's decision: not yet: tt15_poly, tt30_poly, tt30to15_poly, static15_wsd, "
            "tt15_wsd, tt30_wsd, tt30to15_wsd still to be compared on 3 tasks (not compared on: "
            "no arms comparison there, or not in it).\n\nRead from: msra: ") in text


def test_a_tasks_summary_renders_as_its_runs_and_stands_in_for_them_once_gone(tmp_path):
    runs, measured = tmp_path / "runs", tmp_path / "measured"
    better = (0.02, 0.01, 0.03, "better")
    arms_dir = write_arms(runs, "msra", dict(_all_arms((0.0, -0.01, 0.01, "no evidence")),
                                            tt30_poly=better))
    code, _, err, _ = run_main_in_process("experiments.arms_table", [
        f"--arms_dir={arms_dir}", "--comparison=compare", f"--measured_dir={measured}",
        f"--summary_file={measured / 'arms_msra.json'}"], tmp_path)
    assert code == 0, err
    recorded = arms_table.read_summary(str(measured / "arms_msra.json"))
    assert (recorded["task"], recorded["comparison"]) == ("msra", "compare")
    assert str(tmp_path) not in json.dumps(recorded)  # no paths
    comparison = arms_table.read_arms_comparison(str(arms_dir), "compare")
    assert arms_table.table_lines(recorded) == arms_table.table_lines(comparison)
    assert arms_table.outcomes(recorded) == arms_table.outcomes(comparison)
    # the runs of another task here, msra's gone: the decision reads msra's summary
    write_arms(runs, "chnsenticorp", dict(_all_arms((0.0, -0.01, 0.01, "no evidence")),
                                          tt30_poly=better))
    shutil.rmtree(runs / "msra")
    text = arms_table.collect_decision(str(runs), measured_dir=str(measured))
    assert "| tt30_poly | chnsenticorp, msra | none | lcqmc | no |" in text
    assert text.endswith(f"Read from: chnsenticorp: {runs}/chnsenticorp/roberta/arms/compare; "
                         f"msra: {measured / 'arms_msra.json'}.")
    # a summary of another comparison than the decision's is named and not read
    recorded["comparison"] = "compare_train40000"
    (measured / "arms_msra.json").write_text(json.dumps(recorded), encoding="utf-8")
    text = arms_table.collect_decision(str(runs), measured_dir=str(measured))
    assert "| tt30_poly | chnsenticorp | none | msra, lcqmc | no |" in text
    assert text.endswith(f"msra: {measured / 'arms_msra.json'} (of compare_train40000, not "
                         "compare: not read).")
    # without either, a task is not compared yet
    assert "| tt30_poly | chnsenticorp | none | msra, lcqmc | no |" in \
        arms_table.collect_decision(str(runs), measured_dir=str(tmp_path / "none"))


def test_a_bad_summary_is_refused_naming_the_file_and_field(tmp_path):
    runs, measured = tmp_path / "runs", tmp_path / "measured"
    arms_dir = write_arms(runs, "msra", {"tt15_poly": (0.0, -0.01, 0.01, "no evidence")})
    path = measured / "arms_msra.json"
    code, _, err, _ = run_main_in_process("experiments.arms_table", [
        f"--arms_dir={arms_dir}", f"--measured_dir={measured}", f"--summary_file={path}"],
        tmp_path)
    assert code == 0, err
    shutil.rmtree(runs / "msra")
    good = json.loads(path.read_text(encoding="utf-8"))
    for broken, message in (
            (dict(good, metric=None), "metric must be a str"),
            ({key: value for key, value in good.items() if key != "arms"},
             "missing field(s) arms"),
            (dict(good, arms=[dict(good["arms"][0], row={"label": "x"})]),
             "arms[0].row: missing field(s) against_first_run, collapsed_seeds, dev, test")):
        path.write_text(json.dumps(broken), encoding="utf-8")
        code, _, err, _ = run_main_in_process("experiments.arms_table", [
            f"--decision_runs={runs}", f"--measured_dir={measured}"], tmp_path)
        assert code == 2 and f"{path}" in err and message in err, err
        assert "Traceback" not in err


def test_the_table_without_its_what_column_as_the_docs_give_it(tmp_path):
    arms_dir = write_arms(tmp_path, "msra", {"tt15_poly": (0.0, -0.01, 0.01, "no evidence")})
    comparison = arms_table.read_arms_comparison(str(arms_dir), "compare")
    full, docs = (arms_table.table_lines(comparison, what) for what in (True, False))
    assert [cells(line)[:1] + cells(line)[2:] for line in full[2:]] == [
        cells(line) for line in docs[2:]]
    assert cells(full[3])[1] == "masks drawn at train time, 15%" and len(cells(docs[0])) == 7


def test_a_missing_comparison_or_two_modes_are_refused_in_one_line(tmp_path):
    for argv, message in (
            ([f"--arms_dir={tmp_path}"], "no compare/results.json yet"),
            ([f"--decision_runs={tmp_path}", f"--summary_file={tmp_path}/x.json"],
             "--summary_file goes with --arms_dir"),
            ([f"--arms_dir={tmp_path}", f"--decision_runs={tmp_path}"], "one of them")):
        code, _, err, _ = run_main_in_process("experiments.arms_table", argv, tmp_path)
        assert code == 2 and message in err and "Traceback" not in err
