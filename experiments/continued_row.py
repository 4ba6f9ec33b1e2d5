"""Did continuing a released model's pretraining on a task's text help on that task? One row,
end to end (scripts/continued_experiment.sh execs it): the task's training text (labels
dropped) -> held-out pretraining data with the general model's vocab -> continued
pretraining from the general model -> finetune.compare of the general model, the continued
one and random init over SEEDS -> the table of every row. With "sweep", the general model
continued at every point of a grid of recipes instead (continued_sweep); with "arms", once
per arm of #66 (static or train-time masks, the schedule) against today's recipe
(continued_arms).

    python -m experiments.continued_row [--dry_run] TASK MODEL [sweep|arms]

The tasks are data (tasks/TASK.json: text, fine-tuning budget), so are the general models
(general/NAME.json) and the continuing recipe with its sweep grid (continuing.json).
Settings are environment variables, by the names --help lists (common.script_runs); finished stages
are reused and another recipe's folder refused by stage_folders' rules.
"""
import os

from experiments import (continued_arms, continued_sweep, data_files, general_models,
                         stage_folders)
from common.script_runs import (REPO_ROOT, SHARED_DATA, Refusal, ScriptRun, clock,
                                matches, setting, split_list)

SCRIPT = "continued_experiment.sh"
TASK_FIELDS = {"order": int, "data_setting": str, "shared_data": str, "dev_every": int,
               "text": list, "sentence_order_text": list, "max_train_examples": int,
               "eval_every_steps": int, "finetune_flags": list, "help": list, "why": str}
CONTINUING_FIELDS = {"learning_rate": str, "steps": int, "batch_size": int, "seed": int,
                     "sweep_learning_rates": str, "sweep_steps": str, "why": str}


def tasks():
    return data_files.read_folder("tasks", TASK_FIELDS)


def read_settings():
    continuing = data_files.read_fields(os.path.join(data_files.PACKAGE_DIR, "continuing.json"),
                                        CONTINUING_FIELDS)
    defaults = {
        "GENERAL_MODELS": f"{REPO_ROOT}/runs/general_models",
        "RUNS": f"{REPO_ROOT}/runs/continued",
        "SEEDS": "1,2,3", "MAX_SEQ_LENGTH": "64", "MAX_PREDICTIONS": "10", "DUPE_FACTOR": "5",
        "EVAL_SHARE": "0.05", "CONTINUE_LEARNING_RATE": continuing["learning_rate"],
        "CONTINUE_STEPS": str(continuing["steps"]),
        "CONTINUE_BATCH_SIZE": str(continuing["batch_size"]),
        "CONTINUE_SEED": str(continuing["seed"]),
        "SWEEP_LEARNING_RATES": continuing["sweep_learning_rates"],
        "SWEEP_STEPS": continuing["sweep_steps"], "SWEEP_POINTS": "", "RANDOM_INIT": "1",
        "FINETUNE_MAX_TRAIN_EXAMPLES": "", "REUSE_FROM": "", "ARMS": ""}
    return {name: setting(name, default) for name, default in defaults.items()}


def _choices(names):
    return ", ".join(names[:-1]) + " or " + names[-1]


def usage(values):
    task_lines = []
    for name, task in tasks().items():
        task_lines += [f"  {name:<13} {task['help'][0]}"] + [f"{'':16}{line}"
                                                             for line in task["help"][1:]]
    model_lines = [f"  {model['continued_as']:<13} {model['continued_help']}"
                   for model in general_models.models().values()]
    task_lines, model_lines = "\n".join(task_lines), "\n".join(model_lines)
    arm_lines = "\n".join(f"  {name:<15} {arm['help']}"
                          for name, arm in continued_arms.read_arms()["arms"].items())
    return f"""Usage: bash scripts/continued_experiment.sh [--dry_run] TASK MODEL [sweep|arms]

TASK (its training split's text is continued on; dev and test are never read before
fine-tuning):
{task_lines}
MODEL (a general model of scripts/make_general_models.sh, in GENERAL_MODELS):
{model_lines}
Writes RUNS/TASK/MODEL/{{docs.txt, data/ (data/eval/: held out), continued/ (eval_results.txt:
init_* = the general model on the same batches, general/* = its own held-out general text),
compare/ (results.md, results.json); with FINETUNE_MAX_TRAIN_EXAMPLES=N other than the task's:
compare_trainN/}}. A rerun reuses finished stages and resumes a killed continuation; continued/
holding another recipe's run (CONTINUE_* changed, or made before the default became 1000 steps)
is refused: set CONTINUE_* to its recipe (e.g. CONTINUE_STEPS=500), move it or give another RUNS.
With "sweep" (after the row has run): the general model continued at every point of
SWEEP_LEARNING_RATES x SWEEP_STEPS, or of SWEEP_POINTS (RUNS/TASK/MODEL/sweep/
lr<RATE>_steps<N>/; the row's own run stands for its recipe's point), one finetune.compare of
the general model against every point (sweep/compare/, or sweep/compare_trainN/; the row's
finished fine-tunings of that budget reused) and sweep/table.md (table_trainN.md): Δ of each
point against the general model beside its held-out MLM, start and end.
With "arms" (MODEL roberta; #66 point 4; experiments/continuing_arms.json): the general model
continued once per arm of ARMS at the CONTINUE_* recipe into RUNS/TASK/MODEL/arms/ARM/ (the
row's own continued/ is today's recipe, static15_poly; train-time arms read data_train_time/,
one unmasked pass with the same held-out documents, and are scored on the row's static
held-out data too, in ARM/static_eval/), one finetune.compare of today's recipe against every
arm continued so far (arms/compare/ or arms/compare_trainN/; finished fine-tunings collected)
and arms/table.md (table_trainN.md), which ends with #66's decision once the three tasks'
arms comparisons exist:
{arm_lines}

Settings (environment variables) [defaults]:
  GENERAL_MODELS     folder of make_general_models.sh   [{values['GENERAL_MODELS']}]
  RUNS               output folder                      [{values['RUNS']}]
  SEEDS              fine-tuning seeds (3+ for a verdict) [{values['SEEDS']}]
  CONTINUE_LEARNING_RATE  AdamW peak rate, bias-corrected [{values['CONTINUE_LEARNING_RATE']}]
  CONTINUE_STEPS     continued-pretraining updates      [{values['CONTINUE_STEPS']}]
  CONTINUE_BATCH_SIZE  sequences per update             [{values['CONTINUE_BATCH_SIZE']}]
  CONTINUE_SEED      pretraining seed                   [{values['CONTINUE_SEED']}]
  SWEEP_LEARNING_RATES  the sweep's peak rates          [{values['SWEEP_LEARNING_RATES']}]
  SWEEP_STEPS        the sweep's step counts            [{values['SWEEP_STEPS']}]
  SWEEP_POINTS       instead of the grid: comma-separated RATExSTEPS points, e.g.
                     2e-5x500,1e-4x500,5e-4x500,1e-4x1000   [{values['SWEEP_POINTS']}]
  FINETUNE_MAX_TRAIN_EXAMPLES  fine-tune on the first N training examples instead of the
                     task's budget (above), e.g. 40000 on LCQMC when the general row stays
                     near chance; the dev interval scales with N  [the task's]
  RANDOM_INIT        1: fine-tune random init too (scale); 0: leave it out [{values['RANDOM_INIT']}]
  REUSE_FROM         comma-separated finetune.compare output folders whose finished runs
                     of the same model, vocab, settings and seed are collected, not
                     retrained (e.g. lcqmc_experiment.sh's ROW/compare: its random init) [{values['REUSE_FROM']}]
  ARMS               "arms": comma-separated arm names, a session's share (the compare
                     takes every arm continued so far)  [every arm]
  MAX_SEQ_LENGTH     pretraining data length            [{values['MAX_SEQ_LENGTH']}]
  MAX_PREDICTIONS    masked positions per sequence      [{values['MAX_PREDICTIONS']}]
  DUPE_FACTOR        masking passes over the task text  [{values['DUPE_FACTOR']}]
  EVAL_SHARE         documents held out for eval        [{values['EVAL_SHARE']}]
  LCQMC_DIR, CHNSENTICORP_DIR, MSRA_DIR  the tasks' data [../shared/data/...]
  PYTHON             interpreter                        [.venv/bin/python, else python3]"""


def make_dev_split(source, target, every):
    """target/{train,dev,test}.txt from source/{train,test}.txt: every `every`-th training
    sentence (blank-line separated) becomes dev."""
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(source, "train.txt"), encoding="utf-8") as f:
        text = f.read()
    sentences = [sentence for sentence in text.split("\n\n") if sentence.strip()]
    for name, keep in (("dev", lambda i: i % every == every - 1),
                       ("train", lambda i: i % every != every - 1)):
        with open(os.path.join(target, f"{name}.txt"), "w", encoding="utf-8") as out:
            out.write("\n\n".join(s for i, s in enumerate(sentences) if keep(i)) + "\n")
    with open(os.path.join(source, "test.txt"), encoding="utf-8") as f:
        test = f.read()
    with open(os.path.join(target, "test.txt"), "w", encoding="utf-8") as out:
        out.write(test)


class ContinuedRow:
    """TASK/MODEL in RUNS: its text, data, continued runs and comparisons."""

    def __init__(self, run, values, task_name, model_name):
        self.run, self.values, self.task_name = run, values, task_name
        models = {model["continued_as"]: (name, model)
                  for name, model in general_models.models().items()}
        if model_name not in models:
            raise Refusal(f"unknown MODEL '{model_name}': choose {_choices(list(models))}")
        general_name, self.model = models[model_name]
        self.general = f"{values['GENERAL_MODELS']}/{general_name}"
        if not os.path.isfile(f"{self.general}/released/vocab.txt"):
            raise Refusal(f"no general model at {self.general}/released: run "
                          f"MODELS={general_name} bash scripts/make_general_models.sh first")
        self.row = f"{values['RUNS']}/{task_name}/{model_name}"
        self.name = f"{task_name}/{model_name}"
        if not run.dry_run:
            os.makedirs(self.row, exist_ok=True)
        all_tasks = tasks()
        if task_name not in all_tasks:
            raise Refusal(f"unknown TASK '{task_name}': choose {_choices(list(all_tasks))}")
        self.task = all_tasks[task_name]
        self.data_dir = self._data_dir()
        self.examples = (values["FINETUNE_MAX_TRAIN_EXAMPLES"]
                         or str(self.task["max_train_examples"]))
        # Another budget than the task's has its own comparison, so that the task's finished
        # fine-tunings are never retrained in place.
        own_budget = self.examples == str(self.task["max_train_examples"])
        self.comparison_name = "compare" if own_budget else f"compare_train{self.examples}"
        self.table_name = "table.md" if own_budget else f"table_train{self.examples}.md"

    def _data_dir(self):
        task, values = self.task, self.values
        source = setting(task["data_setting"], f"{SHARED_DATA}/{task['shared_data']}")
        if not task["dev_every"]:
            return source
        target = f"{values['RUNS']}/{self.task_name}_split"
        if not self.run.dry_run and not os.path.isfile(f"{target}/test.txt"):
            make_dev_split(source, target, task["dev_every"])
        return target

    def stage(self, message):
        print(f"== [{clock()}] {self.name}: {message}", flush=True)

    def finetune_flags(self):
        """The task's fine-tuning flags at this run's budget (dev evaluated as often per run)."""
        task, examples = self.task, int(self.examples)
        eval_every = max(1, (task["eval_every_steps"] * examples + task["max_train_examples"] // 2)
                         // task["max_train_examples"])
        return [flag.format(max_seq_length=self.values["MAX_SEQ_LENGTH"])
                for flag in task["finetune_flags"]] + [
            f"--max_train_examples={self.examples}", f"--eval_every_steps={eval_every}"]

    def text_and_data(self):
        """RUNS/TASK/MODEL/docs.txt and data/ (EVAL_SHARE held out in data/eval/), unless made."""
        values, run, docs = self.values, self.run, f"{self.row}/docs.txt"
        if not os.path.isfile(docs):
            self.stage("the task's training text, labels dropped")
            module, *flags = self.task["text"]
            if self.model["mode"] == "albert":
                flags += self.task["sentence_order_text"]
            run.run(run.tool(module, *(flag.format(data_dir=self.data_dir, docs=docs)
                                       for flag in flags)))
        self.make_data(f"{self.row}/data", f"pretraining data with the general model's vocab "
                       f"({values['EVAL_SHARE']} held out)",
                       f"--max_predictions_per_seq={values['MAX_PREDICTIONS']}",
                       f"--dupe_factor={values['DUPE_FACTOR']}")

    def make_data(self, folder, what, *masking_flags):
        """folder/task.tfrecord from docs.txt with `masking_flags`, EVAL_SHARE of the documents
        held out in folder/eval/ (the same ones for any masking: the split follows each
        document's text and CONTINUE_SEED), unless made."""
        values, run = self.values, self.run
        if os.path.isfile(f"{folder}/eval/task.tfrecord.meta.json"):
            return
        self.stage(what)
        run.run(run.tool(
            "data_gen.create_pretraining_data", f"--input_file={self.row}/docs.txt",
            f"--output_file={folder}/task.tfrecord",
            f"--vocab_file={self.general}/released/vocab.txt", f"--mode={self.model['mode']}",
            f"--max_seq_length={values['MAX_SEQ_LENGTH']}", *masking_flags,
            f"--eval_share={values['EVAL_SHARE']}", f"--random_seed={values['CONTINUE_SEED']}"))

    def recipe(self, rate, steps, **more):
        return stage_folders.recipe_json(rate, steps, self.values["CONTINUE_BATCH_SIZE"],
                                         self.values["CONTINUE_SEED"], **more)

    def eval_flags(self, data):
        """run_pretraining's eval flags on `data`'s held-out records; on the row's own (static)
        data also the general model's held-out general text (a run may not mix static
        records with train-time ones)."""
        general = ([f"--extra_eval_input_file=general={self.general}/data/eval/general.tfrecord"]
                   if data == f"{self.row}/data" else [])
        return [f"--eval_input_file={data}/eval/task.tfrecord", *general]

    def continue_general(self, out, rate, steps, data=None, flags=(), recipe=None):
        """The general model continued at `rate` for `steps` into `out` on `data` (default: the
        row's data/) with run_pretraining `flags` added, unless a finished run of `recipe`
        (default: rate, steps and CONTINUE_*) is there; another recipe's folder is refused."""
        values, run = self.values, self.run
        data, recipe = data or f"{self.row}/data", recipe or self.recipe(rate, steps)
        what = f"{steps} steps at {rate}" + (" with " + " ".join(flags) if flags else "")
        if stage_folders.finished_recipe(out, recipe):
            self.stage(f"continued {what}: finished in {out}")
            return
        stage_folders.claim_for_recipe(out, recipe, run.dry_run)
        self.stage(f"continuing from {self.general}/released: {what} into {out}")
        run.run(run.tool(
            "pretrain.run_pretraining", f"--init_checkpoint={self.general}/released",
            f"--input_file={data}/task.tfrecord", *self.eval_flags(data),
            f"--output_dir={out}", "--do_train", "--do_eval", "--optimizer=adamw",
            "--adam_bias_correction", f"--learning_rate={rate}", f"--num_train_steps={steps}",
            f"--num_warmup_steps={int(steps) // 10}",
            f"--train_batch_size={values['CONTINUE_BATCH_SIZE']}",
            f"--save_checkpoints_steps={steps}", *flags, *self.eval_settings()))
        run.run(run.tool("pretrain.training.learning_check",
                         f"--eval_results={out}/eval_results.txt"))

    def eval_settings(self):
        """The evals' batches: the same for every run of the row."""
        return ["--max_eval_steps=1000", f"--random_seed={self.values['CONTINUE_SEED']}",
                "--strategy=cpu"]

    def compare_reusing_row(self, output_dir, run_flags, *more):
        """finetune.compare into `output_dir`, collecting finished fine-tunings from the row's
        comparison of this budget and the `more` comparison folders that exist, then
        REUSE_FROM's."""
        reuse = [folder for folder in (f"{self.row}/{self.comparison_name}", *more)
                 if stage_folders.is_comparison(folder)]
        self.compare(output_dir, ",".join(reuse + split_list(self.values["REUSE_FROM"])),
                     run_flags)

    def compare(self, output_dir, reuse, run_flags):
        values = self.values
        self.run.run(self.run.tool(
            "finetune.compare", f"--data_dir={self.data_dir}", f"--output_dir={output_dir}",
            f"--seeds={values['SEEDS']}", *([f"--reuse_from={reuse}"] if reuse else []),
            *run_flags, *self.finetune_flags()))

    def row_stages(self):
        """The continued run, then the general model (the baseline: the Δ of "general +
        continued" answers the question) against it, random init for scale."""
        values, row = self.values, self.row
        self.continue_general(f"{row}/continued", values["CONTINUE_LEARNING_RATE"],
                              values["CONTINUE_STEPS"])
        runs = {"general": f"{self.general}/released", "general + continued": f"{row}/continued"}
        if values["RANDOM_INIT"] != "0":
            runs["random init"] = ""
        self.stage(f"fine-tuning: {', '.join(runs)} on {self.examples} examples, seeds "
                   f"{values['SEEDS']}")
        self.compare(f"{row}/{self.comparison_name}", values["REUSE_FROM"],
                     [f"--run={label}={start}" for label, start in runs.items()])
        self.stage("table of every finished row")
        self.run.run(self.run.tool("experiments.continued_table", f"--runs_dir={values['RUNS']}",
                                   f"--output_file={values['RUNS']}/table.md"))


def checked_settings(run, values, stage, points):
    """Refuses a bad RANDOM_INIT, REUSE_FROM, third argument, sweep point or budget."""
    if values["RANDOM_INIT"] not in ("0", "1"):
        raise Refusal(f"RANDOM_INIT={values['RANDOM_INIT']}: give 1 (fine-tune random "
                      "initialisation too) or 0 (leave it out)")
    if not run.dry_run:  # checked before the continued pretraining, not by compare after it
        for folder in split_list(values["REUSE_FROM"]):
            if not stage_folders.is_comparison(folder):
                raise Refusal(f"REUSE_FROM: {folder} has no runs/ folder or results.json (give "
                              "the output folder of an earlier finetune.compare, e.g. "
                              "RUNS/roberta/compare of lcqmc_experiment.sh)")
    if stage not in ("row", "sweep", "arms"):
        raise Refusal(f"unknown third argument '{stage}': give sweep or arms, or nothing for "
                      "the row")
    continued_sweep.check_points(points)
    examples = values["FINETUNE_MAX_TRAIN_EXAMPLES"]
    if examples and not matches(r"[1-9][0-9]*", examples):
        raise Refusal(f"FINETUNE_MAX_TRAIN_EXAMPLES={examples}: give a number of training "
                      "examples (e.g. 40000), or leave it empty for the task's budget")


def _experiment(run, argv):
    positional = run.positional(argv)
    if len(positional) not in (2, 3):
        run.usage_error()
    task, model = positional[:2]
    stage = positional[2] if len(positional) == 3 else "row"
    values = read_settings()
    points = continued_sweep.points(values) if stage == "sweep" else []
    checked_settings(run, values, stage, points)
    arms = continued_arms.chosen(values, model) if stage == "arms" else []
    row = ContinuedRow(run, values, task, model)
    row.text_and_data()
    if stage == "sweep":
        continued_sweep.sweep_stages(row, points)
    elif stage == "arms":
        continued_arms.arms_stages(row, arms)
    else:
        row.row_stages()


def main(argv=None):
    run = ScriptRun(SCRIPT, lambda: usage(read_settings()))
    run.main(lambda args: _experiment(run, args), argv)


if __name__ == "__main__":
    main()
