"""finetune.experiment_table: rows from scripts/lcqmc_experiment.sh's folders."""
import json
import math

import pytest

from finetune import experiment_table


def _results(path, model, dev, test):
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(
        {"runs": [{"model": model, "dev_accuracy": dev, "test_accuracy": test}]}))


@pytest.fixture
def runs_dir(tmp_path):
    bert, albert = "bert L4 H256 V21128", "albert L4 H256 V21128"
    for seed, (dev, test) in {1: (0.50, 0.60), 2: (0.52, 0.62)}.items():
        _results(tmp_path / "baseline-small_bert" / f"seed{seed}", bert, dev, test)
        _results(tmp_path / "baseline-small_albert" / f"seed{seed}", albert, dev - 0.1, test - 0.1)
        _results(tmp_path / "roberta" / "finetune" / f"seed{seed}", bert, dev + 0.05 * seed,
                 test + 0.04)
        _results(tmp_path / "albert" / "finetune" / f"seed{seed}", albert, dev, test)
    _results(tmp_path / "span" / "finetune" / "seed3", bert, 0.9, 0.9)  # no baseline seed 3
    (tmp_path / "roberta" / "pretrain").mkdir()
    (tmp_path / "roberta" / "pretrain" / "eval_results.txt").write_text(
        "global_step = 500\nmasked_lm_accuracy = 0.25\nmasked_lm_loss = 4.5\n")
    return tmp_path


def test_rows_pair_each_recipe_with_its_architecture_and_seed(runs_dir):
    rows = experiment_table.collect_rows(str(runs_dir))
    assert [row["recipe"] for row in rows] == ["roberta", "albert"]  # span: no baseline
    roberta, albert = rows
    assert roberta["seeds"] == [1, 2]
    assert roberta["baseline_dev"] == [0.50, 0.52]
    assert roberta["pretrained_dev"] == pytest.approx([0.55, 0.62])
    assert albert["baseline_test"] == pytest.approx([0.50, 0.52])
    assert roberta["pretraining"]["masked_lm_loss"] == 4.5


def test_table_reports_means_standard_errors_and_paired_differences(runs_dir):
    table = experiment_table.markdown_table(experiment_table.collect_rows(str(runs_dir)))
    roberta_line = table.splitlines()[2]
    # dev deltas 5 and 10 points: mean 7.5, se = sd / sqrt(2) = 3.5355 / 1.4142 = 2.5
    assert "+7.50 ± 2.50" in roberta_line
    assert "+4.00 ± 0.00" in roberta_line  # test deltas 4 and 4
    assert f"{51.0:.2f} ± {math.sqrt(2) / math.sqrt(2):.2f}" in roberta_line  # baseline dev
    assert "MLM loss 4.50, MLM acc 25.0%" in roberta_line


def test_mean_and_se():
    assert experiment_table.mean_and_se([1.0]) == (1.0, None)
    mean, se = experiment_table.mean_and_se([1.0, 2.0, 3.0])
    assert mean == 2.0 and se == pytest.approx(1 / math.sqrt(3))
