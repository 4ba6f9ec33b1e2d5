"""scripts/finetune.sh (any task: BEFORE vs AFTER through finetune.compare) and its LCQMC
caller scripts/lcqmc_finetune.sh: help, the exact command a dry run shows (and that
finetune.compare's own flag parser reads it as meant), one-line errors. Nothing trains here:
dry runs, and a stand-in interpreter that records its arguments."""
import re
import shlex
import subprocess
import sys

import pytest

from tests.testutil.cli_runs import clean_env
from absl import flags

from common import cli_options
from finetune import compare, run_finetune

SCRIPTS = {"finetune": "finetune.sh", "lcqmc": "lcqmc_finetune.sh"}
SETTINGS = ("TASK", "DATA_DIR", "TRAIN_FILE", "DEV_FILE", "TEST_FILE", "INPUT_FORMAT",
            "TEXT_FIELDS", "LABEL_FIELD", "TAG_SCHEME", "BEFORE", "AFTER", "CONFIG", "VOCAB",
            "OUT", "SEEDS", "SEED", "MAX_TRAIN_EXAMPLES", "MAX_DEV_EXAMPLES", "EPOCHS",
            "MAX_SEQ_LENGTH", "BATCH_SIZE", "EVAL_BATCH_SIZE", "LEARNING_RATE",
            "WARMUP_PROPORTION", "EVAL_EVERY", "STRATEGY", "SELECTION_METRIC", "RERUN",
            "BOOTSTRAP_SAMPLES")




def run_script(repo_root, cwd, script, *args, **settings):
    return subprocess.run(["bash", str(repo_root / "scripts" / SCRIPTS[script]), *args],
                          cwd=cwd, env=clean_env(**settings), capture_output=True, text=True,
                          timeout=60)


def dry_run(repo_root, cwd, script, *args, **settings):
    """The argv a dry run prints (after `PYTHON -m finetune.compare`)."""
    done = run_script(repo_root, cwd, script, "--dry_run", *args, **settings)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    argv = shlex.split(done.stdout)
    assert argv[:3] == [sys.executable, "-m", "finetune.compare"], done.stdout
    return argv[3:]


def parsed_by_compare(argv):
    """(CompareOptions, runs) as `python -m finetune.compare ARGV` would parse them."""
    flag_values = flags.FlagValues()
    flags.DEFINE_multi_string("run", [], compare.RUN_HELP, flag_values=flag_values)
    cli_options.define_flags(compare.CompareOptions, flag_values)
    flag_values(["finetune.compare", *argv])
    return cli_options.options_from_flags(compare.CompareOptions, flag_values), flag_values.run


@pytest.fixture
def work(tmp_path):
    """tmp_path with a task folder `data` (train/dev/test TSV), a pretraining output `after`
    (checkpoint index + vocab) and a checkpoint prefix `before/model.ckpt-5`."""
    (tmp_path / "data").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "data" / f"{split}.tsv").write_text("text_a\tlabel\n很好\tpos\n",
                                                        encoding="utf-8")
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-9"\n')
    (tmp_path / "after" / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "model.ckpt-5.index").write_bytes(b"")
    (tmp_path / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_help_names_every_setting_its_option_and_flag(repo_root, tmp_path):
    shown = run_script(repo_root, tmp_path, "finetune", "--help")
    assert shown.returncode == 0 and shown.stderr == ""
    for setting in SETTINGS:
        assert re.search(rf"^\s+--{setting.lower()}\b.*\b{setting}\b", shown.stdout,
                         re.MULTILINE), setting
    for flag in ("(--num_train_epochs)", "(--train_batch_size)", "(--warmup_proportion)",
                 "(--random_seed)", "(--seeds)", "(--output_dir)", "(--bert_config_file)",
                 "(--vocab_file)", "(--eval_every_steps)"):
        assert flag in shown.stdout, flag
    # Set settings show their value.
    shown = run_script(repo_root, tmp_path, "finetune", "--help", EPOCHS="7", TASK="ner")
    assert "[7]" in shown.stdout and "[ner]" in shown.stdout
    # lcqmc_finetune.sh: its own settings, its presets, then every finetune.sh setting.
    lcqmc = run_script(repo_root, tmp_path, "lcqmc", "--help")
    assert lcqmc.returncode == 0
    assert "--lcqmc_dir D" in lcqmc.stdout and "MAX_SEQ_LENGTH=64" in lcqmc.stdout
    assert "WARMUP (--warmup)" not in lcqmc.stdout  # the old name is gone, not aliased
    assert shown.stdout.split("Usage:")[1][:200] in lcqmc.stdout


def test_the_readme_command_forwards_exactly_these_flags(repo_root, work):
    argv = dry_run(repo_root, work, "finetune", "--task", "classification", "--data_dir", "data",
                   "--after", "after", "--seeds", "1,2,3", "--out", "results/sentiment",
                   "--", "--ignore_invalid_weights")
    assert argv == ["--task=classification", f"--data_dir={work}/data", "--run=random init=",
                    f"--run=after pretraining={work}/after",
                    f"--output_dir={work}/results/sentiment", "--seeds=1,2,3",
                    "--ignore_invalid_weights"]
    options, runs = parsed_by_compare(argv)
    assert runs == ["random init=", f"after pretraining={work}/after"]
    assert options.task == "classification" and options.seeds == "1,2,3"
    assert options.ignore_invalid_weights
    # Unset settings keep finetune.compare's (run_finetune's) defaults: nothing else was passed.
    for name in ("max_seq_length", "learning_rate", "num_train_epochs", "vocab_file",
                 "bert_config_file", "random_seed", "train_batch_size", "warmup_proportion"):
        assert getattr(options, name) == run_finetune.DEFAULTS[name], name
    # The same settings from the environment give the same command; an option wins.
    by_env = dry_run(repo_root, work, "finetune", "--", "--ignore_invalid_weights",
                     TASK="classification", DATA_DIR="data", AFTER="after", SEEDS="1,2,3",
                     OUT="results/sentiment")
    assert by_env == argv
    assert "--task=ner" in dry_run(repo_root, work, "finetune", "--task=ner", TASK="pair",
                                   DATA_DIR="data", AFTER="after")


def test_every_training_setting_goes_to_its_flag(repo_root, work):
    values = {"MAX_TRAIN_EXAMPLES": "100", "MAX_DEV_EXAMPLES": "50", "EPOCHS": "2.5",
              "MAX_SEQ_LENGTH": "96", "BATCH_SIZE": "16", "EVAL_BATCH_SIZE": "64",
              "LEARNING_RATE": "3e-5", "WARMUP_PROPORTION": "0.2", "EVAL_EVERY": "25",
              "SEED": "9", "STRATEGY": "cpu", "BOOTSTRAP_SAMPLES": "500",
              "SELECTION_METRIC": "macro_f1", "INPUT_FORMAT": "tsv", "TEXT_FIELDS": "text_a",
              "LABEL_FIELD": "label"}
    argv = dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after", "after",
                   **values)
    options, _ = parsed_by_compare(argv)
    expected = {"max_train_examples": 100, "max_dev_examples": 50, "num_train_epochs": 2.5,
                "max_seq_length": 96, "train_batch_size": 16, "eval_batch_size": 64,
                "learning_rate": 3e-5, "warmup_proportion": 0.2, "eval_every_steps": 25,
                "random_seed": 9, "strategy": "cpu", "bootstrap_samples": 500,
                "selection_metric": "macro_f1", "input_format": "tsv", "text_fields": "text_a",
                "label_field": "label"}
    assert {name: getattr(options, name) for name in expected} == expected
    # ... and the same as options, lower case, in both forms.
    as_options = []
    for index, (variable, value) in enumerate(values.items()):
        as_options += ([f"--{variable.lower()}={value}"] if index % 2
                       else [f"--{variable.lower()}", value])
    assert dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after", "after",
                   *as_options) == argv


def test_starting_points_files_and_switches(repo_root, work):
    argv = dry_run(repo_root, work, "finetune", "--task", "ner", "--train_file", "data/train.tsv",
                   "--dev_file", "data/dev.tsv", "--test_file", "data/test.tsv",
                   "--tag_scheme", "BIOES", "--allow_unseen_labels", "--before",
                   "before/model.ckpt-5", "--after", "after", "--config", "config.json",
                   "--vocab", "vocab.txt", "--before_label", "google", "--after_label", "ours",
                   "--rerun", DO_LOWER_CASE="false")
    assert argv == ["--task=ner", f"--train_file={work}/data/train.tsv",
                    f"--dev_file={work}/data/dev.tsv", f"--test_file={work}/data/test.tsv",
                    "--tag_scheme=BIOES", "--allow_unseen_labels", "--nodo_lower_case",
                    f"--bert_config_file={work}/config.json", f"--vocab_file={work}/vocab.txt",
                    f"--run=google={work}/before/model.ckpt-5", f"--run=ours={work}/after",
                    "--rerun"]
    options, _ = parsed_by_compare(argv)
    assert options.allow_unseen_labels and not options.do_lower_case and options.rerun
    # BEFORE without a label is "before pretraining"; RERUN=1 and COLLECT_ONLY from the environment.
    argv = dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after", "after",
                   "--before", "before/model.ckpt-5", RERUN="1", COLLECT_ONLY="true")
    assert f"--run=before pretraining={work}/before/model.ckpt-5" in argv
    assert argv[-2:] == ["--rerun", "--collect_only"]
    assert "--norerun" in dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after",
                                  "after", RERUN="0")
    assert "--norerun" in dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after",
                                  "after", "--rerun=false", RERUN="1")


def test_vocab_and_config_are_left_to_python_unless_given(repo_root, work):
    """No VOCAB: nothing forwarded, so finetune.compare takes the vocab.txt beside AFTER."""
    argv = dry_run(repo_root, work, "finetune", "--data_dir", "data", "--after", "after")
    assert not [flag for flag in argv if flag.startswith(("--vocab_file", "--bert_config_file"))]
    (work / "after" / "checkpoint").unlink()  # a fine-tuning output and a prefix also count
    (work / "after" / "best").mkdir()
    (work / "after" / "best" / "checkpoint").write_text("")
    assert f"--run=after pretraining={work}/after" in dry_run(
        repo_root, work, "finetune", "--data_dir", "data", "--after", "after")
    assert f"--run=x={work}/before/model.ckpt-5" in dry_run(
        repo_root, work, "finetune", "--data_dir", "data", "--after", "before/model.ckpt-5",
        "--after_label", "x")


ERRORS = [  # (arguments, settings, the one error line)
    (["--after", "after"], {}, "no train data: give --data_dir (DATA_DIR) or --train_file "
                               "(TRAIN_FILE)"),
    (["--data_dir", "nowhere", "--after", "after"], {},
     "DATA_DIR={work}/nowhere: no such directory (--data_dir: a folder with train.*, dev.*, "
     "test.*)"),
    (["--data_dir", "after", "--after", "after"], {},
     "DATA_DIR={work}/after holds no train.* file (.txt .tsv .csv .json .jsonl); add one or "
     "pass --train_file (TRAIN_FILE)"),
    (["--train_file", "data/train.tsv", "--after", "after"], {},
     "no dev data: give --data_dir (DATA_DIR) or --dev_file (DEV_FILE)"),
    (["--data_dir", "data", "--test_file", "data/none.tsv", "--after", "after"], {},
     "TEST_FILE={work}/data/none.tsv: no such file"),
    (["--data_dir", "data"], {}, "give --after (AFTER): the pretraining output dir or checkpoint "
                                 "to compare with BEFORE (empty BEFORE = random init)"),
    (["--data_dir", "data", "--after", "data"], {},
     "AFTER={work}/data holds no checkpoint. Pretrain first (make pretrain, or bash "
     "scripts/pretrain.sh --output_dir ...) or point AFTER= / --after at a pretraining output "
     "dir or checkpoint prefix"),
    (["--data_dir", "data", "--after", "after", "--before", "before/model.ckpt-6"], {},
     "BEFORE={work}/before/model.ckpt-6 is neither a checkpoint directory nor a checkpoint "
     "prefix"),
    (["--data_dir", "data", "--after", "after"], {"CONFIG": "none.json"},
     "CONFIG={work}/none.json: no such file"),
    (["--data_dir", "data", "--after", "after", "--vocab", "none.txt"], {},
     "VOCAB={work}/none.txt: no such file"),
    (["--data_dir", "data", "--after", "after"], {"EPOCHS": "two"},
     "EPOCHS must be a positive number, not 'two'"),
    (["--data_dir", "data", "--after", "after", "--batch_size", "-3"], {},
     "BATCH_SIZE must be a non-negative integer, not '-3'"),
    (["--data_dir", "data", "--after", "after", "--seeds", "1;2"], {},
     "SEEDS must be comma-separated integers (e.g. 1,2,3), not '1;2'"),
    (["--data_dir", "data", "--after", "after", "--rerun=maybe"], {},
     "--rerun=maybe: use --rerun alone, or --rerun=true|false"),
    (["--data_dir", "data", "--after", "after"], {"RERUN": "maybe"},
     "RERUN must be true or false, not 'maybe'"),
    (["--data_dir", "data", "--after", "after", "--frobnicate", "1"], {},
     "unknown option --frobnicate (see --help; flags for finetune.compare go after --)"),
    (["--data_dir", "data", "--after"], {}, "--after needs a value (see --help)"),
    (["data"], {}, "unknown argument 'data' (see --help; flags for finetune.compare go after --)"),
]


@pytest.mark.parametrize("args,settings,message", ERRORS)
def test_errors_are_one_line_with_exit_code_2(repo_root, work, args, settings, message):
    done = run_script(repo_root, work, "finetune", *args, **settings)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"finetune.sh: error: {message.format(work=work)}"]
    assert done.stdout == ""


def test_a_data_dir_with_two_train_files_is_refused(repo_root, work):
    (work / "data" / "train.jsonl").write_text('{"text_a": "好", "label": "pos"}\n')
    done = run_script(repo_root, work, "finetune", "--data_dir", "data", "--after", "after")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"finetune.sh: error: DATA_DIR={work}/data holds train.tsv train.jsonl: pass "
        "--train_file (TRAIN_FILE) to say which"]
    argv = dry_run(repo_root, work, "finetune", "--data_dir", "data", "--train_file",
                   "data/train.jsonl", "--after", "after")
    assert f"--train_file={work}/data/train.jsonl" in argv


def test_the_extensions_are_run_finetunes(repo_root, tmp_path):
    """The split files the script looks for in DATA_DIR are the ones run_finetune reads."""
    shown = run_script(repo_root, tmp_path, "finetune", "--help").stdout
    listed = re.search(r"^ +\(([^)]*)\)$", shown, re.MULTILINE).group(1).split()
    assert tuple(listed) == run_finetune.DATA_EXTENSIONS == (
        ".txt", ".tsv", ".csv", ".json", ".jsonl")


def test_a_real_run_calls_compare_with_the_dry_run_command(repo_root, work):
    """Without --dry_run the same command runs (a stand-in interpreter records it)."""
    recorder = work / "python"
    recorder.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {work}/args\n")
    recorder.chmod(0o755)
    args = ["--task", "pair", "--data_dir", "data", "--after", "after", "--out", "out",
            "--epochs", "1", "--python", str(recorder)]
    done = run_script(repo_root, work, "finetune", *args)
    assert done.returncode == 0, done.stderr
    recorded = (work / "args").read_text(encoding="utf-8").splitlines()
    assert recorded[:2] == ["-m", "finetune.compare"]
    shown = subprocess.run(["bash", str(repo_root / "scripts" / "finetune.sh"), "--dry_run",
                            *args], cwd=work, env=clean_env(), capture_output=True, text=True)
    assert recorded[2:] == shlex.split(shown.stdout)[3:]
    assert done.stdout.splitlines()[0] == (
        f"== fine-tuning comparison (pair): {work}/data -> {work}/out")
    assert done.stdout.splitlines()[-1].startswith(f"== table: {work}/out/results.md")


# ---- lcqmc_finetune.sh: finetune.sh with LCQMC's settings ----------------------------------------

@pytest.fixture
def lcqmc(work):
    (work / "lcqmc").mkdir()
    for split in ("train", "dev", "test"):
        (work / "lcqmc" / f"{split}.txt").write_text("a\tb\t1\n", encoding="utf-8")
    return work


def test_lcqmc_is_the_pair_task_at_64_tokens_unless_set(repo_root, lcqmc):
    argv = dry_run(repo_root, lcqmc, "lcqmc", "--lcqmc_dir", "lcqmc", "--after", "after")
    assert argv == ["--task=pair", f"--data_dir={lcqmc}/lcqmc", "--run=random init=",
                    f"--run=after pretraining={lcqmc}/after", "--max_seq_length=64",
                    f"--output_dir={repo_root}/results/lcqmc"]
    options, _ = parsed_by_compare(argv)
    assert options.max_seq_length == 64 and options.task == "pair"
    # Its documented options keep working; the caller's settings win over the presets.
    argv = dry_run(repo_root, lcqmc, "lcqmc", "--after", "after", "--max_train_examples", "20",
                   "--epochs", "1", "--seed=7", "--batch_size", "8", "--learning_rate", "1e-4",
                   "--eval_every", "5", "--strategy", "cpu", "--max_dev_examples", "9",
                   "--max_seq_length", "40", "--before_label", "b", "--after_label", "a",
                   "--config", "config.json", "--vocab", "vocab.txt", "--out", "o", "--rerun",
                   "--", "--bootstrap_samples=10", LCQMC_DIR="lcqmc")
    options, runs = parsed_by_compare(argv)
    assert runs == ["b=", f"a={lcqmc}/after"]
    assert (options.max_train_examples, options.num_train_epochs, options.random_seed,
            options.train_batch_size, options.learning_rate, options.eval_every_steps,
            options.max_dev_examples, options.max_seq_length, options.rerun,
            options.bootstrap_samples) == (20, 1.0, 7, 8, 1e-4, 5, 9, 40, True, 10)
    assert options.output_dir == f"{lcqmc}/o" and options.vocab_file == f"{lcqmc}/vocab.txt"
    assert options.bert_config_file == f"{lcqmc}/config.json"
    argv = dry_run(repo_root, lcqmc, "lcqmc", "--lcqmc_dir", "lcqmc", "--after", "after",
                   MAX_SEQ_LENGTH="48", EPOCHS="3", OUT="o")
    assert "--max_seq_length=48" in argv and "--num_train_epochs=3" in argv
    assert "--max_seq_length=64" not in argv and f"--output_dir={lcqmc}/o" in argv


def test_lcqmc_refusals(repo_root, lcqmc):
    missing = run_script(repo_root, lcqmc, "lcqmc", "--dry_run", LCQMC_DIR="no_such_dir")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.splitlines()[0] == (
        f"lcqmc_finetune.sh: no LCQMC data at {lcqmc}/no_such_dir (missing: train.txt dev.txt "
        "test.txt).")
    assert "text_a<TAB>text_b<TAB>label" in missing.stderr
    for option in ("--data_dir", "--task"):
        refused = run_script(repo_root, lcqmc, "lcqmc", option, "x", LCQMC_DIR="lcqmc")
        assert refused.returncode == 2 and refused.stderr.splitlines() == [
            f"lcqmc_finetune.sh: error: {option} is LCQMC's here: use --lcqmc_dir (LCQMC_DIR), "
            "or scripts/finetune.sh for other data"]
    no_checkpoint = run_script(repo_root, lcqmc, "lcqmc", "--after", "nothing_here",
                               LCQMC_DIR="lcqmc")
    assert no_checkpoint.returncode == 2 and no_checkpoint.stderr.startswith(
        f"finetune.sh: error: AFTER={lcqmc}/nothing_here holds no checkpoint")
