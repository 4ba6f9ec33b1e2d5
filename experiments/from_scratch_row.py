"""One row of the reference experiment, from scratch, end to end (scripts/lcqmc_experiment.sh
execs it): LCQMC's train text as documents, pretraining data for the row's recipe
(recipes/RECIPE.json), pretraining, one finetune.compare of random initialisation against
the pretrained model over every seed, and the table of every finished row.

    python -m experiments.from_scratch_row [--dry_run] RECIPE

Settings are environment variables, by the names --help lists (common.script_runs); finished stages
are reused and changed ones refused by stage_folders' rules.
"""
import os
import re
import sys

from common.model_configs import shipped_path
from experiments import recipe_files, stage_folders
from experiments.recipe_files import PRETRAINING_FIELDS
from common.script_runs import (REPO_ROOT, SHARED_DATA, Refusal, ScriptRun, caller_path,
                                clock, matches, setting)

SCRIPT = "lcqmc_experiment.sh"
# Settings with a default per recipe: PRETRAIN_STEPS first (experiment_settings.txt writes
# it in its own, older, place).
RECIPE_SETTINGS = [f"PRETRAIN_{field.upper()}" for field in PRETRAINING_FIELDS]
DEFAULTS = {
    "LCQMC_DIR": os.path.join(SHARED_DATA, "lcqmc"),
    "VOCAB": os.path.join(SHARED_DATA, "vocab", "bert_chinese_vocab.txt"),
    "RUNS": os.path.join(REPO_ROOT, "runs", "lcqmc_experiment"),
    "SEEDS": "1,2,3", "DUPE_FACTOR": "5", "MAX_SEQ_LENGTH": "64", "MAX_PREDICTIONS": "10",
    "PRETRAIN_BATCH_SIZE": "64", "PRETRAIN_SEED": "1", "FINETUNE_MAX_TRAIN_EXAMPLES": "16000",
    "FINETUNE_EPOCHS": "1", "FINETUNE_LEARNING_RATE": "1e-4", "FINETUNE_EVAL_EVERY": "250",
    "SIMILAR_WORDS": "", "MODEL_CONFIG": "", "VECTORS": "", "FINETUNE_NOT_LEARNED": "0",
}


def read_settings():
    """{NAME: value} of every setting (the recipe's ones '' when unset)."""
    values = {name: setting(name, default) for name, default in DEFAULTS.items()}
    values.update({name: setting(name) for name in RECIPE_SETTINGS})
    return values


def usage(values):
    def per_recipe(name):
        return values[name] or "per recipe, below"
    recipes = "\n".join(recipe_files.usage_lines())
    return f"""Usage: bash scripts/lcqmc_experiment.sh [--dry_run] RECIPE

Runs one row of the reference experiment (docs/experiments.md):
  1. LCQMC train text as documents           RUNS/docs.txt (a paraphrase pair is one document);
     albert: RUNS/docs_sentences.txt (every question alone: two paraphrases have no order
     for sentence-order prediction to learn)
  2. pretraining data for RECIPE              RUNS/RECIPE/data/
  3. pretraining                              RUNS/RECIPE/pretrain/
  4. fine-tuning from random initialisation   RUNS/RECIPE/compare/  (one finetune.compare
     and from the pretrained model, per seed    over SEEDS: results.md, results.json)
  5. the table of every finished row          RUNS/table.md
Finished stages are reused (pretraining resumes from its last checkpoint, or is skipped once
evaluated at PRETRAIN_STEPS; compare collects finished fine-tuning runs whose settings and
starting point are unchanged, and the random-init runs of another row of RUNS with the same
model). A stage whose recorded inputs or settings differ from this run's stops the script:
move its folder away.

RECIPE (experiments/recipes/RECIPE.json: the row's label, model, data and pretraining
flags and defaults, and why; a new row is a new file):
{recipes}

Settings (environment variables) [defaults]:
  LCQMC_DIR          train.txt, dev.txt, test.txt        [{values['LCQMC_DIR']}]
  VOCAB              vocab file                          [{values['VOCAB']}]
  RUNS               output folder                       [{values['RUNS']}]
  SEEDS              fine-tuning seeds, comma-separated (3+ for a verdict) [{values['SEEDS']}]
  DUPE_FACTOR        masking passes over the text        [{values['DUPE_FACTOR']}]
  MAX_SEQ_LENGTH     tokens per sequence, pretraining data and fine-tuning [{values['MAX_SEQ_LENGTH']}]
  MAX_PREDICTIONS    masked positions per sequence       [{values['MAX_PREDICTIONS']}]
  PRETRAIN_STEPS     pretraining updates                 [{per_recipe('PRETRAIN_STEPS')}]
  PRETRAIN_WARMUP_STEPS   pretraining warmup updates     [{per_recipe('PRETRAIN_WARMUP_STEPS')}]
  PRETRAIN_BATCH_SIZE     pretraining batch              [{values['PRETRAIN_BATCH_SIZE']}]
  PRETRAIN_LEARNING_RATE  pretraining peak learning rate [{per_recipe('PRETRAIN_LEARNING_RATE')}]
  PRETRAIN_OPTIMIZER      pretraining optimizer, adamw or lamb [{per_recipe('PRETRAIN_OPTIMIZER')}]
  PRETRAIN_BIAS_CORRECTION  1: Adam bias correction in pretraining, 0: none
                          [{per_recipe('PRETRAIN_BIAS_CORRECTION')}]
  PRETRAIN_SEED      pretraining seed (graph and input order) [{values['PRETRAIN_SEED']}]
  FINETUNE_MAX_TRAIN_EXAMPLES  first N train pairs       [{values['FINETUNE_MAX_TRAIN_EXAMPLES']}]
  FINETUNE_EPOCHS    fine-tuning epochs                  [{values['FINETUNE_EPOCHS']}]
  FINETUNE_LEARNING_RATE  fine-tuning peak learning rate [{values['FINETUNE_LEARNING_RATE']}]
  FINETUNE_EVAL_EVERY     dev evaluation interval (steps) [{values['FINETUNE_EVAL_EVERY']}]
  MODEL_CONFIG       model config JSON instead of the recipe's (the table's model
                     column names what was trained) [{values['MODEL_CONFIG'] or 'per recipe, lcqmc_small_*'}]
  SIMILAR_WORDS      macbert: similar-words TSV          [{values['SIMILAR_WORDS'] or 'RUNS/similar_words.tsv'}]
  VECTORS            macbert: word vectors to build it from (word2vec text format;
                     scripts/train_word_vectors.sh makes them from RUNS/docs.txt)
  FINETUNE_NOT_LEARNED=1  fine-tune even a checkpoint whose MLM has not left its unigram
                     plateau (pretrain.training.learning_check; the row is then marked "not learned")
  PYTHON             interpreter                         [.venv/bin/python, else python3]
  DRY_RUN=1          (or --dry_run) print the commands of every stage, run nothing"""


def checked_settings(values, recipe):
    """`values` with the recipe's defaults filled in and the seeds without spaces; Refusal
    naming the first bad setting."""
    if not matches(r"[0-9]+( *, *[0-9]+)*", values["SEEDS"]):
        raise Refusal(f"SEEDS must be integers separated by commas, not '{values['SEEDS']}'")
    seeds = values["SEEDS"].replace(" ", "")
    numbers = [int(seed) for seed in seeds.split(",")]
    if len(set(numbers)) != len(numbers):
        raise Refusal(f"SEEDS={seeds}: give each seed once")
    values = dict(values, SEEDS=seeds)
    for name, field in zip(RECIPE_SETTINGS, PRETRAINING_FIELDS):
        values[name] = values[name] or str(recipe.pretraining[field])
    if values["PRETRAIN_OPTIMIZER"] not in ("adamw", "lamb"):
        raise Refusal("PRETRAIN_OPTIMIZER must be adamw or lamb, not "
                      f"'{values['PRETRAIN_OPTIMIZER']}'")
    if values["PRETRAIN_BIAS_CORRECTION"] not in ("0", "1"):
        raise Refusal("PRETRAIN_BIAS_CORRECTION must be 0 (no Adam bias correction) or 1, not "
                      f"'{values['PRETRAIN_BIAS_CORRECTION']}'")
    if not matches(r"[0-9]+", values["PRETRAIN_SEED"]):
        raise Refusal("PRETRAIN_SEED must be a non-negative integer, not "
                      f"'{values['PRETRAIN_SEED']}'")
    return values


def checked_inputs(values, dry_run):
    """`values` with the inputs checked and every path absolute (from the caller's folder)."""
    for split in ("train", "dev", "test"):
        if not os.path.isfile(os.path.join(values["LCQMC_DIR"], f"{split}.txt")):
            raise Refusal(f"no {split}.txt in LCQMC_DIR={values['LCQMC_DIR']} (see bash "
                          "scripts/lcqmc_finetune.sh --help for the format)")
    if not os.path.isfile(values["VOCAB"]):
        raise Refusal(f"VOCAB={values['VOCAB']} not found")
    if values["MODEL_CONFIG"] and not os.path.isfile(values["MODEL_CONFIG"]):
        raise Refusal(f"MODEL_CONFIG={values['MODEL_CONFIG']} not found")
    values = dict(values, **{name: caller_path(values[name])
                             for name in ("MODEL_CONFIG", "LCQMC_DIR", "VOCAB", "RUNS")})
    if not dry_run:
        os.makedirs(values["RUNS"], exist_ok=True)
        values["RUNS"] = os.path.normpath(values["RUNS"])
    return values


class FromScratchRow:
    """The stages of one row (RECIPE) in RUNS."""

    def __init__(self, run, recipe, values):
        self.run, self.recipe, self.values = run, recipe, values
        self.row = f"{values['RUNS']}/{recipe.name}"

    def stage(self, message):
        if self.run.dry_run:
            print(f"# {self.recipe.name}: {message}", flush=True)
        else:
            print(f"== [{clock()}] {self.recipe.name}: {message}", flush=True)

    def documents(self, docs, sentences):
        """RUNS/docs.txt (or docs_sentences.txt: one question per document), made if absent."""
        values, run = self.values, self.run
        if not os.path.isfile(docs):
            self.stage(f"documents from {values['LCQMC_DIR']}/train.txt")
            run.run(run.tool("data_gen.tools.lcqmc_to_docs", f"--lcqmc_dir={values['LCQMC_DIR']}",
                             f"--output_file={docs}",
                             *(["--noparaphrase_documents"] if sentences else [])))

    def similar_words_flags(self):
        """MacBERT's --similar_words_file, built from VECTORS when the file is absent."""
        values, run = self.values, self.run
        if not self.recipe.similar_words:
            return []
        similar = values["SIMILAR_WORDS"] or f"{values['RUNS']}/similar_words.tsv"
        if not os.path.isfile(similar):
            if not (values["VECTORS"] and os.path.isfile(values["VECTORS"])):
                raise Refusal(f"{self.recipe.name} needs SIMILAR_WORDS=FILE or VECTORS=FILE (word "
                              "vectors, word2vec text format); bash scripts/train_word_vectors.sh "
                              f"trains them on {values['RUNS']}/docs.txt")
            self.stage(f"similar words from {values['VECTORS']}")
            run.run(run.tool("data_gen.tools.build_similar_words",
                             f"--vectors={values['VECTORS']}", f"--output_file={similar}",
                             f"--vocab_file={values['VOCAB']}"))
        return [f"--similar_words_file={similar}"]

    def data(self, docs, data_flags):
        """RUNS/RECIPE/data/, made unless its last shard's sidecar is there (from `docs`)."""
        values, row = self.values, self.row
        sidecar = f"{row}/data/lcqmc-00003-of-00004.meta.json"
        if os.path.isfile(sidecar):
            if not stage_folders.made_from(sidecar, docs):
                raise Refusal(f"{row}/data was made from other documents than {docs} (its "
                              f"sidecar: {sidecar}); move {row} away to rebuild this row")
            return
        self.stage("pretraining data")
        self.run.run(self.run.tool(
            "data_gen.create_pretraining_data", f"--input_file={docs}",
            f"--output_file={row}/data/lcqmc", "--num_output_shards=4",
            f"--vocab_file={values['VOCAB']}", f"--max_seq_length={values['MAX_SEQ_LENGTH']}",
            f"--max_predictions_per_seq={values['MAX_PREDICTIONS']}",
            f"--dupe_factor={values['DUPE_FACTOR']}", "--noprogress", *data_flags))

    def pretraining(self, config, docs):
        """RUNS/RECIPE/pretrain/: trained, resumed, or reused when evaluated at its steps."""
        values, row, run = self.values, self.row, self.run
        self.stage(f"pretraining, {values['PRETRAIN_STEPS']} steps of "
                   f"{values['PRETRAIN_BATCH_SIZE']} ({values['PRETRAIN_OPTIMIZER']}, seed "
                   f"{values['PRETRAIN_SEED']})")
        bias = ("--adam_bias_correction" if values["PRETRAIN_BIAS_CORRECTION"] == "1"
                else "--noadam_bias_correction")
        command = run.tool(
            "pretrain.run_pretraining", f"--bert_config_file={config}",
            f"--input_file={row}/data/lcqmc-*", f"--output_dir={row}/pretrain", "--do_train",
            "--do_eval", f"--train_batch_size={values['PRETRAIN_BATCH_SIZE']}",
            "--eval_batch_size=64", "--max_eval_steps=20",
            f"--learning_rate={values['PRETRAIN_LEARNING_RATE']}",
            f"--num_train_steps={values['PRETRAIN_STEPS']}",
            f"--num_warmup_steps={values['PRETRAIN_WARMUP_STEPS']}",
            "--save_checkpoints_steps=500", f"--optimizer={values['PRETRAIN_OPTIMIZER']}",
            f"--random_seed={values['PRETRAIN_SEED']}", "--strategy=cpu", bias,
            *self.recipe.pretrain_flags)
        if run.dry_run:
            run.run(command)
            return
        # The settings the checkpoints were trained with; a rerun with others would resume them.
        settings = {"CONFIG": config, "DOCS": docs,
                    **{name: values[name] for name in ("PRETRAIN_STEPS", "PRETRAIN_BATCH_SIZE",
                                                       "PRETRAIN_SEED")},
                    **{name: values[name] for name in RECIPE_SETTINGS[1:]}}
        pretrain_dir = f"{row}/pretrain"
        recorded = stage_folders.check_pretraining_settings(pretrain_dir, settings, row)
        if not recorded and stage_folders.has_checkpoints(pretrain_dir):
            run.warn(f"{pretrain_dir} has no {stage_folders.SETTINGS_FILE} (an older run): "
                     "resuming it without checking that it was trained with these settings")
        if recorded and stage_folders.evaluated_at(pretrain_dir, values["PRETRAIN_STEPS"]):
            print("pretraining finished earlier with these settings "
                  f"({pretrain_dir}/eval_results.txt)", flush=True)
            return
        os.makedirs(pretrain_dir, exist_ok=True)
        stage_folders.record_pretraining_settings(pretrain_dir, settings)
        run.run_logged(command, f"{row}/pretrain.log", "pretraining")
        with open(f"{row}/pretrain.log", encoding="utf-8", errors="replace") as log:
            steps = [line for line in log if re.search(r"\] step [0-9]+:", line)]
        sys.stdout.write("".join(steps[-2:]))

    def learning_check(self):
        """Refuses to fine-tune a checkpoint still on the unigram plateau (learning_check exits
        3), unless FINETUNE_NOT_LEARNED=1: its fine-tuning would not be a result."""
        command = self.run.tool("pretrain.training.learning_check",
                                f"--eval_results={self.row}/pretrain/eval_results.txt")
        if self.run.dry_run:
            self.run.run(command)
            return
        status = self.run.status(command)
        if status == 3 and self.values["FINETUNE_NOT_LEARNED"] != "1":
            raise Refusal("the pretrained checkpoint has not learned (above); fine-tuning from it "
                          "would not be a result. Retrain (other PRETRAIN_ settings or more "
                          f"PRETRAIN_STEPS; move {self.row}/pretrain away first), or set "
                          "FINETUNE_NOT_LEARNED=1 to fine-tune it anyway")
        if status not in (0, 3):
            raise Refusal("could not check the pretraining eval "
                          f"{self.row}/pretrain/eval_results.txt (above)")

    def comparison(self):
        """One finetune.compare of random init and the pretrained model over every seed; the
        random-init runs of other rows of the same model are collected, not retrained."""
        values, row, run = self.values, self.row, self.run
        self.stage("fine-tuning from random initialisation and after pretraining, seeds "
                   f"{values['SEEDS']}")
        command = run.tool(
            "finetune.compare", "--task=pair", f"--data_dir={values['LCQMC_DIR']}",
            f"--vocab_file={values['VOCAB']}", f"--max_seq_length={values['MAX_SEQ_LENGTH']}",
            f"--max_train_examples={values['FINETUNE_MAX_TRAIN_EXAMPLES']}",
            f"--num_train_epochs={values['FINETUNE_EPOCHS']}",
            f"--learning_rate={values['FINETUNE_LEARNING_RATE']}",
            f"--eval_every_steps={values['FINETUNE_EVAL_EVERY']}", "--strategy=cpu",
            f"--output_dir={row}/compare", f"--seeds={values['SEEDS']}", "--run=random init=",
            f"--run={self.recipe.name}={row}/pretrain")
        others = stage_folders.other_comparisons(values["RUNS"], f"{row}/compare")
        if others:
            command.append("--reuse_from=" + ",".join(others))
        if run.dry_run:
            run.run(command)
            return
        run.run_logged(command, f"{row}/compare.log", "fine-tuning")
        with open(f"{row}/compare/results.md", encoding="utf-8") as results:
            sys.stdout.write("".join(line for line in results if line.startswith("|")))

    def table(self):
        self.stage("table")
        runs = self.values["RUNS"]
        self.run.run(self.run.tool("experiments.from_scratch_table", f"--runs_dir={runs}",
                                   f"--output_file={runs}/table.md"))

    def stages(self):
        sentences = recipe_files.DOCUMENTS[self.recipe.documents] == "sentences"
        docs = f"{self.values['RUNS']}/docs{'_sentences' if sentences else ''}.txt"
        data_flags = [*self.recipe.data_flags, *self.similar_words_flags()]
        config = self.values["MODEL_CONFIG"] or shipped_path(self.recipe.model_config)
        if not self.run.dry_run:
            os.makedirs(f"{self.row}/data", exist_ok=True)
        self.documents(docs, sentences)
        self.data(docs, data_flags)
        self.pretraining(config, docs)
        self.learning_check()
        self.comparison()
        self.table()


def _row(run, argv):
    names = [recipe.name for recipe in recipe_files.all_recipes()]
    positional = run.positional(argv)
    if len(positional) != 1:
        run.usage_error()
    if positional[0] not in names:
        raise Refusal(f"unknown RECIPE '{positional[0]}': choose one of {' '.join(names)}")
    recipe = recipe_files.get_recipe(positional[0])
    values = checked_inputs(checked_settings(read_settings(), recipe), run.dry_run)
    FromScratchRow(run, recipe, values).stages()


def main(argv=None):
    run = ScriptRun(SCRIPT, lambda: usage(read_settings()))
    run.main(lambda args: _row(run, args), argv)


if __name__ == "__main__":
    main()
