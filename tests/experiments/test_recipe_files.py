"""An experiment row is one file (experiments/recipes/NAME.json), read by
experiments.from_scratch_row (scripts/lcqmc_experiment.sh) and by experiments.from_scratch_table
alike."""
import json
import os
import subprocess

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import REPO_ROOT, tool_env
from common.cli_options import UserError
from common.model_configs import shipped_path
from experiments import from_scratch_table, recipe_files


def test_the_rows_are_the_files_in_their_order():
    recipes = recipe_files.all_recipes()
    assert [r.name for r in recipes] == ["roberta", "albert", "span", "macbert", "electra",
                                         "xlnet"]
    albert = recipe_files.get_recipe("albert")
    assert albert.label == "ALBERT: SOP + n-gram masking" and albert.documents == "one question each"
    assert albert.pretraining == {"steps": 1000, "optimizer": "lamb", "learning_rate": "0.00176",
                                  "bias_correction": 0, "warmup_steps": 100}
    for recipe in recipes:  # every model config a row names exists
        assert os.path.isfile(shipped_path(recipe.model_config)), recipe.name


def test_the_runner_takes_a_rows_flags_from_its_file(tmp_path):
    script = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "lcqmc_experiment.sh"),
                             "--dry_run", "span"], capture_output=True, text=True, timeout=60,
                            env=tool_env(LCQMC_DIR=str(REPO_ROOT / "data" / "sample" / "pairs"),
                                         VOCAB=str(util.write_vocab(tmp_path)),
                                         RUNS=str(tmp_path / "runs")), cwd=tmp_path)
    assert script.returncode == 0, script.stderr
    pretrain = [line for line in script.stdout.splitlines() if "run_pretraining" in line][0]
    assert pretrain.endswith("--learning_rate=5e-4 --num_train_steps=1000 --num_warmup_steps=100 "
                             "--save_checkpoints_steps=500 --optimizer=adamw --random_seed=1 "
                             "--strategy=cpu --adam_bias_correction --span_boundary_objective ")
    assert f"--bert_config_file={shipped_path('lcqmc_small_bert')}" in pretrain
    data = [line for line in script.stdout.splitlines() if "create_pretraining_data" in line][0]
    assert data.endswith("--noprogress --mode=roberta --masking=span ")


def test_a_bad_file_names_itself_and_the_field(tmp_path):
    path = tmp_path / "mine.json"
    data = json.loads((REPO_ROOT / "experiments" / "recipes" / "roberta.json").read_text())
    path.write_text(json.dumps(dict(data, learning_rate="1e-4")))
    with pytest.raises(UserError, match=r"mine.json: unknown field\(s\) learning_rate"):
        recipe_files.read_recipe(str(path))
    path.write_text(json.dumps(dict(data, documents="pairs")))
    with pytest.raises(UserError, match="mine.json: documents must be one of"):
        recipe_files.read_recipe(str(path))
    with pytest.raises(UserError, match="unknown RECIPE 'nope': choose one of roberta albert"):
        recipe_files.get_recipe("nope")


def test_the_table_labels_rows_from_the_files():
    assert from_scratch_table._label("macbert") == "MacBERT: similar-word n-grams"
    assert from_scratch_table._label("my_own_row") == "my_own_row"
