"""scripts/pretrain.sh: `python -m pretrain.run_pretraining --do_train` (and --do_eval) from
settings. With no INPUT: the demo (tiny BERT on the demo TFRecords, a few hundred steps on
CPU, then eval).

    python -m pretrain.pretrain_script [OPTIONS] [-- EXTRA_FLAGS_FOR_run_pretraining...]

Every setting is an environment variable and the option of its name in lower case
(common.script_options); a training setting goes to its flag only when set (the demo fills
the ones left unset). Paths are passed as given.
"""
import glob
import os
import sys

from common.script_options import (assignments, read_options, script_main, tool_flags,
                                   use_settings, variables)
from common.script_runs import REPO_ROOT, Refusal, setting

SCRIPT = "pretrain.sh"
# The training settings, (VARIABLE, flag) of pretrain.run_pretraining.
TRAINING_SETTINGS = (
    ("STEPS", "num_train_steps"), ("WARMUP_STEPS", "num_warmup_steps"),
    ("BATCH_SIZE", "train_batch_size"), ("EVAL_BATCH_SIZE", "eval_batch_size"),
    ("EVAL_STEPS", "max_eval_steps"), ("LEARNING_RATE", "learning_rate"),
    ("OPTIMIZER", "optimizer"), ("STRATEGY", "strategy"), ("PRECISION", "precision"),
    ("ACCUMULATION", "gradient_accumulation_steps"), ("MAX_SEQ_LENGTH", "max_seq_length"),
    ("MAX_PREDICTIONS", "max_predictions_per_seq"), ("LOG_EVERY", "log_every_n_steps"),
    ("SAVE_EVERY", "save_checkpoints_steps"), ("INIT_CHECKPOINT", "init_checkpoint"),
    ("EVAL_INPUT", "eval_input_file"), ("SEED", "random_seed"), ("VOCAB", "vocab_file"))
# The demo: used when no --input/INPUT is given, for the settings left empty.
DEMO_PATHS = {"CONFIG": f"{REPO_ROOT}/common/model_configs/demo_tiny_bert.json",
              "INPUT": f"{REPO_ROOT}/output/demo/data/*.tfrecord",
              "OUTPUT_DIR": f"{REPO_ROOT}/output/demo/pretrain"}
DEMO_SETTINGS = {"STEPS": "300", "WARMUP_STEPS": "30", "LEARNING_RATE": "1e-3",
                 "EVAL_BATCH_SIZE": "32", "EVAL_STEPS": "20", "LOG_EVERY": "50",
                 "SAVE_EVERY": "300"}
VALUE_OPTIONS = ["CONFIG", "INPUT", "OUTPUT_DIR", "PYTHON", *variables(TRAINING_SETTINGS)]


def read_settings():
    """{VARIABLE: value} from the environment (unset: empty; DO_EVAL true)."""
    values = {name: setting(name) for name in (*variables(TRAINING_SETTINGS), *DEMO_PATHS)}
    values.update(DO_EVAL=setting("DO_EVAL", "true"), DRY_RUN=setting("DRY_RUN", "0"),
                  PYTHON=setting("PYTHON", sys.executable))
    return values


def usage(_values):
    return f"""Usage: bash scripts/pretrain.sh [OPTIONS] [-- EXTRA_FLAGS_FOR_run_pretraining...]

Runs python -m pretrain.run_pretraining --do_train (and --do_eval). Every
setting is an option or the environment variable beside it (the option wins).
Training settings left unset take run_pretraining's own defaults (see
python -m pretrain.run_pretraining --help); MAX_SEQ_LENGTH and MAX_PREDICTIONS
default to the data's .meta.json. Rerunning with the same output directory
resumes from its last checkpoint.

  --config FILE           CONFIG           model config JSON (required, except in the demo)
  --input GLOBS           INPUT            training TFRecord globs; unset = the demo
  --output_dir DIR        OUTPUT_DIR       checkpoints + eval results (required, except in the demo)
  --eval_input GLOBS      EVAL_INPUT       eval TFRecord globs (default: --input)
  --init_checkpoint P     INIT_CHECKPOINT  start from these weights
  --vocab FILE            VOCAB            the data's vocab (default: the one its .meta.json names)
  --steps N               STEPS            optimizer updates
  --warmup_steps N        WARMUP_STEPS     warmup updates
  --batch_size N          BATCH_SIZE       global train batch
  --eval_batch_size N     EVAL_BATCH_SIZE  eval batch
  --eval_steps N          EVAL_STEPS       max eval batches
  --learning_rate R       LEARNING_RATE    peak learning rate
  --seed N                SEED             graph seed; also fixes the input order
  --optimizer NAME        OPTIMIZER        adamw | lamb
  --strategy NAME         STRATEGY         auto|cpu|gpu|mirrored|multi_worker|tpu
  --precision NAME        PRECISION        auto|fp32|fp16|bf16
  --accumulation K        ACCUMULATION     gradient accumulation steps
  --max_seq_length N      MAX_SEQ_LENGTH   sequence length of the data
  --max_predictions N     MAX_PREDICTIONS  masked positions per sequence
  --log_every N           LOG_EVERY        log/summary interval
  --save_every N          SAVE_EVERY       checkpoint interval (updates)
  --no_eval               DO_EVAL=false    train only
  --python PATH           PYTHON           interpreter (else .venv/bin/python, else python3)
  --dry_run               DRY_RUN=1        print the command, run nothing
  -h, --help                               this help

The demo (no --input): {assignments(DEMO_PATHS)}
  and, for the settings left unset: {assignments(DEMO_SETTINGS)}
Arguments after -- go to run_pretraining unchanged (e.g. -- --keep_checkpoint_max=2)."""


def fill_demo(values):
    """The demo's paths and settings for those left unset; its records must exist."""
    for name, value in {**DEMO_PATHS, **DEMO_SETTINGS}.items():
        values[name] = values[name] or value
    if not glob.glob(values["INPUT"]):
        raise Refusal(f"no demo TFRecords ({values['INPUT']}); make them first: bash "
                      "scripts/create_pretrain_data.sh (or: make data)")


def pretrain(run, argv):
    values = read_settings()
    extra = read_options(argv, values, usage, value_options=VALUE_OPTIONS,
                         tool="run_pretraining", words={"--no_eval": ("DO_EVAL", "false"),
                                                        "--dry_run": ("DRY_RUN", "1")})
    demo = not values["INPUT"]
    if demo:
        fill_demo(values)
    for name, option in (("CONFIG", "config"), ("OUTPUT_DIR", "output_dir")):
        if not values[name]:
            raise Refusal(f"--{option} ({name}) is required with --input")
    use_settings(run, values)
    evaluate = values["DO_EVAL"] == "true"
    command = run.tool("pretrain.run_pretraining", f"--bert_config_file={values['CONFIG']}",
                       f"--input_file={values['INPUT']}", f"--output_dir={values['OUTPUT_DIR']}",
                       "--do_train", *(["--do_eval"] if evaluate else []),
                       *tool_flags(TRAINING_SETTINGS, values, switch_words=False), *extra)
    if not run.dry_run:
        print(f"pretrain: {values['CONFIG']} on {values['INPUT']} -> {values['OUTPUT_DIR']}"
              + (" (demo)" if demo else ""), flush=True)
    run.run(command)
    results = f"{values['OUTPUT_DIR']}/eval_results.txt"
    if not run.dry_run and evaluate and os.path.isfile(results):
        print(f"eval results ({results}):")
        with open(results, encoding="utf-8", errors="replace") as text:
            sys.stdout.write(text.read())


def main(argv=None):
    script_main(SCRIPT, pretrain, argv)


if __name__ == "__main__":
    main()
