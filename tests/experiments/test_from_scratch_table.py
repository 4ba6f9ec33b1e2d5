"""experiments.from_scratch_table: one row per recipe from scripts/lcqmc_experiment.sh's
RUNS/RECIPE/compare/results.json (finetune.compare's results) and pretraining eval.

Tolerances: float64 means and differences of the results given, so pytest.approx's default
(relative 1e-6) is far above their rounding."""
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.testutil.cli_runs import tool_env
from experiments import from_scratch_table
from finetune import comparison_report, statistics
from pretrain.models import flops
from pretrain.models.bert.config import BertConfig

BERT = "bert L4 H256 V21128"
N = 40  # test examples
BOOTSTRAP = 300


def _seed_row(seed, dev, correct, collapsed=False):
    return {"seed": seed, "run_dir": f"runs/seed{seed}",
            "dev": {"accuracy": dev, "macro_f1": dev - 0.1},
            "test": {"accuracy": correct / N, "macro_f1": correct / N - 0.1},
            "best_step": 10, "num_train_steps": 20, "wall_time_seconds": 1.0,
            "collapsed": collapsed, "dev_curve": [{"step": 0, "accuracy": dev}]}


def _stats(metric, correct_per_seed):
    """[seeds, N, K]: gold label 0 everywhere, the first `correct` predictions right."""
    gold = np.zeros(N, int)
    return np.stack([statistics.statistics_for(metric, gold, np.array([0] * k + [1] * (N - k)),
                                               num_labels=2) for k in correct_per_seed])


def write_comparison(folder, recipe, seeds, random_init, pretrained, model=BERT, collapsed=()):
    """RECIPE/compare/results.json as finetune.compare writes it: per-seed rows, paired
    bootstraps of both metrics (statistics.paired_bootstrap) and comparison_report's rows.
    random_init, pretrained: [(dev accuracy, correct test examples)] per seed."""
    runs = [{"label": label, "model": model, "init_checkpoint": checkpoint,
             "per_seed": [_seed_row(seed, dev, correct, label != "random init"
                                    and seed in collapsed)
                          for seed, (dev, correct) in zip(seeds, values)]}
            for label, checkpoint, values in (("random init", None, random_init),
                                              (recipe, f"{folder}/pretrain", pretrained))]
    differences = [dict(statistics.paired_bootstrap(
        _stats(metric, [c for _, c in random_init]), _stats(metric, [c for _, c in pretrained]),
        metric, num_samples=BOOTSTRAP), label=recipe, metric=metric)
        for metric in ("accuracy", "macro_f1")]
    comparison = {"task": "pair", "labels": ["0", "1"], "title": "pair fine-tuning on lcqmc",
                  "metrics": ["accuracy", "macro_f1"], "selection_metric": "accuracy",
                  "seeds": list(seeds), "evaluated_split": "test", "runs": runs,
                  "differences": differences, "settings": {}}
    comparison["rows"] = comparison_report.comparison_rows(comparison)
    (folder / "compare").mkdir(parents=True)
    (folder / "compare" / "results.json").write_text(json.dumps(comparison))
    return comparison


# Dev accuracy and correct test examples (of N = 40) per seed 1, 2, 3.
RANDOM_INIT = [(0.50, 20), (0.52, 22), (0.54, 24)]   # dev 52 ± 2, test 55 ± 5
PRETRAINED = [(0.70, 32), (0.75, 34), (0.80, 36)]    # dev 75 ± 5, test 85 ± 5


ROBERTA_CONFIG = dict(model_type="bert", vocab_size=21128, hidden_size=256, num_hidden_layers=4,
                      num_attention_heads=4, intermediate_size=1024)


def _pretraining_files(recipe_dir):
    """What lcqmc_experiment.sh leaves beside eval_results.txt: the config, the settings
    and a data sidecar (sequence 64, 10 predictions)."""
    (recipe_dir / "pretrain" / "bert_config.json").write_text(json.dumps(ROBERTA_CONFIG))
    (recipe_dir / "pretrain" / "experiment_settings.txt").write_text(
        "PRETRAIN_STEPS=500\nPRETRAIN_BATCH_SIZE=64\n")
    (recipe_dir / "data").mkdir()
    (recipe_dir / "data" / "lcqmc-00000-of-00001.meta.json").write_text(
        json.dumps({"max_seq_length": 64, "max_predictions_per_seq": 10}))


@pytest.fixture
def runs_dir(tmp_path):
    saved = {
        "roberta": write_comparison(tmp_path / "roberta", "roberta", [1, 2, 3], RANDOM_INIT,
                                    PRETRAINED),
        "albert": write_comparison(tmp_path / "albert", "albert", [1, 2, 3], RANDOM_INIT,
                                   RANDOM_INIT, model="albert L4 H256 V21128"),
        "span": write_comparison(tmp_path / "span", "span", [1, 2, 3], RANDOM_INIT, PRETRAINED,
                                 collapsed=(2,)),
        "custom": write_comparison(tmp_path / "custom", "custom", [7], [(0.6, 25)],
                                   [(0.625, 26)]),
    }
    (tmp_path / "macbert" / "pretrain").mkdir(parents=True)  # pretrained, not compared yet
    (tmp_path / "roberta" / "pretrain").mkdir()
    (tmp_path / "roberta" / "pretrain" / "eval_results.txt").write_text(
        "global_step = 500\nmasked_lm_accuracy = 0.25\nmasked_lm_loss = 4.5\n"
        "masked_lm_unigram_accuracy = 0.05\n")
    _pretraining_files(tmp_path / "roberta")
    (tmp_path / "albert" / "pretrain").mkdir()  # on its unigram plateau
    (tmp_path / "albert" / "pretrain" / "eval_results.txt").write_text(
        "masked_lm_accuracy = 0.05\nmasked_lm_loss = 6.0\nmasked_lm_unigram_accuracy = 0.049\n"
        "masked_lm_unigram_loss = 5.9\nmasked_lm_num_targets = 12800\n")
    (tmp_path / "span" / "pretrain").mkdir()
    (tmp_path / "span" / "pretrain" / "eval_results.txt").write_text(
        "masked_lm_loss = 5.25\nspan_boundary_loss = 6.125\n")
    return tmp_path, saved


def _delta(comparison):
    accuracy = next(d for d in comparison["differences"] if d["metric"] == "accuracy")
    return accuracy, (f"{100 * accuracy['difference']:+.2f} [{100 * accuracy['low']:+.2f}, "
                      f"{100 * accuracy['high']:+.2f}]")


def test_rows_come_from_each_recipes_comparison_in_recipe_order(runs_dir):
    folder, saved = runs_dir
    rows = from_scratch_table.collect_rows(str(folder))
    assert [row["recipe"] for row in rows] == ["roberta", "albert", "span", "custom"]
    roberta = rows[0]
    assert roberta["seeds"] == [1, 2, 3] and roberta["model"] == BERT
    assert roberta["random_init"] == saved["roberta"]["rows"][0]
    assert roberta["pretrained"]["test"]["accuracy"]["mean"] == pytest.approx(0.85)
    assert roberta["difference"]["metric"] == "accuracy"  # not macro_f1's entry
    assert roberta["difference"]["difference"] == pytest.approx(0.30)
    assert roberta["pretraining"] == {"global_step": 500, "masked_lm_accuracy": 0.25,
                                      "masked_lm_loss": 4.5, "masked_lm_unigram_accuracy": 0.05}
    assert rows[3]["pretraining"] == {}
    # 500 evaluated steps x 64 x the count per example; rows without the files: None.
    per_example = flops.masked_lm_training_flops(BertConfig(**ROBERTA_CONFIG), 64, 10)
    assert roberta["pretraining_flops"] == 500 * 64 * per_example
    # About 6 x 3.15M encoder weights x 64 tokens, plus attention and the MLM head.
    assert 1.5e9 < per_example < 1.7e9
    assert [row["pretraining_flops"] for row in rows[1:]] == [None, None, None]


def test_table_cells_are_compares_means_sds_differences_and_verdicts(runs_dir):
    folder, saved = runs_dir
    header, rule, roberta, albert, span, custom = from_scratch_table.markdown_table(
        from_scratch_table.collect_rows(str(folder))).splitlines()
    assert header == ("| recipe | model | pretraining eval | random init dev / test acc. "
                      "| pretrained dev / test acc. | Δ test acc. [95% CI] | verdict | seeds "
                      "| pretraining TFLOP |")
    assert rule == "|---|---|---|---|---|---:|---|---|---:|"
    accuracy, delta = _delta(saved["roberta"])
    assert delta.startswith("+30.00 [+") and 0 < accuracy["low"] < 0.3 < accuracy["high"]
    assert roberta == (f"| RoBERTa: whole-word masking | {BERT} | MLM loss 4.50, MLM acc 25.0%, unigram 5.0% "
                       f"| 52.00 ± 2.00 / 55.00 ± 5.00 | 75.00 ± 5.00 / 85.00 ± 5.00 "
                       f"| {delta} | **better** | 1, 2, 3 | 50.8 |")
    # The same predictions from both starts: Δ 0 with an interval [0, 0], no evidence; its
    # pretraining never left the plateau, and the cell says so.
    assert albert == ("| ALBERT: SOP + n-gram masking | albert L4 H256 V21128 | MLM loss 6.00, "
                      "MLM acc 5.0%, unigram 4.9% (not learned: MLM on its unigram plateau) "
                      "| 52.00 ± 2.00 / 55.00 ± 5.00 | 52.00 ± 2.00 / 55.00 ± 5.00 "
                      "| +0.00 [+0.00, +0.00] | no evidence | 1, 2, 3 | — |")
    assert saved["span"]["rows"][1]["collapsed_seeds"] == [2]
    assert span == (f"| SpanBERT: spans + SBO | {BERT} | MLM loss 5.25, SBO loss 6.12 "
                    "| 52.00 ± 2.00 / 55.00 ± 5.00 "
                    "| 75.00 ± 5.00 / 85.00 ± 5.00 collapsed (seed 2) "
                    f"| {_delta(saved['span'])[1]} | no verdict: collapsed run (seed 2) "
                    "| 1, 2, 3 | — |")
    # One seed: means alone, no ±; 26 vs 25 correct of 40 is +2.50 points.
    _, custom_delta = _delta(saved["custom"])
    assert custom_delta.startswith("+2.50 [")
    assert custom == (f"| custom | {BERT} | — | 60.00 / 62.50 | 62.50 / 65.00 "
                      f"| {custom_delta} | 1 seed: too few for a verdict | 7 | — |")


def test_electras_cell_shows_replaced_token_detection_beside_its_baseline(tmp_path):
    """ELECTRA's discriminator: its AUC, its accuracy and the accuracy of always answering
    "original" on the same eval tokens, after the generator's MLM and its unigram baseline."""
    write_comparison(tmp_path / "electra", "electra", [1, 2, 3], RANDOM_INIT, PRETRAINED,
                     model="electra L4 H256 V21128")
    (tmp_path / "electra" / "pretrain").mkdir()
    (tmp_path / "electra" / "pretrain" / "eval_results.txt").write_text(
        "disc_accuracy = 0.859\ndisc_auc = 0.6064\ndisc_majority_accuracy = 0.8583\n"
        "disc_recall = 0.0096\nmasked_lm_accuracy = 0.13\nmasked_lm_loss = 5.71\n"
        "masked_lm_unigram_accuracy = 0.045\n")
    (row,) = from_scratch_table.markdown_table(
        from_scratch_table.collect_rows(str(tmp_path))).splitlines()[2:]
    assert row.startswith("| ELECTRA: replaced-token detection | electra L4 H256 V21128 | MLM loss "
                          "5.71, MLM acc 13.0%, unigram 4.5%, RTD AUC 0.606, RTD acc 85.9%, "
                          "always original 85.8% | ")


def test_footnote_says_what_the_numbers_are_with_compares_method(runs_dir):
    folder, saved = runs_dir
    rows = from_scratch_table.collect_rows(str(folder))
    three_seeds = saved["roberta"]["differences"][0]["method"]
    assert three_seeds == (f"Hierarchical paired bootstrap: each of {BOOTSTRAP} replicates "
                           f"resamples the 3 seeds and the {N} examples with replacement, the "
                           "same draws for both runs, and the 95% interval is the percentile "
                           "interval of the replicates' mean differences over seeds.")
    expected = ("Accuracies in %: mean ± sample standard deviation over the seeds (the same "
                "seeds for both starting points). Δ: mean over seeds of the paired difference "
                "in test accuracy, pretrained minus random init, in points, from "
                f"finetune.compare; CI: {three_seeds} Verdict (finetune.compare): better / "
                "worse when the whole interval lies above / below 0, else no evidence; none, "
                "and the cell says why, when fewer than 3 seeds ran, when a seed collapsed "
                "(one class for nearly every dev example) or when random init is at chance "
                "(dev accuracy within 3 standard errors of the majority share). "
                "TFLOP: the pretraining's matmul FLOPs, "
                "forward and backward (steps × batch × the model family's count per example, "
                "pretrain.models.flops): the rows share batch and, unless a recipe sets its "
                "own, steps; not compute.")
    assert from_scratch_table.footnote(rows[:3]) == expected
    # Rows with another number of seeds have another method: each is named by its recipe.
    one_seed = saved["custom"]["differences"][0]["method"]
    assert "resamples the 1 seeds" in one_seed
    assert from_scratch_table.footnote(rows) == expected.replace(
        f"CI: {three_seeds}", "CI: " + " ".join(
            [f"{label}: {three_seeds}" for label in ("RoBERTa: whole-word masking",
                                                     "ALBERT: SOP + n-gram masking",
                                                     "SpanBERT: spans + SBO")]
            + [f"custom: {one_seed}"]))


def _table_cli(*args):
    return subprocess.run([sys.executable, "-m", "experiments.from_scratch_table", *args],
                          capture_output=True, text=True, env=tool_env(), timeout=120)


def test_the_command_writes_table_and_footnote_and_refuses_an_empty_runs_dir(runs_dir, tmp_path):
    folder, _ = runs_dir
    out = tmp_path / "table.md"
    done = _table_cli(f"--runs_dir={folder}", f"--output_file={out}")
    assert done.returncode == 0, done.stderr
    expected = from_scratch_table.render(from_scratch_table.collect_rows(str(folder)))
    assert out.read_text(encoding="utf-8") == expected + "\n"
    assert done.stdout == f"{expected}\nwrote {out}\n"
    assert expected.splitlines()[7].startswith("Accuracies in %: mean ± sample standard")
    empty = tmp_path / "empty"
    (empty / "roberta" / "pretrain").mkdir(parents=True)
    done = _table_cli(f"--runs_dir={empty}")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        f"error: --runs_dir={empty}: no recipe with a finished comparison yet (no "
        "RECIPE/compare/results.json; run bash scripts/lcqmc_experiment.sh RECIPE)")
    done = _table_cli(f"--runs_dir={tmp_path / 'missing'}")
    assert done.returncode == 2 and "no such folder" in done.stderr


def test_a_comparison_of_random_init_alone_is_left_out_with_a_line_not_an_error(runs_dir):
    """A row whose baseline was fine-tuned ahead of its pretraining (or is still running)
    does not stop the table of the finished rows; a malformed comparison still does."""
    folder, _ = runs_dir
    full = write_comparison(folder / "xlnet", "xlnet", [1, 2, 3], RANDOM_INIT, PRETRAINED)
    full["runs"] = full["runs"][:1]
    full["rows"] = full["rows"][:1]
    full["differences"] = []
    (folder / "xlnet" / "compare" / "results.json").write_text(json.dumps(full))
    left_out = []
    rows = from_scratch_table.collect_rows(str(folder), left_out)
    assert [row["recipe"] for row in rows] == ["roberta", "albert", "span", "custom"]
    assert left_out == [f"{folder / 'xlnet' / 'compare' / 'results.json'}: random init only, "
                        "no pretrained run yet"]
    done = _table_cli(f"--runs_dir={folder}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == from_scratch_table.render(rows) + "\n"
    assert done.stderr.strip().endswith(f"left out of the table: {left_out[0]}")
    full["rows"], full["runs"] = [], []
    (folder / "xlnet" / "compare" / "results.json").write_text(json.dumps(full))
    done = _table_cli(f"--runs_dir={folder}")
    assert done.returncode == 2
    assert "xlnet/compare/results.json: not a finished finetune.compare comparison" in done.stderr
