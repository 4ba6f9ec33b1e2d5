"""finetune.task_text: a task's training text as pretraining documents, labels dropped, and the
continued-pretraining scripts' plans (dry runs)."""
import subprocess

from tests.testutil.cli_runs import run_main_in_process
from conftest import REPO_ROOT
from finetune import task_text


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_each_example_is_a_document_cut_into_sentences_and_repeats_dropped(tmp_path):
    tsv = _write(tmp_path / "train.tsv", "label\ttext_a\n1\t房间很好。早餐一般！下次还来\n"
                 "0\t太吵了\n1\t房间很好。早餐一般！下次还来\n0\t \n")
    docs, account = task_text.documents("classification", tsv)
    assert docs == [["房间很好。", "早餐一般！", "下次还来"], ["太吵了"]]
    assert (account["examples"], account["documents"], account["repeated_documents_dropped"],
            account["empty_examples"]) == (4, 2, 1, 1)
    pairs = _write(tmp_path / "pairs.txt", "今天天气如何\t天气怎么样\t1\n几点了\t现在几点\t0\n")
    assert task_text.documents("pair", pairs)[0] == [["今天天气如何", "天气怎么样"],
                                                     ["几点了", "现在几点"]]
    conll = _write(tmp_path / "ner.txt", "北 B-LOC\n京 E-LOC\n好 O\n\n上 B-LOC\n海 E-LOC\n")
    assert task_text.documents("ner", conll)[0] == [["北京好"], ["上海"]]


def test_the_cli_writes_blank_line_separated_documents(tmp_path):
    tsv = _write(tmp_path / "train.tsv", "label\ttext_a\n1\t好。很好\n0\t差\n")
    code, out, err, _ = run_main_in_process("finetune.task_text", [
        f"--input_file={tsv}", f"--output_file={tmp_path / 'docs' / 'docs.txt'}"], tmp_path)
    assert code == 0, err
    assert (tmp_path / "docs" / "docs.txt").read_text(encoding="utf-8") == "好。\n很好\n\n差\n"
    assert "2 examples -> 2 documents" in out
    code, _, err, _ = run_main_in_process("finetune.task_text", [
        f"--input_file={tmp_path / 'none.tsv'}", f"--output_file={tmp_path / 'x.txt'}"], tmp_path)
    assert code == 2 and "none.tsv" in err


def _dry_run(script, *args, **env):
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / script), "--dry_run", *args],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})
    return done.returncode, done.stdout, done.stderr


def test_the_general_models_script_holds_out_text_and_round_trips_through_transformers(tmp_path):
    corpus = _write(tmp_path / "corpus.txt", "一句。\n")
    vocab = _write(tmp_path / "vocab.txt", "[PAD]\n")
    code, out, err = _dry_run("make_general_models.sh", GENERAL_CORPUS=corpus, VOCAB=vocab,
                              OUT=str(tmp_path / "general"), MODELS="bert,albert")
    assert code == 0, err
    assert out.count("--eval_share=0.05") == 2 and out.count("--num_train_steps=3000") == 2
    assert "--mode=albert" in out and "--optimizer=lamb" in out
    assert out.count("pretrain.interop.export_hf") == 2
    assert out.count("pretrain.interop.import_hf") == 2
    assert f"--eval_input_file={tmp_path}/general/bert/data/eval/general.tfrecord" in out


def test_the_continued_experiment_compares_the_general_model_first(tmp_path):
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    code, out, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta",
                              GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                              CHNSENTICORP_DIR=str(tmp_path / "senti"))
    assert code == 0, err
    assert "finetune.task_text --task=classification" in out
    assert f"--init_checkpoint={general}" in out and "--extra_eval_input_file=general=" in out
    assert out.rstrip().splitlines()[-1].endswith("-m experiments.continued_table --runs_dir="
                                                  f"{tmp_path}/runs --output_file="
                                                  f"{tmp_path}/runs/table.md")
    compare = [line for line in out.splitlines() if "finetune.compare" in line][0]
    assert compare.index("--run=general=") < compare.index("--run=general\\ +\\ continued=") \
        < compare.index("--run=random\\ init=")
    code, _, err = _dry_run("continued_experiment.sh", "lcqmc", "albert",
                            GENERAL_MODELS=str(tmp_path / "general"))
    assert code == 2 and "MODELS=albert bash scripts/make_general_models.sh" in err


def test_the_continued_row_can_collect_random_init_elsewhere_or_leave_it_out(tmp_path):
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    settings = dict(GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                    LCQMC_DIR=str(tmp_path / "lcqmc"))
    other = f"{tmp_path}/rows/roberta/compare"
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", REUSE_FROM=other,
                              **settings)
    assert code == 0, err
    (compare,) = [line for line in out.splitlines() if "finetune.compare" in line]
    assert f"--reuse_from={other} " in compare and "--run=random\\ init=" in compare
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", RANDOM_INIT="0",
                              **settings)
    assert code == 0, err
    (compare,) = [line for line in out.splitlines() if "finetune.compare" in line]
    assert "random" not in compare and "--reuse_from" not in compare
    assert "fine-tuning: general, general + continued on 16000 examples, seeds 1,2,3" in out
    code, _, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", RANDOM_INIT="no",
                            **settings)
    assert code == 2 and "RANDOM_INIT=no: give 1" in err
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "continued_experiment.sh"), "lcqmc",
                           "roberta"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "REUSE_FROM": other, **settings})
    assert done.returncode == 2, done.stderr
    assert f"REUSE_FROM: {other} has no runs/ folder or results.json" in done.stderr
    assert not (tmp_path / "runs" / "lcqmc").exists()  # refused before any stage wrote


def test_a_continued_folder_of_another_recipe_is_refused_and_a_killed_run_resumes(tmp_path):
    # run_pretraining resumes from an output folder's last checkpoint: continuing 500 steps
    # into a folder holding a 1000-step run would train on under the other schedule.
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    continued = tmp_path / "runs" / "lcqmc" / "roberta" / "continued"
    continued.mkdir(parents=True)
    recipe_500 = '{"learning_rate": "1e-4", "steps": 500, "batch_size": 64, "seed": 1}'
    recipe_1000 = '{"learning_rate": "1e-4", "steps": 1000, "batch_size": 64, "seed": 1}'
    (continued / "continue_recipe.json").write_text(recipe_1000 + "\n")
    (continued / "model.ckpt-300.index").write_text("")  # killed at step 300: no eval_results
    settings = dict(GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                    LCQMC_DIR=str(tmp_path / "lcqmc"))
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", **settings)
    assert code == 0, err  # the default recipe (the sweep's choice), unfinished: it resumes
    assert [line for line in out.splitlines() if "pretrain.run_pretraining" in line
            and f"--output_dir={continued} " in line and " --learning_rate=1e-4 " in line
            and "--num_train_steps=1000 --num_warmup_steps=100 " in line]
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta",
                              CONTINUE_STEPS="500", **settings)
    assert code == 2 and "pretrain.run_pretraining" not in out
    assert err.strip() == (
        f"continued_experiment.sh: error: {continued} holds a run continued with {recipe_1000}, "
        f"not {recipe_500}: rerunning into it would resume that run; set CONTINUE_* to its "
        "recipe to use it, move the folder away or give another RUNS")
    assert (continued / "continue_recipe.json").read_text() == recipe_1000 + "\n"


def test_the_sweep_continues_each_recipe_once_and_reuses_the_rows_fine_tunings(tmp_path):
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    row = tmp_path / "runs" / "chnsenticorp" / "roberta"
    (row / "continued").mkdir(parents=True)  # the row's own run: 1e-4, 500 steps, finished
    (row / "continued" / "eval_results.txt").write_text("masked_lm_accuracy = 0.2\n")
    (row / "continued" / "continue_recipe.json").write_text(
        '{"learning_rate": "1e-4", "steps": 500, "batch_size": 64, "seed": 1}\n')
    (row / "compare" / "runs").mkdir(parents=True)
    settings = dict(GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                    CHNSENTICORP_DIR=str(tmp_path / "senti"), SWEEP_LEARNING_RATES="1e-4,5e-4",
                    SWEEP_STEPS="500,1000")
    code, out, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta", "sweep",
                              **settings)
    assert code == 0, err
    trained = [line.split("--output_dir=")[1].split()[0] for line in out.splitlines()
               if "pretrain.run_pretraining" in line]
    assert trained == [f"{row}/sweep/lr5e-4_steps500", f"{row}/sweep/lr1e-4_steps1000",
                       f"{row}/sweep/lr5e-4_steps1000"]  # 1e-4 x 500 is the row's run
    assert f"continued 500 steps at 1e-4: finished in {row}/continued" in out
    (compare,) = [line for line in out.splitlines() if "finetune.compare" in line]
    assert f"--output_dir={row}/sweep/compare" in compare
    assert f"--reuse_from={row}/compare" in compare
    code, out, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta", "sweep",
                              REUSE_FROM="/elsewhere/compare", **settings)
    assert code == 0 and f"--reuse_from={row}/compare\\,/elsewhere/compare " in out
    # A row whose fine-tunings were all collected from elsewhere has results.json, no runs/:
    # its runs are still reused (finetune.compare follows the results to their folders).
    (row / "compare" / "runs").rmdir()
    (row / "compare" / "results.json").write_text("{}\n")
    code, out, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta", "sweep",
                              **settings)
    assert code == 0 and f"--reuse_from={row}/compare " in out, err
    runs = compare.split(" --run=")[1:]
    assert [run.split("=")[0].replace("\\", "") for run in runs] == [
        "general", "lr 1e-4, 500 steps", "lr 5e-4, 500 steps", "lr 1e-4, 1000 steps",
        "lr 5e-4, 1000 steps"]
    assert f"lr\\ 1e-4\\,\\ 500\\ steps={row}/continued" in compare
    assert out.rstrip().splitlines()[-1].endswith(
        f"-m experiments.continued_table --sweep_dir={row}/sweep --comparison=compare "
        f"--output_file={row}/sweep/table.md")
    # Another recipe on record: the row's run is not taken for the 1e-4 x 500 point.
    (row / "continued" / "continue_recipe.json").write_text(
        '{"learning_rate": "1e-4", "steps": 500, "batch_size": 32, "seed": 1}\n')
    code, out, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta", "sweep",
                              **settings)
    assert code == 0 and f"--output_dir={row}/sweep/lr1e-4_steps500 " in out
    code, _, err = _dry_run("continued_experiment.sh", "chnsenticorp", "roberta", "sweeps",
                            **settings)
    assert code == 2 and "unknown third argument 'sweeps'" in err


def test_the_sweep_can_run_given_points_instead_of_the_grid(tmp_path):
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    row = tmp_path / "runs" / "lcqmc" / "roberta"
    settings = dict(GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                    LCQMC_DIR=str(tmp_path / "lcqmc"), SWEEP_LEARNING_RATES="1e-4,5e-4")
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", "sweep",
                              SWEEP_POINTS="2e-5x500,1e-4x500,1e-4x1000", **settings)
    assert code == 0, err
    trained = [line.split("--output_dir=")[1].split()[0] for line in out.splitlines()
               if "pretrain.run_pretraining" in line]
    assert trained == [f"{row}/sweep/lr2e-5_steps500", f"{row}/sweep/lr1e-4_steps500",
                       f"{row}/sweep/lr1e-4_steps1000"]  # the points, not the grid
    assert "--learning_rate=2e-5 --num_train_steps=500 --num_warmup_steps=50 " in out
    assert "--learning_rate=1e-4 --num_train_steps=1000 --num_warmup_steps=100 " in out
    (compare,) = [line for line in out.splitlines() if "finetune.compare" in line]
    assert [run.split("=")[0].replace("\\", "") for run in compare.split(" --run=")[1:]] == [
        "general", "lr 2e-5, 500 steps", "lr 1e-4, 500 steps", "lr 1e-4, 1000 steps"]
    for bad in ("1e-4x", "1e-4*500", "fastx500", "1e-4x0", "1e-4x500,,5e-4x500"):
        done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "continued_experiment.sh"),
                               "lcqmc", "roberta", "sweep"], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "SWEEP_POINTS": bad, **settings})
        assert done.returncode == 2, (bad, done.stderr)
        assert "is not RATExSTEPS: give e.g. 1e-4x500" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and not row.exists()  # refused before any stage
    code, _, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", "sweep",
                            SWEEP_STEPS="500,many", **settings)
    assert code == 2 and "sweep point '1e-4xmany'" in err
    code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta",
                              SWEEP_POINTS="fastx500", **settings)
    assert code == 0 and "finetune.compare" in out, err  # the row does not read the sweep's points


def test_a_larger_fine_tuning_budget_has_its_own_comparison_and_the_same_dev_cadence(tmp_path):
    general = tmp_path / "general" / "bert" / "released"
    general.mkdir(parents=True)
    (general / "vocab.txt").write_text("[PAD]\n")
    row = tmp_path / "runs" / "lcqmc" / "roberta"
    (row / "compare_train40000" / "runs").mkdir(parents=True)  # a finished row at 40,000
    (row / "continued").mkdir()
    (row / "continued" / "eval_results.txt").write_text("masked_lm_accuracy = 0.2\n")
    (row / "continued" / "continue_recipe.json").write_text(
        '{"learning_rate": "1e-4", "steps": 1000, "batch_size": 64, "seed": 1}\n')
    settings = dict(GENERAL_MODELS=str(tmp_path / "general"), RUNS=str(tmp_path / "runs"),
                    LCQMC_DIR=str(tmp_path / "lcqmc"))

    def compare_line(*args, **env):
        code, out, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta", *args,
                                  **settings, **env)
        assert code == 0, err
        (line,) = [line for line in out.splitlines() if "finetune.compare" in line]
        return line, out
    default, _ = compare_line()
    assert f"--output_dir={row}/compare " in default
    assert "--max_train_examples=16000 --eval_every_steps=250" in default
    larger, _ = compare_line(FINETUNE_MAX_TRAIN_EXAMPLES="40000")
    assert f"--output_dir={row}/compare_train40000 " in larger
    assert "--max_train_examples=40000 --eval_every_steps=625" in larger  # 2.5x both
    same, _ = compare_line(FINETUNE_MAX_TRAIN_EXAMPLES="16000")
    assert same == default  # the task's own budget is the default folder
    sweep, out = compare_line("sweep", FINETUNE_MAX_TRAIN_EXAMPLES="40000",
                              SWEEP_POINTS="1e-4x1000")
    assert f"--output_dir={row}/sweep/compare_train40000 " in sweep
    assert f"--reuse_from={row}/compare_train40000 " in sweep  # that budget's row reused
    assert out.rstrip().endswith(f"--comparison=compare_train40000 --output_file="
                                 f"{row}/sweep/table_train40000.md")
    for bad in ("40k", "0", "-5"):
        code, _, err = _dry_run("continued_experiment.sh", "lcqmc", "roberta",
                                FINETUNE_MAX_TRAIN_EXAMPLES=bad, **settings)
        assert code == 2 and f"FINETUNE_MAX_TRAIN_EXAMPLES={bad}: give a number" in err
