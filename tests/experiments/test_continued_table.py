"""experiments/continued_table.py: the continued-pretraining table read from what
scripts/continued_experiment.sh leaves (compare's results.json and the continued run's
eval_results.txt); the Δ is the continued model's against the general one."""
import json

import pytest

from tests.testutil.cli_runs import run_main_in_process
from experiments import continued_table
from tests.finetune.test_comparison_report import cells, difference, seed_result, table_lines


def write_row(root, task, model, continued_dev=(0.90, 0.91, 0.92), verdict="better",
               low=0.01, comparison_name="compare", examples=16000):
    row = root / task / model
    (row / comparison_name).mkdir(parents=True)
    (row / "continued").mkdir(exist_ok=True)
    def runs(devs, tests):
        return [seed_result(seed, {"accuracy": dev}, {"accuracy": test})
                for seed, dev, test in zip((1, 2, 3), devs, tests)]
    comparison = {
        "task": "classification", "title": f"{task}", "metrics": ["accuracy"],
        "selection_metric": "accuracy", "seeds": [1, 2, 3], "evaluated_split": "test",
        "settings": {"max_train_examples": examples, "num_train_epochs": 1.0},
        "runs": [{"label": "general", "model": "bert L4 H256 V21128", "init_checkpoint": "g",
                  "per_seed": runs((0.86, 0.87, 0.88), (0.85, 0.86, 0.87))},
                 {"label": "general + continued", "model": "bert L4 H256 V21128",
                  "init_checkpoint": "c", "per_seed": runs(continued_dev, (0.88, 0.89, 0.90))},
                 {"label": "random init", "model": "bert L4 H256 V21128",
                  "init_checkpoint": None, "per_seed": runs((0.7, 0.7, 0.7), (0.7, 0.7, 0.7))}],
        "differences": [difference("general + continued", "accuracy", 0.03, low, 0.05, verdict),
                        difference("random init", "accuracy", -0.16, -0.18, -0.14, "worse")]}
    (row / comparison_name / "results.json").write_text(json.dumps(comparison))
    (row / "continued" / "eval_results.txt").write_text(
        "global_step = 1000\nmasked_lm_accuracy = 0.30\ninit_masked_lm_accuracy = 0.25\n"
        "general/masked_lm_accuracy = 0.20\ngeneral/init_masked_lm_accuracy = 0.22\n")
    return row


def test_a_row_shows_start_and_end_evals_and_the_continued_minus_general_delta(tmp_path):
    write_row(tmp_path, "lcqmc", "roberta")
    write_row(tmp_path, "chnsenticorp", "roberta", verdict="no evidence", low=-0.01)
    rows = continued_table.collect_rows(str(tmp_path))
    assert [(row["task"], row["model_name"]) for row in rows] == [
        ("chnsenticorp", "roberta"), ("lcqmc", "roberta")]
    lines = table_lines(continued_table.markdown_table(rows))
    assert len(lines) == 4
    lcqmc = cells(lines[3])
    assert lcqmc[:6] == ["lcqmc", "roberta: bert L4 H256 V21128", "25.0 → 30.0", "22.0 → 20.0",
                         "accuracy", "16,000 × 1 ep."]
    assert lcqmc[6] == "87.00 ± 1.00 / 86.00 ± 1.00"  # general
    assert lcqmc[7] == "91.00 ± 1.00 / 89.00 ± 1.00"  # general + continued
    assert lcqmc[8:10] == ["+3.00 [+1.00, +5.00]", "**better**"]
    assert lcqmc[10] == "70.00 ± 0.00 / 70.00 ± 0.00" and lcqmc[11] == "1, 2, 3"
    assert cells(lines[2])[8:10] == ["+3.00 [-1.00, +5.00]", "no evidence"]


def test_a_row_fine_tuned_at_a_second_budget_gets_a_line_per_budget(tmp_path):
    write_row(tmp_path, "lcqmc", "roberta", comparison_name="compare_train120000",
               examples=120000, verdict="no evidence", low=-0.01)
    write_row(tmp_path, "lcqmc", "roberta")
    write_row(tmp_path, "lcqmc", "roberta", comparison_name="compare_train40000",
               examples=40000, verdict="no evidence", low=-0.02)
    (tmp_path / "lcqmc" / "roberta" / "compare_trainx").mkdir()  # not a comparison: ignored
    (tmp_path / "lcqmc" / "roberta" / "compare_train5").mkdir()  # no results yet: ignored
    assert continued_table.comparisons(str(tmp_path / "lcqmc" / "roberta")) == [
        "compare", "compare_train40000", "compare_train120000"]
    lines = table_lines(continued_table.markdown_table(
        continued_table.collect_rows(str(tmp_path))))
    assert [cells(line)[5] for line in lines[2:]] == [
        "16,000 × 1 ep.", "40,000 × 1 ep.", "120,000 × 1 ep."]
    assert [cells(line)[8] for line in lines[2:]] == [
        "+3.00 [+1.00, +5.00]", "+3.00 [-2.00, +5.00]", "+3.00 [-1.00, +5.00]"]
    assert {cells(line)[2] for line in lines[2:]} == {"25.0 → 30.0"}  # one continued run


def test_a_row_not_yet_fine_tuned_shows_its_evals_and_says_so(tmp_path):
    write_row(tmp_path, "lcqmc", "roberta")
    row = tmp_path / "msra" / "roberta" / "continued"
    row.mkdir(parents=True)
    (row / "eval_results.txt").write_text(
        "masked_lm_accuracy = 0.149\ninit_masked_lm_accuracy = 0.142\n"
        "general/masked_lm_accuracy = 0.137\ngeneral/init_masked_lm_accuracy = 0.138\n")
    (row / "bert_config.json").write_text(json.dumps({
        "vocab_size": 21128, "hidden_size": 256, "num_hidden_layers": 4}))
    lines = table_lines(continued_table.markdown_table(
        continued_table.collect_rows(str(tmp_path))))
    msra = cells(lines[3])
    assert msra[:4] == ["msra", "roberta: bert L4 H256 V21128", "14.2 → 14.9", "13.8 → 13.7"]
    assert msra[4:8] == [continued_table.NOT_RUN, "", continued_table.NOT_RUN,
                         continued_table.NOT_RUN] and msra[8:] == ["", "", "", ""]


def test_a_comparison_without_the_general_run_is_refused_by_name(tmp_path):
    row = write_row(tmp_path, "lcqmc", "roberta")
    path = row / "compare" / "results.json"
    comparison = json.loads(path.read_text())
    comparison["runs"][0]["label"] = "before"
    comparison["differences"] = []
    path.write_text(json.dumps(comparison))
    with pytest.raises(ValueError, match="expected the runs 'general' and 'general \\+ continued'"):
        continued_table.collect_rows(str(tmp_path))


def test_the_cli_writes_the_table_or_says_what_to_run(tmp_path):
    code, _, err, _ = run_main_in_process("experiments.continued_table",
                                          [f"--runs_dir={tmp_path}"], tmp_path)
    assert code == 2 and "bash scripts/continued_experiment.sh TASK MODEL" in err
    write_row(tmp_path, "msra", "albert")
    code, out, err, _ = run_main_in_process(
        "experiments.continued_table", [f"--runs_dir={tmp_path}",
                                     f"--output_file={tmp_path}/table.md"], tmp_path)
    assert code == 0, err
    written = (tmp_path / "table.md").read_text(encoding="utf-8")
    assert "| msra | albert: bert L4 H256 V21128 |" in written and written in out + "\n"


def write_sweep(root, points, comparison_name="compare", examples=16000):
    """A sweep folder as continued_experiment.sh TASK MODEL sweep leaves it: compare's
    results.json (general first, then each point, test Δ per point) and each point's
    eval_results.txt beside its checkpoint."""
    def runs(test):
        return [seed_result(seed, {"accuracy": test + 0.01}, {"accuracy": test})
                for seed in (1, 2, 3)]
    comparison = {
        "task": "pair", "title": "sweep", "metrics": ["accuracy"],
        "selection_metric": "accuracy", "seeds": [1, 2, 3], "evaluated_split": "test",
        "settings": {"max_train_examples": examples, "num_train_epochs": 1.0},
        "runs": [{"label": "general", "model": "bert L4 H256 V21128", "init_checkpoint": "g",
                  "per_seed": runs(0.58)}], "differences": []}
    for label, folder, delta, low, verdict, start, end in points:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "eval_results.txt").write_text(
            f"masked_lm_accuracy = {end}\ninit_masked_lm_accuracy = {start}\n"
            "general/masked_lm_accuracy = 0.12\ngeneral/init_masked_lm_accuracy = 0.138\n")
        comparison["runs"].append({"label": label, "model": "bert L4 H256 V21128",
                                   "init_checkpoint": str(root / folder),
                                   "per_seed": runs(0.58 + delta)})
        comparison["differences"].append(
            difference(label, "accuracy", delta, low, delta + 0.005, verdict))
    (root / comparison_name).mkdir(parents=True)
    (root / comparison_name / "results.json").write_text(json.dumps(comparison))


def test_a_sweep_shows_each_recipe_against_the_general_model_and_names_the_largest(tmp_path):
    sweep = tmp_path / "sweep"
    write_sweep(sweep, [  # in the order compare ran them, not the table's
        ("lr 5e-4, 500 steps", "lr5e-4_steps500", 0.012, 0.004, "better", 0.127, 0.16),
        ("lr 2e-5, 500 steps", "lr2e-5_steps500", 0.001, -0.004, "no evidence", 0.127, 0.13),
        ("lr 1e-4, 1000 steps", "lr1e-4_steps1000", -0.006, -0.01, "worse", 0.127, 0.15),
        ("lr 1e-4, 500 steps", "row_continued", 0.008, 0.003, "better", 0.127, 0.147)])
    lines = table_lines(continued_table.sweep_table(continued_table.read_sweep(str(sweep))))
    assert [cells(line)[0] for line in lines[2:]] == [
        "general (not continued)", "lr 2e-5, 500 steps", "lr 1e-4, 500 steps",
        "lr 5e-4, 500 steps", "lr 1e-4, 1000 steps"]
    assert cells(lines[2])[3] == "59.00 ± 0.00 / 58.00 ± 0.00"
    assert cells(lines[5]) == ["lr 5e-4, 500 steps", "12.7 → 16.0", "13.8 → 12.0",
                               "60.20 ± 0.00 / 59.20 ± 0.00", "+1.20 [+0.40, +1.70]",
                               "**better**"]
    assert cells(lines[6])[4:] == ["-0.60 [-1.00, -0.10]", "**worse**"]
    table = continued_table.sweep_table(continued_table.read_sweep(str(sweep)))
    assert table.splitlines()[-1].startswith("Largest Δ: lr 5e-4, 500 steps (seeds 1, 2, 3; "
                                             "fine-tuned on 16,000 × 1 ep.;")
    # [+0.4, +1.7] overlaps 2e-5's [-0.4, +0.6] and 1e-4 x 500's [+0.3, +1.3], not
    # 1e-4 x 1000's [-1.0, -0.1]
    assert table.splitlines()[-1].endswith(
        " Its interval overlaps that of lr 2e-5, 500 steps and lr 1e-4, 500 steps: at these "
        "seeds the sweep does not tell them apart.")


def test_a_sweep_comparison_with_a_run_that_is_no_sweep_point_is_refused(tmp_path):
    write_sweep(tmp_path, [("general + continued", "c", 0.01, 0.0, "better", 0.1, 0.2)])
    with pytest.raises(ValueError, match="run 'general \\+ continued' is not a sweep point"):
        continued_table.read_sweep(str(tmp_path))


def test_the_cli_takes_runs_dir_or_sweep_dir(tmp_path):
    for args, message in (([], "give --runs_dir (the rows' table) or --sweep_dir"),
                          ([f"--runs_dir={tmp_path}", f"--sweep_dir={tmp_path}"],
                           "give --runs_dir (the rows' table) or --sweep_dir"),
                          ([f"--sweep_dir={tmp_path}"],
                           "bash scripts/continued_experiment.sh TASK MODEL sweep")):
        code, _, err, _ = run_main_in_process("experiments.continued_table", args, tmp_path)
        assert code == 2 and message in err and "Traceback" not in err
    write_sweep(tmp_path / "sweep", [("lr 1e-4, 500 steps", "p", 0.01, 0.002, "better",
                                       0.1, 0.2)])
    code, out, err, _ = run_main_in_process(
        "experiments.continued_table", [f"--sweep_dir={tmp_path}/sweep",
                                     f"--output_file={tmp_path}/sweep/table.md"], tmp_path)
    assert code == 0, err
    assert "| lr 1e-4, 500 steps | 10.0 → 20.0 |" in (tmp_path / "sweep" / "table.md").read_text()
    # a second budget's comparison beside it, read by name
    write_sweep(tmp_path / "sweep", [("lr 1e-4, 500 steps", "p", -0.02, -0.03, "worse",
                                       0.1, 0.2)], "compare_train40000", examples=40000)
    code, out, err, _ = run_main_in_process(
        "experiments.continued_table", [f"--sweep_dir={tmp_path}/sweep",
                                     "--comparison=compare_train40000"], tmp_path)
    assert code == 0, err
    assert "| -2.00 [-3.00, -1.50] | **worse** |" in out
    assert "fine-tuned on 40,000 × 1 ep.;" in out
    for name, message in (("compare_40k", "--comparison=compare_40k: give compare or "
                           "compare_trainN"),
                          ("compare_train9", "no compare_train9/results.json yet")):
        code, _, err, _ = run_main_in_process(
            "experiments.continued_table", [f"--sweep_dir={tmp_path}/sweep",
                                         f"--comparison={name}"], tmp_path)
        assert code == 2 and message in err and "Traceback" not in err
