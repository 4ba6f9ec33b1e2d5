"""scripts/lcqmc_experiment.sh: one row end to end at a toy budget, and its refusals;
scripts/train_word_vectors.sh: what it needs, said clearly. (Its dry run and its deprecated
names: tests/test_script_defaults.py.)"""
import json
import subprocess
import sys

import datagen_testutil as util
from cli_testutil import tool_env
from conftest import REPO_ROOT

SCRIPT = str(REPO_ROOT / "scripts" / "lcqmc_experiment.sh")
PAIRS = REPO_ROOT / "data" / "sample" / "pairs"


def _run(args, **env):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True,
                          env=tool_env(PYTHON=sys.executable, **env), timeout=900)


def test_span_row_runs_end_to_end_and_lands_in_the_table(tmp_path):
    """Data with span boundaries, pretraining with the SBO head, fine-tuning from random
    init and from the checkpoint, the table: every stage of one row, at a toy budget."""
    chars = sorted({char for split in ("train", "dev", "test")
                    for char in (PAIRS / f"{split}.txt").read_text(encoding="utf-8")
                    if not char.isspace() and not char.isascii()})
    vocab = util.write_vocab(tmp_path, extra=chars)
    runs = tmp_path / "runs"
    budget = dict(LCQMC_DIR=str(PAIRS), VOCAB=str(vocab), RUNS=str(runs), SEEDS="3",
                  DUPE_FACTOR="1", MAX_SEQ_LENGTH="32", MAX_PREDICTIONS="5",
                  PRETRAIN_STEPS="2", PRETRAIN_WARMUP_STEPS="1", PRETRAIN_BATCH_SIZE="8",
                  FINETUNE_MAX_TRAIN_EXAMPLES="16", FINETUNE_EVAL_EVERY="2")
    result = _run(["span"], **budget)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "deprecated" not in result.stderr
    meta = (runs / "span" / "data" / "lcqmc-00000-of-00004.meta.json").read_text()
    assert '"has_span_boundaries": true' in meta and '"max_seq_length": 32' in meta
    # MAX_SEQ_LENGTH is the fine-tuning length too, for both starting points.
    for folder in (runs / "baseline-lcqmc_small_bert" / "seed3",
                   runs / "span" / "finetune" / "seed3"):
        settings = json.loads((folder / "results.json").read_text())["settings"]
        assert settings["max_seq_length"] == 32 and settings["max_train_examples"] == 16
    evals = (runs / "span" / "pretrain" / "eval_results.txt").read_text()
    assert "global_step = 2" in evals and "span_boundary_loss" in evals
    assert (runs / "baseline-lcqmc_small_bert" / "seed3" / "results.json").is_file()
    table = (runs / "table.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| SpanBERT: spans + SBO | bert L4 H256")
    assert "SBO loss" in table[2] and table[2].endswith("| 3 |")


def test_refuses_an_unknown_recipe_and_missing_lcqmc(tmp_path):
    result = _run(["bogus"])
    assert result.returncode == 2 and "unknown RECIPE 'bogus'" in result.stderr
    result = _run(["roberta"], LCQMC_DIR=str(tmp_path), RUNS=str(tmp_path / "runs"))
    assert result.returncode == 2 and f"no train.txt in LCQMC_DIR={tmp_path}" in result.stderr
    assert not (tmp_path / "runs").exists()


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
