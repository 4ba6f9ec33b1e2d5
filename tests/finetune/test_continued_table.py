"""finetune/continued_table.py: the continued-pretraining table read from what
scripts/continued_experiment.sh leaves (compare's results.json and the continued run's
eval_results.txt); the Δ is the continued model's against the general one."""
import json

import pytest

from cli_testutil import run_main_in_process
from finetune import continued_table
from test_comparison_report import cells, difference, seed_result, table_lines


def _write_row(root, task, model, continued_dev=(0.90, 0.91, 0.92), verdict="better",
               low=0.01):
    row = root / task / model
    (row / "compare").mkdir(parents=True)
    (row / "continued").mkdir()
    def runs(devs, tests):
        return [seed_result(seed, {"accuracy": dev}, {"accuracy": test})
                for seed, dev, test in zip((1, 2, 3), devs, tests)]
    comparison = {
        "task": "classification", "title": f"{task}", "metrics": ["accuracy"],
        "selection_metric": "accuracy", "seeds": [1, 2, 3], "evaluated_split": "test",
        "runs": [{"label": "general", "model": "bert L4 H256 V21128", "init_checkpoint": "g",
                  "per_seed": runs((0.86, 0.87, 0.88), (0.85, 0.86, 0.87))},
                 {"label": "general + continued", "model": "bert L4 H256 V21128",
                  "init_checkpoint": "c", "per_seed": runs(continued_dev, (0.88, 0.89, 0.90))},
                 {"label": "random init", "model": "bert L4 H256 V21128",
                  "init_checkpoint": None, "per_seed": runs((0.7, 0.7, 0.7), (0.7, 0.7, 0.7))}],
        "differences": [difference("general + continued", "accuracy", 0.03, low, 0.05, verdict),
                        difference("random init", "accuracy", -0.16, -0.18, -0.14, "worse")]}
    (row / "compare" / "results.json").write_text(json.dumps(comparison))
    (row / "continued" / "eval_results.txt").write_text(
        "global_step = 1000\nmasked_lm_accuracy = 0.30\ninit_masked_lm_accuracy = 0.25\n"
        "general/masked_lm_accuracy = 0.20\ngeneral/init_masked_lm_accuracy = 0.22\n")
    return row


def test_a_row_shows_start_and_end_evals_and_the_continued_minus_general_delta(tmp_path):
    _write_row(tmp_path, "lcqmc", "roberta")
    _write_row(tmp_path, "chnsenticorp", "roberta", verdict="no evidence", low=-0.01)
    rows = continued_table.collect_rows(str(tmp_path))
    assert [(row["task"], row["model_name"]) for row in rows] == [
        ("chnsenticorp", "roberta"), ("lcqmc", "roberta")]
    lines = table_lines(continued_table.markdown_table(rows))
    assert len(lines) == 4
    lcqmc = cells(lines[3])
    assert lcqmc[:5] == ["lcqmc", "roberta: bert L4 H256 V21128", "25.0 → 30.0", "22.0 → 20.0",
                         "accuracy"]
    assert lcqmc[5] == "87.00 ± 1.00 / 86.00 ± 1.00"  # general
    assert lcqmc[6] == "91.00 ± 1.00 / 89.00 ± 1.00"  # general + continued
    assert lcqmc[7:9] == ["+3.00 [+1.00, +5.00]", "**better**"]
    assert lcqmc[9] == "70.00 ± 0.00 / 70.00 ± 0.00" and lcqmc[10] == "1, 2, 3"
    assert cells(lines[2])[7:9] == ["+3.00 [-1.00, +5.00]", "no evidence"]


def test_a_row_not_yet_fine_tuned_shows_its_evals_and_says_so(tmp_path):
    _write_row(tmp_path, "lcqmc", "roberta")
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
    assert msra[4:7] == [continued_table.NOT_RUN] * 3 and msra[7:] == ["", "", "", ""]


def test_a_comparison_without_the_general_run_is_refused_by_name(tmp_path):
    row = _write_row(tmp_path, "lcqmc", "roberta")
    path = row / "compare" / "results.json"
    comparison = json.loads(path.read_text())
    comparison["runs"][0]["label"] = "before"
    comparison["differences"] = []
    path.write_text(json.dumps(comparison))
    with pytest.raises(ValueError, match="expected the runs 'general' and 'general \\+ continued'"):
        continued_table.collect_rows(str(tmp_path))


def test_the_cli_writes_the_table_or_says_what_to_run(tmp_path):
    code, _, err, _ = run_main_in_process("finetune.continued_table",
                                          [f"--runs_dir={tmp_path}"], tmp_path)
    assert code == 2 and "bash scripts/continued_experiment.sh TASK MODEL" in err
    _write_row(tmp_path, "msra", "albert")
    code, out, err, _ = run_main_in_process(
        "finetune.continued_table", [f"--runs_dir={tmp_path}",
                                     f"--output_file={tmp_path}/table.md"], tmp_path)
    assert code == 0, err
    written = (tmp_path / "table.md").read_text(encoding="utf-8")
    assert "| msra | albert: bert L4 H256 V21128 |" in written and written in out + "\n"
