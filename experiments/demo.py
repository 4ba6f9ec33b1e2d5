"""The whole chain on the shipped sample, in a few minutes on CPU (`make demo`, through
scripts/demo.sh): sample text -> vocab + TFRecords -> tiny pretraining -> fine-tuning on the
demo's question pairs from random init and from the pretrained checkpoint -> the table.
Each stage runs the user's own entry script (create_pretrain_data.sh, pretrain.sh,
lcqmc_finetune.sh), so the demo also shows how to call them.

    python -m experiments.demo [--dry_run]

Settings are environment variables, by the names --help lists (common.script_runs).
"""
import re
import subprocess
import sys
import time

from common.script_runs import (REPO_ROOT, Refusal, ScriptRun, caller_path, setting,
                                tool_environment)

SCRIPT = "demo.sh"
SCRIPTS = f"{REPO_ROOT}/scripts"
DEFAULTS = {
    "DEMO_DIR": f"{REPO_ROOT}/output/demo",
    "CONFIG": f"{REPO_ROOT}/common/model_configs/demo_tiny_bert.json",
    "PAIRS_DIR": f"{REPO_ROOT}/data/sample/pairs",
    "CORPUS": f"{REPO_ROOT}/data/sample/corpus_zh.txt",
    "PRETRAIN_MAX_SEQ_LENGTH": "64", "PRETRAIN_MAX_PREDICTIONS": "10", "DUPE_FACTOR": "10",
    "PRETRAIN_STEPS": "1500", "PRETRAIN_LEARNING_RATE": "1e-3", "FINETUNE_EPOCHS": "8",
    "FINETUNE_LEARNING_RATE": "3e-4", "FINETUNE_MAX_SEQ_LENGTH": "40", "EVAL_EVERY": "125",
    "SEED": "12345",
}
# The lines of the fine-tuning log shown while it runs.
SHOWN = re.compile(r"^(== |step [0-9]+: dev|best dev|train step)")


def read_settings():
    return {name: setting(name, default) for name, default in DEFAULTS.items()}


def usage(values):
    return f"""Usage: bash scripts/demo.sh [--dry_run] [--help]

Runs the whole toolkit on the shipped sample (data/sample/), CPU only:
  1. the demo question pairs' TRAIN split becomes pretraining documents
     (python -m data_gen.tools.lcqmc_to_docs; dev/test text never enters pretraining)
  2. a 5000-entry vocab from the sample corpus + train pairs, and roberta-mode
     TFRecords from both (scripts/create_pretrain_data.sh)
  3. tiny pretraining from scratch (scripts/pretrain.sh, {values['PRETRAIN_STEPS']} steps)
  4. fine-tuning on data/sample/pairs from random initialisation and from the
     pretrained checkpoint, same seed and settings (scripts/lcqmc_finetune.sh)
  5. the comparison table (also in DEMO_DIR/lcqmc/results.md, plot dev_curve.png)
Each run starts fresh: DEMO_DIR/pretrain and DEMO_DIR/lcqmc are replaced.
--dry_run (DRY_RUN=1) prints the command of every step and runs nothing.

Settings (environment variables):
  DEMO_DIR                  everything goes here                [{values['DEMO_DIR']}]
  CONFIG                    model config (vocab_size 5000)      [{values['CONFIG']}]
  PAIRS_DIR                 train/dev/test pairs                [{values['PAIRS_DIR']}]
  CORPUS                    extra pretraining text              [{values['CORPUS']}]
  PRETRAIN_MAX_SEQ_LENGTH   pretraining sequence length         [{values['PRETRAIN_MAX_SEQ_LENGTH']}]
  PRETRAIN_MAX_PREDICTIONS  masked positions per sequence       [{values['PRETRAIN_MAX_PREDICTIONS']}]
  DUPE_FACTOR               masking passes over the text        [{values['DUPE_FACTOR']}]
  PRETRAIN_STEPS            pretraining steps (batch 32)        [{values['PRETRAIN_STEPS']}]
  PRETRAIN_LEARNING_RATE    pretraining peak learning rate      [{values['PRETRAIN_LEARNING_RATE']}]
  FINETUNE_EPOCHS           fine-tuning epochs                  [{values['FINETUNE_EPOCHS']}]
  FINETUNE_LEARNING_RATE    fine-tuning peak learning rate      [{values['FINETUNE_LEARNING_RATE']}]
  FINETUNE_MAX_SEQ_LENGTH   tokens per question pair            [{values['FINETUNE_MAX_SEQ_LENGTH']}]
  EVAL_EVERY                dev evaluation interval (steps)     [{values['EVAL_EVERY']}]
  SEED                      seed for data, pretraining, fine-tuning [{values['SEED']}]
  PYTHON                    interpreter (default .venv/bin/python, else python3)"""


class Demo:
    """The five steps in DEMO_DIR, each announced with the seconds since the start."""

    def __init__(self, run, values):
        self.run, self.values, self.started = run, values, time.monotonic()

    def step(self, number, title):
        print(f"\n{'=' * 80}\n== [{number}/5] {title}   (t = {self.elapsed()} s)\n{'=' * 80}",
              flush=True)

    def elapsed(self):
        return int(time.monotonic() - self.started)

    def pretraining_data(self, demo):
        values, run = self.values, self.run
        self.step(1, "question pairs (train split) -> pretraining documents")
        run.run(run.tool("data_gen.tools.lcqmc_to_docs", f"--lcqmc_dir={values['PAIRS_DIR']}",
                         f"--output_file={demo}/pairs_docs.txt"))
        self.step(2, "vocab (5000 entries) and roberta-mode TFRecords")
        run.run(["rm", "-rf", f"{demo}/data"])
        run.run(["bash", f"{SCRIPTS}/create_pretrain_data.sh", "--build_vocab", "always",
                 "--vocab", f"{demo}/vocab.txt", "--vocab_size", "5000",
                 "--vocab_input", f"{values['CORPUS']},{values['PAIRS_DIR']}/train.txt",
                 "--input", f"{values['CORPUS']},{demo}/pairs_docs.txt",
                 "--output_dir", f"{demo}/data", "--mode", "roberta",
                 "--max_seq_length", values["PRETRAIN_MAX_SEQ_LENGTH"],
                 "--max_predictions", values["PRETRAIN_MAX_PREDICTIONS"],
                 "--dupe_factor", values["DUPE_FACTOR"], "--seed", values["SEED"]])

    def pretraining(self, demo):
        values = self.values
        steps = values["PRETRAIN_STEPS"]
        self.step(3, f"tiny pretraining from scratch ({steps} steps)")
        self.run.run(["rm", "-rf", f"{demo}/pretrain"])
        self.run.run(["bash", f"{SCRIPTS}/pretrain.sh", "--config", values["CONFIG"],
                      "--input", f"{demo}/data/*.tfrecord", "--output_dir", f"{demo}/pretrain",
                      "--steps", steps, "--warmup_steps", str(int(steps) // 10),
                      "--learning_rate", values["PRETRAIN_LEARNING_RATE"], "--batch_size", "32",
                      "--eval_batch_size", "32", "--eval_steps", "20", "--log_every", "50",
                      "--save_every", steps, "--strategy", "cpu", "--seed", values["SEED"]])

    def fine_tuning(self, demo):
        """Step 4; its log in DEMO_DIR/finetune.log, its progress lines shown."""
        values = self.values
        self.step(4, f"fine-tuning on {values['PAIRS_DIR']}: random init vs pretrained")
        self.run.run(["rm", "-rf", f"{demo}/lcqmc"])
        command = ["bash", f"{SCRIPTS}/lcqmc_finetune.sh", "--lcqmc_dir", values["PAIRS_DIR"],
                   "--after", f"{demo}/pretrain", "--vocab", f"{demo}/vocab.txt",
                   "--config", values["CONFIG"], "--out", f"{demo}/lcqmc",
                   "--max_seq_length", values["FINETUNE_MAX_SEQ_LENGTH"],
                   "--epochs", values["FINETUNE_EPOCHS"],
                   "--learning_rate", values["FINETUNE_LEARNING_RATE"],
                   "--eval_every", values["EVAL_EVERY"], "--seed", values["SEED"],
                   "--before_label", "random init", "--after_label", "after tiny pretraining"]
        if self.run.dry_run:
            self.run.run(command)
            return False
        log_file = f"{demo}/finetune.log"
        with open(log_file, "w", encoding="utf-8") as log, subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=tool_environment()) as finetune:
            for line in finetune.stdout:
                log.write(line)
                if SHOWN.match(line):
                    print(line, end="", flush=True)
        if finetune.returncode:
            with open(log_file, encoding="utf-8", errors="replace") as log:
                sys.stdout.write("".join(log.readlines()[-30:]))
            print(f"{SCRIPT}: fine-tuning failed (full log: {log_file})", file=sys.stderr)
            sys.exit(1)
        return True

    def table(self, demo):
        self.step(5, "the table")
        with open(f"{demo}/lcqmc/results.md", encoding="utf-8") as results:
            sys.stdout.write(results.read())
        print(f"Files: {demo}/lcqmc/results.md, results.json, dev_curve.png; full fine-tuning "
              f"log {demo}/finetune.log")
        print(f"Done in {self.elapsed()} s.")


def _demo(run, argv):
    for argument in argv:
        if argument not in ("-h", "--help", "--dry_run"):
            raise Refusal(f"unknown argument '{argument}' (settings are environment "
                          "variables; see --help)")
        run.positional([argument])
    values = read_settings()
    demo = caller_path(values["DEMO_DIR"])
    steps = Demo(run, values)
    run.run(["mkdir", "-p", demo])
    steps.pretraining_data(demo)
    steps.pretraining(demo)
    if steps.fine_tuning(demo):
        steps.table(demo)


def main(argv=None):
    run = ScriptRun(SCRIPT, lambda: usage(read_settings()))
    run.main(lambda args: _demo(run, args), argv)


if __name__ == "__main__":
    main()
