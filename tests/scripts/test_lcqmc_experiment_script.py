"""scripts/lcqmc_experiment.sh (experiments.from_scratch_row): one row end to end at a toy
budget, and its refusals;
scripts/train_word_vectors.sh: what it needs, said clearly. (Its dry run:
tests/scripts/test_script_defaults.py.)"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import tool_env
from conftest import REPO_ROOT, in_one_runtime
from tests.testutil.pretrain_data import tiny_config
from finetune import verdicts
from pretrain.models import flops, registry

SCRIPT = str(REPO_ROOT / "scripts" / "lcqmc_experiment.sh")
PAIRS = REPO_ROOT / "data" / "sample" / "pairs"


def _run(args, **env):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True,
                          env=tool_env(**{"PYTHON": sys.executable, **env}), timeout=900)


def _failing_python(tmp_path):
    """A PYTHON whose every tool fails, except the experiments' own modules (so that the
    runner the script execs gets as far as its first tool)."""
    path = tmp_path / "failing_python"
    path.write_text("#!/bin/bash\n"
                    f'[[ "$2" == experiments.* ]] && exec {sys.executable} "$@"\n'
                    "exit 1\n")
    path.chmod(0o755)
    return str(path)


@in_one_runtime("the runner does not depend on the runtime; each tool it runs is "
                "tested under both")
def test_span_row_runs_end_to_end_and_lands_in_the_table(tmp_path):
    """Data with span boundaries, pretraining with the SBO head, one comparison of
    fine-tuning from random init and from the checkpoint (one seed; several seeds:
    tests/finetune/test_compare.py), the table: every stage of one row, at a toy budget."""
    chars = sorted({char for split in ("train", "dev", "test")
                    for char in (PAIRS / f"{split}.txt").read_text(encoding="utf-8")
                    if not char.isspace() and not char.isascii()})
    vocab = util.write_vocab(tmp_path, extra=chars)
    # A model far smaller than the recipe's (MODEL_CONFIG), so that the row's stages take
    # seconds; the recipes' own configs: tests/scripts/test_script_defaults.py (dry runs).
    vocab_size = len(vocab.read_text(encoding="utf-8").splitlines())
    model = tiny_config(tmp_path / "tiny_bert.json", vocab_size=vocab_size, hidden=32, layers=1)
    runs = tmp_path / "runs"
    budget = dict(LCQMC_DIR=str(PAIRS), VOCAB=str(vocab), RUNS=str(runs), SEEDS="3",
                  MODEL_CONFIG=model,
                  DUPE_FACTOR="1", MAX_SEQ_LENGTH="32", MAX_PREDICTIONS="5",
                  PRETRAIN_STEPS="2", PRETRAIN_WARMUP_STEPS="1", PRETRAIN_BATCH_SIZE="8",
                  PRETRAIN_SEED="5", FINETUNE_MAX_TRAIN_EXAMPLES="16", FINETUNE_EVAL_EVERY="2",
                  FINETUNE_NOT_LEARNED="1")  # 2 steps do not leave the plateau
    result = _run(["span"], **budget)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    meta = (runs / "span" / "data" / "lcqmc-00000-of-00004.meta.json").read_text()
    assert '"has_span_boundaries": true' in meta and '"max_seq_length": 32' in meta
    evals = (runs / "span" / "pretrain" / "eval_results.txt").read_text()
    assert "global_step = 2" in evals and "span_boundary_loss" in evals
    comparison = json.loads((runs / "span" / "compare" / "results.json").read_text())
    assert comparison["seeds"] == [3] and comparison["task"] == "pair"
    random_init, pretrained = comparison["runs"]
    assert (random_init["label"], pretrained["label"]) == ("random init", "span")
    assert random_init["init_checkpoint"] is None
    assert pretrained["init_checkpoint"] == str(runs / "span" / "pretrain")
    assert pretrained["checkpoint"] == str(runs / "span" / "pretrain" / "model.ckpt-2")
    # The random-init run trains the architecture beside the pretrained checkpoint.
    assert random_init["bert_config_file"] == pretrained["bert_config_file"] == str(
        runs / "span" / "pretrain" / "bert_config.json")
    assert random_init["model"] == pretrained["model"] == f"bert L1 H32 V{vocab_size}"
    # MAX_SEQ_LENGTH is the fine-tuning length too, for both starting points and seeds.
    for run in comparison["runs"]:
        assert [row["seed"] for row in run["per_seed"]] == [3]
        for row in run["per_seed"]:
            settings = json.loads((Path(row["run_dir"]) / "results.json").read_text())["settings"]
            assert settings["max_seq_length"] == 32 and settings["max_train_examples"] == 16
            assert settings["random_seed"] == row["seed"]
    (accuracy,) = [d for d in comparison["differences"] if d["metric"] == "accuracy"]
    # The table's row is the comparison's numbers and its verdict (one seed, and at this
    # budget a collapsed or chance-level run: finetune.verdicts says why there is none);
    # compare's two tables were shown.
    assert "too_few_seeds" in accuracy["flags"]
    verdict = verdicts.verdict_cell(accuracy["verdict"])
    # Its compute: 2 steps of 8 sequences of 32 tokens, 5 predictions, with the SBO head.
    config = registry.read_config(str(runs / "span" / "pretrain" / "bert_config.json"))
    tflop = "%.3g" % (2 * 8 * flops.masked_lm_training_flops(config, 32, 5, span_boundary=True)
                      / 1e12)
    table = (runs / "table.md").read_text().splitlines()
    assert len(table) == 5 and table[2].startswith(f"| SpanBERT: spans + SBO | bert L1 H32 V{vocab_size}")
    assert "SBO loss" in table[2] and "(not learned: MLM on its unigram plateau)" in table[2]
    assert table[2].endswith(
        f"| {100 * accuracy['difference']:+.2f} [{100 * accuracy['low']:+.2f}, "
        f"{100 * accuracy['high']:+.2f}] | {verdict} | 3 | {tflop} |")
    for cell, row in zip(table[2].split(" | ")[3:5], comparison["rows"]):
        dev, test = (row[split]["accuracy"] for split in ("dev", "test"))
        # One seed: the mean alone, no ± (compare's multi-seed cells: tests/finetune/test_compare.py).
        assert dev["std"] is None and test["std"] is None
        assert cell.startswith(f"{100 * dev['mean']:.2f} / {100 * test['mean']:.2f}")
        assert cell.endswith(f"{100 * test['mean']:.2f}" if not row["collapsed_seeds"]
                             else f"(seed {row['collapsed_seeds'][0]})")
    assert table[4].startswith("Accuracies in %: mean ± sample standard deviation")
    assert "| starting point | model | dev accuracy | test accuracy |" in result.stdout
    assert "pretraining, 2 steps of 8 (adamw, seed 5)" in result.stdout

    # A rerun reuses every stage: compare collects its two finished fine-tunings.
    again = _run(["span"], **budget)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "pretraining finished earlier with these settings" in again.stdout
    log = (runs / "span" / "compare.log").read_text()
    assert log.count("collecting the finished run") == 2 and "fine-tuning from" not in log
    assert (runs / "table.md").read_text().splitlines() == table

    # Another row of the same model in RUNS fine-tunes its own checkpoint and collects the
    # random-init baseline from the span row (the same model, vocab, settings and seed).
    other = _run(["roberta"], **budget)
    assert other.returncode == 0, other.stdout[-3000:] + other.stderr[-3000:]
    log = (runs / "roberta" / "compare.log").read_text()
    assert log.count(f"collecting the finished run in {runs}/span/compare/runs/1-random_init/"
                     "seed3") == 1
    assert log.count("fine-tuning from") == 1 and f"fine-tuning from {runs}/roberta" in log
    rows = json.loads((runs / "roberta" / "compare" / "results.json").read_text())["rows"]
    assert rows[0]["test"] == comparison["rows"][0]["test"]
    assert len((runs / "table.md").read_text().splitlines()) == 6  # both rows


def test_refuses_an_unknown_recipe_and_missing_lcqmc(tmp_path):
    result = _run(["bogus"])
    assert result.returncode == 2 and "unknown RECIPE 'bogus'" in result.stderr
    result = _run(["roberta"], LCQMC_DIR=str(tmp_path), RUNS=str(tmp_path / "runs"))
    assert result.returncode == 2 and f"no train.txt in LCQMC_DIR={tmp_path}" in result.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("setting, value, message", [
    ("PRETRAIN_OPTIMIZER", "sgd", "PRETRAIN_OPTIMIZER must be adamw or lamb, not 'sgd'"),
    ("PRETRAIN_BIAS_CORRECTION", "yes", "PRETRAIN_BIAS_CORRECTION must be 0 (no Adam bias "
                                        "correction) or 1, not 'yes'"),
    ("PRETRAIN_SEED", "1.5", "PRETRAIN_SEED must be a non-negative integer, not '1.5'"),
    ("SEEDS", "1;2", "SEEDS must be integers separated by commas, not '1;2'"),
    ("SEEDS", "1, 2,1", "SEEDS=1,2,1: give each seed once"),
])
def test_refuses_a_bad_setting_before_doing_anything(tmp_path, setting, value, message):
    result = _run(["albert"], RUNS=str(tmp_path / "runs"), **{setting: value})
    assert result.returncode == 2
    assert result.stderr == f"lcqmc_experiment.sh: error: {message}\n"
    assert not (tmp_path / "runs").exists()


def _finished_data(runs, recipe, docs):
    """A row whose documents and data stages look finished (made from RUNS/`docs`)."""
    runs.mkdir(parents=True, exist_ok=True)
    (runs / docs).write_text("一句话\n", encoding="utf-8")
    (runs / recipe / "data").mkdir(parents=True)
    (runs / recipe / "data" / "lcqmc-00003-of-00004.meta.json").write_text(
        json.dumps({"flags": {"input_file": str(runs / docs)}}), encoding="utf-8")


def test_a_stage_made_from_other_inputs_or_settings_is_not_resumed(tmp_path):
    """Data from other documents, or checkpoints trained with other settings, stop the row
    before anything runs (resuming them would mix two experiments); an older row without a
    settings record is resumed with a warning."""
    budget = dict(LCQMC_DIR=str(PAIRS), VOCAB=str(util.write_vocab(tmp_path)),
                  PYTHON=_failing_python(tmp_path))
    runs = tmp_path / "old_documents"
    _finished_data(runs, "albert", "docs.txt")  # ALBERT's data as it was made before
    (runs / "docs_sentences.txt").write_text("一句话\n", encoding="utf-8")
    result = _run(["albert"], RUNS=str(runs), **budget)
    assert result.returncode == 2 and result.stderr.startswith(
        f"lcqmc_experiment.sh: error: {runs}/albert/data was made from other documents than "
        f"{runs}/docs_sentences.txt")
    assert not (runs / "albert" / "pretrain").exists()

    runs = tmp_path / "other_settings"
    _finished_data(runs, "roberta", "docs.txt")
    first = _run(["roberta"], RUNS=str(runs), **budget)  # records its settings, then fails
    assert first.returncode == 2 and "pretraining failed" in first.stderr
    recorded = (runs / "roberta" / "pretrain" / "experiment_settings.txt").read_text()
    assert "PRETRAIN_SEED=1\n" in recorded and "PRETRAIN_OPTIMIZER=adamw\n" in recorded
    again = _run(["roberta"], RUNS=str(runs), PRETRAIN_SEED="2", **budget)
    assert again.returncode == 2 and again.stderr == (
        f"lcqmc_experiment.sh: error: {runs}/roberta/pretrain was trained with other settings: "
        f"< PRETRAIN_SEED=1 > PRETRAIN_SEED=2 (< before, > now); move {runs}/roberta/pretrain "
        f"and {runs}/roberta/compare away to retrain\n")
    assert (runs / "roberta" / "pretrain" / "experiment_settings.txt").read_text() == recorded

    (runs / "roberta" / "pretrain" / "experiment_settings.txt").unlink()
    (runs / "roberta" / "pretrain" / "model.ckpt-500.index").write_bytes(b"")
    legacy = _run(["roberta"], RUNS=str(runs), **budget)
    assert "has no experiment_settings.txt (an older run): resuming it without checking" \
        in legacy.stderr


def test_a_checkpoint_on_the_plateau_is_not_fine_tuned(tmp_path):
    """pretrain.training.learning_check stops the row before fine-tuning a checkpoint whose MLM has not
    left its unigram plateau; FINETUNE_NOT_LEARNED=1 goes on (here into a failing compare)."""
    runs = tmp_path / "runs"
    budget = dict(LCQMC_DIR=str(PAIRS), VOCAB=str(util.write_vocab(tmp_path)), RUNS=str(runs))
    _finished_data(runs, "roberta", "docs.txt")
    _run(["roberta"], PYTHON=_failing_python(tmp_path), **budget)  # pretraining "fails"
    (runs / "roberta" / "pretrain" / "eval_results.txt").write_text(
        "global_step = 1000\nmasked_lm_accuracy = 0.045\nmasked_lm_loss = 6.19\n"
        "masked_lm_num_targets = 12224.0\nmasked_lm_unigram_accuracy = 0.045\n"
        "masked_lm_unigram_loss = 6.04\n")  # the RoBERTa row without bias correction
    stopped = _run(["roberta"], **budget)
    assert stopped.returncode == 2, stopped.stderr[-2000:]
    assert "pretraining finished earlier with these settings" in stopped.stdout
    assert "the checkpoint has not yet learned from context: masked_lm_accuracy 0.0450" \
        in stopped.stdout
    assert stopped.stderr.startswith("lcqmc_experiment.sh: error: the pretrained checkpoint has "
                                     "not learned (above); fine-tuning from it would not be")
    assert "fine-tuning from random" not in stopped.stdout
    assert not (runs / "roberta" / "compare").exists()
    anyway = _run(["roberta"], FINETUNE_NOT_LEARNED="1", **budget)
    assert "fine-tuning from random initialisation" in anyway.stdout


def test_train_word_vectors_says_what_it_needs(tmp_path):
    """gensim is not a dependency: without it (this venv) the script says how to get an
    interpreter that has it; a missing DOCS file is named first."""
    script = str(REPO_ROOT / "scripts" / "train_word_vectors.sh")
    docs = tmp_path / "docs.txt"
    missing = subprocess.run(["bash", script, str(docs), str(tmp_path / "v.txt")],
                             capture_output=True, text=True,
                             env=tool_env(W2V_PYTHON=sys.executable))
    assert missing.returncode == 2 and f"DOCS file {docs} not found" in missing.stderr
    docs.write_text("一句话\n", encoding="utf-8")
    result = subprocess.run(["bash", script, str(docs), str(tmp_path / "v.txt")],
                            capture_output=True, text=True,
                            env=tool_env(W2V_PYTHON=sys.executable))
    try:
        import gensim  # noqa: F401
    except ImportError:
        assert result.returncode == 2
        assert f"W2V_PYTHON={sys.executable} cannot import gensim and jieba" in result.stderr
        assert "pip install gensim jieba" in result.stderr
        assert not (tmp_path / "v.txt").exists()
