"""The stage scripts' dry runs, real runs (with a stand-in interpreter) and refusals whose
output is pinned in golden/NAME.txt: scripts/finetune.sh, lcqmc_finetune.sh,
create_pretrain_data.sh and pretrain.sh.

Each case runs one script in a fixture folder FIX holding small stand-ins of its inputs
(task data, checkpoints, LCQMC files, a corpus, records) and a stand-in interpreter FIX/fake_python that prints
its arguments (FIX/failing_python exits 3). Cases named *_shared use the default
../shared/data paths. Records and requirements: tests.testutil.script_goldens.

    python -m tests.scripts.golden_cases [NAME ...]   # (re)writes golden/NAME.txt
"""
import pathlib
import sys

from tests.testutil import script_goldens

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent / "golden"


def _write(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_fixture(fix):
    """The inputs every case may name, under `fix`."""
    for split in ("train", "dev", "test"):
        _write(fix / "data" / f"{split}.tsv", "text_a\tlabel\n很好\tpos\n")
        _write(fix / "lcqmc" / f"{split}.txt", "a\tb\t1\n")
    for name in ("train.tsv", "train.jsonl", "dev.tsv"):
        _write(fix / "two" / name, "x\n")
    _write(fix / "lcqmc_partial" / "train.txt", "a\tb\t1\n")
    _write(fix / "after" / "checkpoint", 'model_checkpoint_path: "model.ckpt-9"\n')
    _write(fix / "after" / "vocab.txt", "[PAD]\n")
    _write(fix / "finetuned" / "best" / "checkpoint")
    _write(fix / "before" / "model.ckpt-5.index")
    _write(fix / "vocab.txt", "[PAD]\n")
    _write(fix / "config.json", "{}")
    (fix / "empty").mkdir()
    _write(fix / "corpus.txt", "一句话。\n")
    _write(fix / "records" / "a.tfrecord")
    _write(fix / "pretrained" / "eval_results.txt", "masked_lm_accuracy = 0.5\n")
    for name, code in (("fake_python", 0), ("failing_python", 3)):
        _write(fix / name, f"#!/bin/sh\nprintf '[%s]\\n' \"$@\"\nexit {code}\n")
        (fix / name).chmod(0o755)


def finetune_output(fix):
    """FIX/out as a comparison leaves it: its dev curve drawn."""
    _write(fix / "out" / "dev_curve.png")


def dry_runs(script):
    """A function making the dry-run cases of `script`: (args, settings, state,
    requirement)."""
    def dry(args, settings=None, state=None, requirement=None):
        return (script, ["--dry_run", *args], settings or {}, state, requirement)
    return dry


FAKE = "{FIX}/fake_python"
# The demo's output in the checkout, which the scripts' defaults name.
WITH_CHECKPOINT = "with output/demo/pretrain/checkpoint"
WITHOUT_CHECKPOINT = "without output/demo/pretrain/checkpoint"
DEMO_RECORDS = "output/demo/data/*.tfrecord"
DATA = ["--data_dir", "data", "--after", "after"]
EVERY_SETTING = {
    "MAX_TRAIN_EXAMPLES": "100", "MAX_DEV_EXAMPLES": "50", "EPOCHS": "2.5",
    "MAX_SEQ_LENGTH": "96", "BATCH_SIZE": "16", "EVAL_BATCH_SIZE": "64", "LEARNING_RATE": "3e-5",
    "WARMUP_PROPORTION": ".2", "EVAL_EVERY": "25", "SEED": "9", "STRATEGY": "cpu",
    "BOOTSTRAP_SAMPLES": "500", "SELECTION_METRIC": "macro_f1", "INPUT_FORMAT": "tsv",
    "TEXT_FIELDS": "text_a", "LABEL_FIELD": "label", "TAG_SCHEME": "BIO",
    "DO_LOWER_CASE": "1", "ALLOW_UNSEEN_LABELS": "0", "COLLECT_ONLY": "false",
    "SEEDS": "1,2,3", "OUT": "results/all", "CONFIG": "config.json", "VOCAB": "vocab.txt"}


def _finetune_cases():
    dry = dry_runs("finetune.sh")
    cases = {
        "finetune_help": ("finetune.sh", ["--help"], {}, None, None),
        "finetune_help_settings": ("finetune.sh", ["--task", "pair", "--help"],
                                   {"EPOCHS": "7", "TASK": "ner", "BEFORE": "b",
                                    "AFTER_LABEL": ""}, None, None),
        "finetune_readme": dry(["--task", "classification", "--data_dir", "data", "--after",
                                "after", "--seeds", "1,2,3", "--out", "results/sentiment",
                                "--", "--ignore_invalid_weights"]),
        "finetune_by_environment": ("finetune.sh", ["--", "--ignore_invalid_weights"], {
            "DRY_RUN": "1", "TASK": "classification", "DATA_DIR": "data", "AFTER": "after",
            "SEEDS": "1,2,3", "OUT": "results/sentiment"}, None, None),
        "finetune_every_setting": dry(DATA, EVERY_SETTING),
        "finetune_every_option": dry(DATA + [
            item for index, (name, value) in enumerate(EVERY_SETTING.items())
            if name not in ("DO_LOWER_CASE", "ALLOW_UNSEEN_LABELS", "COLLECT_ONLY")
            for item in ([f"--{name.lower()}={value}"] if index % 2
                         else [f"--{name.lower()}", value])]
            + ["--allow_unseen_labels=false", "--collect_only", "--do_lower_case", "true"]),
        "finetune_files_and_switches": dry(
            ["--task", "ner", "--train_file", "data/train.tsv", "--dev_file", "data/dev.tsv",
             "--test_file", "data/test.tsv", "--tag_scheme", "BIOES", "--allow_unseen_labels",
             "--before", "before/model.ckpt-5", "--after", "after", "--config", "config.json",
             "--vocab", "vocab.txt", "--before_label", "google", "--after_label", "ours",
             "--rerun"], {"DO_LOWER_CASE": "false"}),
        "finetune_before_from_environment": dry(DATA, {
            "BEFORE": "before/model.ckpt-5", "RERUN": "1", "COLLECT_ONLY": "true",
            "AFTER_LABEL": "ours (v2)", "BEFORE_LABEL": "it's"}),
        "finetune_option_over_environment": dry(
            DATA + ["--rerun=false", "--task=ner", "--epochs", "3"],
            {"RERUN": "1", "TASK": "pair", "EPOCHS": "1"}),
        "finetune_empty_labels": dry(DATA + ["--after_label", "", "--before_label=", "--seeds",
                                             ""], {"SEEDS": "4"}),
        "finetune_remote_paths": dry([], {"DATA_DIR": "gs://bucket/task",
                                          "AFTER": "gs://bucket/model", "VOCAB": "gs://b/v.txt",
                                          "BEFORE": "gs://bucket/base", "OUT": "gs://b/out"}),
        "finetune_finetuned_after": dry(["--data_dir", "data", "--after", "finetuned",
                                         "--before", "{FIX}/after"]),
        "finetune_two_train_files_named": dry(["--data_dir", "two", "--train_file",
                                               "two/train.jsonl", "--after", "after"]),
        "finetune_dev_and_test_files_only": dry(
            ["--train_file", "data/train.tsv", "--dev_file", "data/dev.tsv", "--after",
             "before/model.ckpt-5"]),
        "finetune_run": ("finetune.sh", ["--task", "pair", *DATA, "--out", "out", "--epochs",
                                         "1", "--python", FAKE], {}, finetune_output, None),
        "finetune_run_without_plot": ("finetune.sh", DATA + ["--out", "out", "--python", FAKE],
                                      {"SEED": "3"}, None, None),
        "finetune_run_no_out": ("finetune.sh", DATA + ["--python", FAKE], {"SEEDS": "1,2"},
                                None, None),
        "finetune_run_fails": ("finetune.sh", DATA + ["--out", "out", "--python",
                                                      "{FIX}/failing_python"], {}, None, None),
    }
    refusals = {
        "no_train_data": (["--after", "after"], {}),
        "data_dir": (["--data_dir", "nowhere", "--after", "after"], {}),
        "empty_data_dir": (["--data_dir", "empty", "--after", "after"], {}),
        "two_train_files": (["--data_dir", "two", "--after", "after"], {}),
        "no_dev_data": (["--train_file", "data/train.tsv", "--after", "after"], {}),
        "dev_data_dir": (["--data_dir", "lcqmc_partial", "--after", "after"], {}),
        "test_file": (DATA + ["--test_file", "data/none.tsv"], {}),
        "train_file": (DATA, {"TRAIN_FILE": "none.tsv"}),
        "no_after": (["--data_dir", "data"], {}),
        "after": (["--data_dir", "data", "--after", "data"], {}),
        "before": (DATA + ["--before", "before/model.ckpt-6"], {}),
        "config": (DATA, {"CONFIG": "none.json"}),
        "vocab": (DATA + ["--vocab", "none.txt"], {}),
        "epochs": (DATA, {"EPOCHS": "two"}),
        "learning_rate": (DATA + ["--learning_rate", "1e-"], {}),
        "batch_size": (DATA + ["--batch_size", "-3"], {}),
        "seed": (DATA, {"SEED": "1.5", "MAX_TRAIN_EXAMPLES": "x"}),
        "seeds": (DATA + ["--seeds", "1;2"], {}),
        "switch_value": (DATA + ["--rerun=maybe"], {}),
        "switch_setting": (DATA, {"RERUN": "maybe"}),
        "do_lower_case": (DATA, {"DO_LOWER_CASE": "yes"}),
        "unknown_option": (DATA + ["--frobnicate", "1"], {}),
        "unknown_option_with_value": (DATA + ["--frobnicate=1"], {}),
        "no_value": (["--data_dir", "data", "--after"], {}),
        "argument": (["data"], {}),
        "single_dash": (DATA + ["-x"], {}),
        "dry_run_value": (DATA + ["--dry_run=1"], {}),
        "python": (DATA + ["--python", "{FIX}/no_python"], {}),
    }
    for name, (args, settings) in refusals.items():
        cases[f"finetune_refuses_{name}"] = dry(args, settings)
    return cases


LCQMC_OPTIONS = ["--after", "after", "--max_train_examples", "20", "--epochs", "1", "--seed=7",
                 "--batch_size", "8", "--learning_rate", "1e-4", "--eval_every", "5",
                 "--strategy", "cpu", "--max_dev_examples", "9", "--max_seq_length", "40",
                 "--before_label", "b", "--after_label", "a", "--config", "config.json",
                 "--vocab", "vocab.txt", "--out", "o", "--rerun", "--",
                 "--bootstrap_samples=10"]


def _lcqmc_cases():
    dry = dry_runs("lcqmc_finetune.sh")
    lcqmc = {"LCQMC_DIR": "lcqmc"}
    cases = {
        "lcqmc_help": ("lcqmc_finetune.sh", ["--help"], {}, None, None),
        "lcqmc_help_settings": ("lcqmc_finetune.sh", ["--lcqmc_dir", "x", "--help"],
                                {"LCQMC_DIR": "{FIX}/lcqmc", "EPOCHS": "2"}, None, None),
        "lcqmc_shared": dry(["--after", "{FIX}/after"], requirement="shared"),
        "lcqmc_shared_demo_after": dry([], requirement=("shared", WITHOUT_CHECKPOINT)),
        "lcqmc_demo_after": dry(["--lcqmc_dir", "lcqmc"], requirement=WITH_CHECKPOINT),
        "lcqmc_dir": dry(["--lcqmc_dir", "lcqmc", "--after", "after"]),
        "lcqmc_dir_equals": dry(["--lcqmc_dir=lcqmc", "--after=after", "--max_seq_length=77"]),
        "lcqmc_options": dry(LCQMC_OPTIONS, lcqmc),
        "lcqmc_settings_win": dry(["--lcqmc_dir", "lcqmc", "--after", "after"],
                                  {"MAX_SEQ_LENGTH": "48", "EPOCHS": "3", "OUT": "o"}),
        "lcqmc_dry_run_by_environment": ("lcqmc_finetune.sh", ["--after", "after"],
                                         dict(lcqmc, DRY_RUN="1", AFTER="before/model.ckpt-5",
                                              BEFORE="before/model.ckpt-5"), None, None),
        "lcqmc_extra_after_double_dash": dry(["--after", "after", "--", "--task=ner",
                                              "--data_dir", "x"], lcqmc),
        "lcqmc_run": ("lcqmc_finetune.sh", ["--after", "after", "--out", "out", "--python",
                                            FAKE], lcqmc, finetune_output, None),
        "lcqmc_refuses_missing_data": dry([], {"LCQMC_DIR": "no_such_dir"}),
        "lcqmc_refuses_partial_data": dry(["--lcqmc_dir", "lcqmc_partial"]),
        "lcqmc_refuses_data_dir": ("lcqmc_finetune.sh", ["--data_dir", "x"], lcqmc, None, None),
        "lcqmc_refuses_task": ("lcqmc_finetune.sh", ["--task=pair"], lcqmc, None, None),
        "lcqmc_refuses_no_value": dry(["--lcqmc_dir"]),
        "lcqmc_refuses_no_checkpoint": dry(["--after", "nothing_here"], lcqmc),
        "lcqmc_refuses_unknown_option": dry(["--after", "after", "--frobnicate"], lcqmc),
        "lcqmc_refuses_epochs": dry(["--after", "after"], dict(lcqmc, EPOCHS="x")),
    }
    return cases


GENERATION = {"MODE": "albert", "MAX_SEQ_LENGTH": "64", "MAX_PREDICTIONS": "10",
              "MASKED_LM_PROB": "0.2", "DUPE_FACTOR": "3", "SEED": "7", "NUM_WORKERS": "2",
              "COMPRESSION": "gzip", "DO_LOWER_CASE": "false", "VOCAB_SIZE": "300"}
OWN_DATA = ["--input", "corpus.txt", "--vocab", "vocab.txt", "--output_dir", "out"]


def _data_cases():
    dry = dry_runs("create_pretrain_data.sh")
    cases = {
        "data_help": ("create_pretrain_data.sh", ["--help"], {}, None, None),
        "data_help_settings": ("create_pretrain_data.sh", ["--mode", "bert", "--help"],
                               {"INPUT": "c.txt", "VOCAB_SIZE": "9", "BUILD_VOCAB": "never"},
                               None, None),
        "data_demo": dry([], requirement="without output/demo/vocab.txt"),
        "data_demo_existing_vocab": dry([], requirement="with output/demo/vocab.txt"),
        "data_demo_build_always": dry([], {"BUILD_VOCAB": "always"}),
        "data_demo_vocab_size": dry(["--vocab_size", "700"], {"BUILD_VOCAB": "always"}),
        "data_own_vocab": dry(OWN_DATA),
        "data_every_setting": dry(OWN_DATA + ["--", "--ngram=2"], GENERATION),
        "data_every_option": dry(["--output_name=mine", *OWN_DATA, "--build_vocab", "always",
                                  "--vocab_input", "corpus.txt,x/*.txt"] + [
            item for index, (name, value) in enumerate(GENERATION.items())
            for item in ([f"--{name.lower()}={value}"] if index % 2
                         else [f"--{name.lower()}", value])], {"DO_LOWER_CASE": "true"}),
        "data_option_over_environment": dry(["--mode", "albert", "--seed=7", "--", "--ngram=2",
                                             "x y"], {"MODE": "bert", "DUPE_FACTOR": "3",
                                                      "VOCAB": "{FIX}/vocab.txt"}),
        "data_build_missing_default": ("create_pretrain_data.sh", [], {
            "DRY_RUN": "1", "OUTPUT_DIR": "{FIX}/out", "VOCAB_INPUT": "{FIX}/corpus.txt",
            "DO_LOWER_CASE": "true"}, None, "without output/demo/vocab.txt"),
        "data_run": ("create_pretrain_data.sh", OWN_DATA + ["--python", FAKE], {}, None, None),
        "data_run_build": ("create_pretrain_data.sh", OWN_DATA + [
            "--python", FAKE, "--build_vocab", "always", "--vocab", "new/vocab.txt"],
                           {"COMPRESSION": "gzip"}, None, None),
        "data_run_fails": ("create_pretrain_data.sh", OWN_DATA + [
            "--python", "{FIX}/failing_python"], {}, None, None),
    }
    refusals = {
        "unknown_option": ["--frobnicate"],
        "unknown_option_with_value": ["--frobnicate=1"],
        "argument": ["corpus.txt"],
        "no_value": ["--vocab"],
        "build_vocab": ["--build_vocab", "sometimes"],
        "do_lower_case": OWN_DATA + ["--do_lower_case", "yes"],
        "missing_vocab": ["--vocab", "none.txt"],
        "missing_vocab_never": ["--vocab", "none.txt", "--build_vocab", "never"],
        "python": OWN_DATA + ["--python", "{FIX}/no_python"],
    }
    for name, args in refusals.items():
        cases[f"data_refuses_{name}"] = dry(args)
    return cases


PRETRAIN = ["--input", "records/*.tfrecord", "--config", "config.json", "--output_dir", "o"]
TRAINING = {"STEPS": "100", "WARMUP_STEPS": "10", "BATCH_SIZE": "8", "EVAL_BATCH_SIZE": "4",
            "EVAL_STEPS": "2", "LEARNING_RATE": "1e-4", "OPTIMIZER": "lamb", "STRATEGY": "cpu",
            "PRECISION": "fp32", "ACCUMULATION": "2", "MAX_SEQ_LENGTH": "64",
            "MAX_PREDICTIONS": "10", "LOG_EVERY": "5", "SAVE_EVERY": "50",
            "INIT_CHECKPOINT": "after", "EVAL_INPUT": "records/b*", "SEED": "3",
            "VOCAB": "vocab.txt"}


def _pretrain_cases():
    dry = dry_runs("pretrain.sh")
    cases = {
        "pretrain_help": ("pretrain.sh", ["--help"], {}, None, None),
        "pretrain_help_settings": ("pretrain.sh", ["--steps", "5", "--help"],
                                   {"CONFIG": "c.json"}, None, None),
        "pretrain_input": dry(PRETRAIN),
        "pretrain_every_setting": dry(PRETRAIN + ["--", "--keep_checkpoint_max=2"],
                                      dict(TRAINING, DO_EVAL="false")),
        "pretrain_every_option": dry(PRETRAIN + ["--no_eval"] + [
            item for index, (name, value) in enumerate(TRAINING.items())
            for item in ([f"--{name.lower()}={value}"] if index % 2
                         else [f"--{name.lower()}", value])]),
        "pretrain_by_environment": ("pretrain.sh", [], {
            "DRY_RUN": "1", "INPUT": "x y/*.tfrecord", "CONFIG": "c.json", "OUTPUT_DIR": "o",
            "DO_EVAL": "no", "STEPS": "9"}, None, None),
        "pretrain_option_over_environment": dry(PRETRAIN + ["--steps=7"],
                                                {"STEPS": "3", "CONFIG": "other.json"}),
        "pretrain_demo_without_data": dry([], requirement=f"without {DEMO_RECORDS}"),
        "pretrain_demo": dry([], requirement=f"with {DEMO_RECORDS}"),
        "pretrain_demo_settings": dry(["--steps", "50", "--output_dir", "o"], {
            "LEARNING_RATE": "2e-3", "CONFIG": "config.json", "DO_EVAL": "false"},
            requirement=f"with {DEMO_RECORDS}"),
        "pretrain_run": ("pretrain.sh", ["--input", "records/*.tfrecord", "--config",
                                         "config.json", "--output_dir", "pretrained",
                                         "--python", FAKE], {}, None, None),
        "pretrain_run_no_eval": ("pretrain.sh", ["--input", "records/*.tfrecord", "--config",
                                                 "config.json", "--output_dir", "pretrained",
                                                 "--python", FAKE, "--no_eval"], {}, None, None),
        "pretrain_run_fails": ("pretrain.sh", PRETRAIN + ["--python", "{FIX}/failing_python"],
                               {}, None, None),
    }
    refusals = {
        "no_config": ["--input", "x", "--output_dir", "o"],
        "no_output_dir": ["--input", "x", "--config", "c.json"],
        "unknown_option": PRETRAIN + ["--frobnicate", "1"],
        "unknown_option_with_value": PRETRAIN + ["--eval=1"],
        "argument": ["records"],
        "no_value": PRETRAIN + ["--steps"],
        "no_eval_value": PRETRAIN + ["--no_eval=1"],
    }
    for name, args in refusals.items():
        cases[f"pretrain_refuses_{name}"] = dry(args)
    return cases


CASES = {**_finetune_cases(), **_lcqmc_cases(), **_data_cases(), **_pretrain_cases()}


GOLDENS = script_goldens.Goldens(CASES, make_fixture, GOLDEN_DIR)

if __name__ == "__main__":
    GOLDENS.write(sys.argv[1:])
