"""The runners' shared rules outside a dry run: stage_folders' reuse and refusals, MSRA's dev
split, and script_runs' quoting, which must print what bash's `printf %q` printed."""
import subprocess

import pytest

from experiments import continued_row, stage_folders
from common.script_runs import Refusal, bash_quote, split_list

WORDS = ["--run=random init=", "--seeds=1,2,3", "a/b-c_d.e:f@g+h%i=j", "", "~home", "a~b",
         "#x", "a#b", "it's", 'say "hi"', "$HOME", "*.tfrecord", "lcqmc-*", "(x)[y]{z}",
         "a|b&c;d<e>f!g^h`i?j\\k", "中文", "tab\there", "line\nbreak"]


def test_quoting_is_bashs_printf_q():
    script = "printf '%q\\0' \"$@\""
    done = subprocess.run(["bash", "-c", script, "bash", *WORDS], capture_output=True,
                          check=True, env={"LC_ALL": "C.UTF-8"})
    assert [bash_quote(word) for word in WORDS] == done.stdout.decode("utf-8").split("\0")[:-1]


def test_split_list_reads_commas_as_bash_read_does():
    assert split_list("") == [] and split_list("a,b,") == ["a", "b"]
    assert split_list("a,,b") == ["a", "", "b"]


def test_a_pretraining_folder_with_other_settings_is_refused_with_what_changed(tmp_path):
    settings = {"CONFIG": "c.json", "PRETRAIN_STEPS": "1000", "PRETRAIN_SEED": "1"}
    folder = tmp_path / "pretrain"
    folder.mkdir()
    assert not stage_folders.check_pretraining_settings(str(folder), settings, "ROW")
    stage_folders.record_pretraining_settings(str(folder), settings)
    assert (folder / "experiment_settings.txt").read_text() == (
        "CONFIG=c.json\nPRETRAIN_STEPS=1000\nPRETRAIN_SEED=1\n")
    assert stage_folders.check_pretraining_settings(str(folder), settings, "ROW")
    with pytest.raises(Refusal) as refused:
        stage_folders.check_pretraining_settings(
            str(folder), dict(settings, PRETRAIN_SEED="2", PRETRAIN_STEPS="40"), "ROW")
    assert str(refused.value) == (
        f"{folder} was trained with other settings: < PRETRAIN_STEPS=1000 < PRETRAIN_SEED=1 "
        f"> PRETRAIN_STEPS=40 > PRETRAIN_SEED=2 (< before, > now); move {folder} and "
        "ROW/compare away to retrain")
    (folder / "eval_results.txt").write_text("global_step = 1000\nloss = 5\n")
    assert stage_folders.evaluated_at(str(folder), "1000")
    assert not stage_folders.evaluated_at(str(folder), "100")


def test_a_continued_folder_holds_one_recipe(tmp_path):
    folder = str(tmp_path / "continued")
    recipe = stage_folders.recipe_json("1e-4", 1000, 64, 1)
    assert recipe == '{"learning_rate": "1e-4", "steps": 1000, "batch_size": 64, "seed": 1}'
    stage_folders.claim_for_recipe(folder, recipe, dry_run=True)  # a dry run writes nothing
    assert not (tmp_path / "continued").exists()
    stage_folders.claim_for_recipe(folder, recipe, dry_run=False)
    assert (tmp_path / "continued" / "continue_recipe.json").read_text() == recipe + "\n"
    assert not stage_folders.finished_recipe(folder, recipe)  # not evaluated yet
    (tmp_path / "continued" / "eval_results.txt").write_text("global_step = 1000\n")
    assert stage_folders.finished_recipe(folder, recipe)
    other = stage_folders.recipe_json("1e-4", 500, 64, 1)
    with pytest.raises(Refusal, match="holds a run continued with .*\"steps\": 1000.*, not "
                                      ".*\"steps\": 500"):
        stage_folders.claim_for_recipe(folder, other, dry_run=False)


def test_other_rows_comparisons_are_those_with_runs_of_their_own(tmp_path):
    for row in ("span", "albert", "roberta"):
        (tmp_path / row / "compare" / "runs").mkdir(parents=True)
    (tmp_path / "xlnet" / "compare").mkdir(parents=True)  # nothing run yet
    assert stage_folders.other_comparisons(str(tmp_path), f"{tmp_path}/span/compare") == [
        f"{tmp_path}/albert/compare", f"{tmp_path}/roberta/compare"]
    (tmp_path / "xlnet" / "compare" / "results.json").write_text("{}")
    assert stage_folders.is_comparison(str(tmp_path / "xlnet" / "compare"))


def test_msras_dev_split_is_every_tenth_training_sentence(tmp_path):
    source, target = tmp_path / "msra", tmp_path / "split"
    source.mkdir()
    sentences = [f"字{i}\tO" for i in range(20)]
    (source / "train.txt").write_text("\r\n\r\n".join(sentences) + "\r\n", encoding="utf-8")
    (source / "test.txt").write_text("测\tO\n", encoding="utf-8")
    continued_row.make_dev_split(str(source), str(target), 10)
    # as the bash script's split wrote it: the file's last sentence keeps its own line end
    assert (target / "dev.txt").read_text(encoding="utf-8") == "字9\tO\n\n字19\tO\n\n"
    train = (target / "train.txt").read_text(encoding="utf-8").split("\n\n")
    assert len(train) == 18 and train[0] == "字0\tO" and "字9\tO" not in train
    assert (target / "test.txt").read_text(encoding="utf-8") == "测\tO\n"
