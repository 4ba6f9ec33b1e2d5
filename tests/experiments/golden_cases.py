"""The experiment runners' dry runs (and refusals) whose output is pinned in golden/NAME.txt.

Each case runs one entry script (scripts/lcqmc_experiment.sh, continued_experiment.sh,
make_general_models.sh, demo.sh) in a fixture folder FIX holding small stand-ins of the
inputs (LCQMC files, a vocab, word vectors, general models), with some settings, and
sometimes a RUNS folder in which earlier stages look finished. The golden file holds its
exit code, stdout and stderr with the machine's paths as placeholders
(tests.testutil.script_goldens). Cases named *_shared use the scripts' default
../shared/data paths.

    python -m tests.experiments.golden_cases [NAME ...]   # (re)writes golden/NAME.txt
"""
import json
import pathlib
import sys

from tests.testutil import script_goldens

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent / "golden"
RECIPES = ("roberta", "albert", "span", "macbert", "electra", "xlnet")


def make_fixture(fix):
    """The inputs every case may name, under `fix`."""
    (fix / "lcqmc").mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        (fix / "lcqmc" / f"{split}.txt").write_text("问题\t问题\t1\n", encoding="utf-8")
    for name in ("vocab.txt", "vectors.txt", "similar.tsv", "corpus.txt", "mine.json"):
        (fix / name).write_text("x\n", encoding="utf-8")
    for model in ("bert", "albert"):
        (fix / "general_models" / model / "released").mkdir(parents=True, exist_ok=True)
        (fix / "general_models" / model / "released" / "vocab.txt").write_text("x\n",
                                                                             encoding="utf-8")
    (fix / "empty").mkdir(exist_ok=True)


def _touch(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def finished_rows(fix):
    """RUNS (FIX/runs) of lcqmc_experiment.sh: docs.txt written, span's data made from it,
    roberta's and albert's comparisons run (a later row collects their random init)."""
    runs = fix / "runs"
    _touch(runs / "docs.txt", "一句话\n")
    _touch(runs / "span" / "data" / "lcqmc-00003-of-00004.meta.json",
           json.dumps({"flags": {"input_file": str(runs / "docs.txt")}}))
    for row in ("roberta", "albert"):
        (runs / row / "compare" / "runs").mkdir(parents=True)


def albert_data_from_pairs(fix):
    """ALBERT's data made from docs.txt (as before its documents became single questions)."""
    runs = fix / "runs"
    _touch(runs / "docs_sentences.txt", "一句话\n")
    _touch(runs / "albert" / "data" / "lcqmc-00003-of-00004.meta.json",
           json.dumps({"flags": {"input_file": str(runs / "docs.txt")}}))


def _recipe(rate, steps, batch=64, seed=1):
    return (f'{{"learning_rate": "{rate}", "steps": {steps}, "batch_size": {batch}, '
            f'"seed": {seed}}}\n')


def continued_row_done(fix):
    """RUNS (FIX/runs) of continued_experiment.sh: lcqmc/roberta's text, data, continued run
    (1e-4 x 1000, finished) and comparison done."""
    row = fix / "runs" / "lcqmc" / "roberta"
    _touch(row / "docs.txt", "一句话\n")
    _touch(row / "data" / "eval" / "task.tfrecord.meta.json", "{}")
    _touch(row / "continued" / "eval_results.txt", "global_step = 1000\n")
    _touch(row / "continued" / "continue_recipe.json", _recipe("1e-4", 1000))
    _touch(row / "compare" / "results.json", "{}")
    _touch(row / "sweep" / "lr2e-5_steps500" / "continue_recipe.json", _recipe("2e-5", 500))


def _arm_recipe(data, flags):
    return _recipe("1e-4", 1000).rstrip("}\n") + (
        f', "data": "{data}", "flags": {json.dumps(flags)}}}\n')


def continued_arms_done(fix):
    """continued_row_done, and of lcqmc/roberta's arms: train-time data made, tt30_poly
    continued and scored on the static data, static15_wsd continued, tt15_poly killed before
    its eval, and the arms' comparison at 40,000 pairs begun."""
    continued_row_done(fix)
    row = fix / "runs" / "lcqmc" / "roberta"
    _touch(row / "data_train_time" / "eval" / "task.tfrecord.meta.json", "{}")
    for arm, data, flags in (
            ("tt30_poly", "train_time", ["--mlm_probability=0.3"]),
            ("static15_wsd", "static", ["--lr_scheduler_type=warmup_stable_decay",
                                        "--decay_type=cosine"])):
        _touch(row / "arms" / arm / "eval_results.txt", "global_step = 1000\n")
        _touch(row / "arms" / arm / "continue_recipe.json", _arm_recipe(data, flags))
    _touch(row / "arms" / "tt30_poly" / "static_eval" / "eval_results.txt", "global_step = 0\n")
    _touch(row / "arms" / "tt15_poly" / "continue_recipe.json",
           _arm_recipe("train_time", ["--mlm_probability=0.15"]))
    (row / "arms" / "compare_train40000" / "runs").mkdir(parents=True)


def continued_arm_other_recipe(fix):
    """lcqmc/roberta's tt30_poly folder holds a run of other flags (the arm was redefined)."""
    _touch(fix / "runs" / "lcqmc" / "roberta" / "arms" / "tt30_poly" / "continue_recipe.json",
           _arm_recipe("train_time", ["--mlm_probability=0.4"]))


def continued_other_recipe(fix):
    """lcqmc/albert continued with the former default, 500 steps (killed before its eval)."""
    _touch(fix / "runs" / "lcqmc" / "albert" / "continued" / "continue_recipe.json",
           _recipe("1e-4", 500))


def general_data_done(fix):
    """make_general_models.sh's bert data already made in FIX/general."""
    _touch(fix / "general" / "bert" / "data" / "eval" / "general.tfrecord.meta.json", "{}")


FROM_SCRATCH = {"LCQMC_DIR": "{FIX}/lcqmc", "VOCAB": "{FIX}/vocab.txt", "RUNS": "{FIX}/runs"}
CONTINUED = {"GENERAL_MODELS": "{FIX}/general_models"}
GENERAL = {"GENERAL_CORPUS": "{FIX}/corpus.txt", "VOCAB": "{FIX}/vocab.txt",
           "OUT": "{FIX}/general"}
FROM_SCRATCH_SETTINGS = dict(
    FROM_SCRATCH, SEEDS="3, 4", MODEL_CONFIG="mine.json", PRETRAIN_STEPS="40",
    PRETRAIN_OPTIMIZER="lamb", PRETRAIN_LEARNING_RATE="2e-3", PRETRAIN_BIAS_CORRECTION="0",
    PRETRAIN_WARMUP_STEPS="7", PRETRAIN_BATCH_SIZE="16", PRETRAIN_SEED="17", DUPE_FACTOR="2",
    MAX_SEQ_LENGTH="48", MAX_PREDICTIONS="6", FINETUNE_MAX_TRAIN_EXAMPLES="100",
    FINETUNE_EPOCHS="2", FINETUNE_LEARNING_RATE="3e-5", FINETUNE_EVAL_EVERY="10")
CONTINUED_SETTINGS = dict(
    CONTINUED, RUNS="{FIX}/runs", SEEDS="4,5", CONTINUE_LEARNING_RATE="5e-4",
    CONTINUE_STEPS="500", CONTINUE_BATCH_SIZE="32", CONTINUE_SEED="3", RANDOM_INIT="0",
    REUSE_FROM="{FIX}/a,{FIX}/b", FINETUNE_MAX_TRAIN_EXAMPLES="40000", MAX_SEQ_LENGTH="32",
    MAX_PREDICTIONS="5", DUPE_FACTOR="2", EVAL_SHARE="0.1", LCQMC_DIR="{FIX}/lcqmc",
    CHNSENTICORP_DIR="{FIX}/chnsenticorp", MSRA_DIR="{FIX}/msra")


def _cases():
    """{name: (script, args, settings, state function or None, requirement)}: a requirement
    "shared" needs ../shared/data (tests.testutil.script_goldens)."""
    cases = {
        "from_scratch_help": ("lcqmc_experiment.sh", ["--help"], {}, None, None),
        "continued_help": ("continued_experiment.sh", ["--help"], CONTINUED, None, None),
        "general_help": ("make_general_models.sh", ["--help"], {}, None, None),
        "demo_help": ("demo.sh", ["--help"], {}, None, None),
        "demo_refuses_argument": ("demo.sh", ["--dry_run", "fast"], {}, None, None),
        "demo": ("demo.sh", ["--dry_run"], {"DEMO_DIR": "{FIX}/demo"}, None, None),
        "demo_settings": ("demo.sh", [], {
            "DRY_RUN": "1", "DEMO_DIR": "demo", "PRETRAIN_STEPS": "30", "SEED": "7",
            "FINETUNE_EPOCHS": "1", "EVAL_EVERY": "5"}, None, None),
    }
    for recipe in RECIPES:
        cases[f"from_scratch_{recipe}_shared"] = (
            "lcqmc_experiment.sh", ["--dry_run", recipe], {}, None, "shared")
        settings = dict(FROM_SCRATCH, VECTORS="{FIX}/vectors.txt") if recipe == "macbert" \
            else FROM_SCRATCH
        cases[f"from_scratch_{recipe}"] = (
            "lcqmc_experiment.sh", ["--dry_run", recipe], settings, None, None)
    cases.update({
        "from_scratch_roberta_settings": ("lcqmc_experiment.sh", ["--dry_run", "roberta"],
                                          FROM_SCRATCH_SETTINGS, None, None),
        "from_scratch_albert_relative": ("lcqmc_experiment.sh", ["albert"], {
            "DRY_RUN": "1", "LCQMC_DIR": "lcqmc", "VOCAB": "vocab.txt", "RUNS": "runs",
            "PRETRAIN_OPTIMIZER": "adamw", "PRETRAIN_BIAS_CORRECTION": "1"}, None, None),
        "from_scratch_macbert_similar_words": (
            "lcqmc_experiment.sh", ["--dry_run", "macbert"],
            dict(FROM_SCRATCH, SIMILAR_WORDS="{FIX}/similar.tsv"), None, None),
        "from_scratch_span_finished_stages": ("lcqmc_experiment.sh", ["--dry_run", "span"],
                                              FROM_SCRATCH, finished_rows, None),
        "from_scratch_albert_other_documents": (
            "lcqmc_experiment.sh", ["--dry_run", "albert"], FROM_SCRATCH,
            albert_data_from_pairs, None),
    })
    refusals = {
        "unknown_recipe": (["--dry_run", "bogus"], {}),
        "no_recipe": (["--dry_run"], {}),
        "two_recipes": (["--dry_run", "roberta", "albert"], {}),
        "unknown_option": (["--dry_run", "--foo", "roberta"], {}),
        "seeds_format": (["--dry_run", "roberta"], {"SEEDS": "1;2"}),
        "seeds_twice": (["--dry_run", "roberta"], {"SEEDS": "1, 2,1"}),
        "optimizer": (["--dry_run", "albert"], {"PRETRAIN_OPTIMIZER": "sgd"}),
        "bias_correction": (["--dry_run", "albert"], {"PRETRAIN_BIAS_CORRECTION": "yes"}),
        "pretrain_seed": (["--dry_run", "albert"], {"PRETRAIN_SEED": "1.5"}),
        "model_config": (["--dry_run", "roberta"], {"MODEL_CONFIG": "nope.json"}),
        "lcqmc_dir": (["--dry_run", "roberta"], {"LCQMC_DIR": "{FIX}/empty"}),
        "vocab": (["--dry_run", "roberta"], {"VOCAB": "{FIX}/nope.txt"}),
        "macbert_without_vectors": (["--dry_run", "macbert"], {}),
    }
    for name, (args, settings) in refusals.items():
        cases[f"from_scratch_refuses_{name}"] = (
            "lcqmc_experiment.sh", args, dict(FROM_SCRATCH, **settings), None, None)

    for task in ("lcqmc", "chnsenticorp", "msra"):
        for model in ("roberta", "albert"):
            cases[f"continued_{task}_{model}"] = (
                "continued_experiment.sh", ["--dry_run", task, model], CONTINUED, None, None)
        cases[f"continued_{task}_settings"] = (
            "continued_experiment.sh", ["--dry_run", task, "albert"], CONTINUED_SETTINGS,
            None, None)
    def continued(args, settings, state=None):
        return ("continued_experiment.sh", ["--dry_run", *args], settings, state, None)
    sweep_after_row = dict(CONTINUED, RUNS="{FIX}/runs")
    cases.update({
        "continued_lcqmc_roberta_sweep": continued(["lcqmc", "roberta", "sweep"], CONTINUED),
        "continued_msra_albert_sweep_points": continued(["msra", "albert", "sweep"], dict(
            CONTINUED, SWEEP_POINTS="2e-5x500,1e-4x500,5e-4x500,1e-4x1000", SEEDS="1,2")),
        "continued_chnsenticorp_roberta_sweep_budget": continued(
            ["chnsenticorp", "roberta", "sweep"],
            dict(CONTINUED, FINETUNE_MAX_TRAIN_EXAMPLES="1000", SWEEP_LEARNING_RATES="1e-4",
                 SWEEP_STEPS="100,200", REUSE_FROM="{FIX}/a")),
        "continued_lcqmc_roberta_finished_row": continued(
            ["lcqmc", "roberta"], sweep_after_row, continued_row_done),
        "continued_lcqmc_roberta_sweep_after_row": continued(
            ["lcqmc", "roberta", "sweep"], dict(sweep_after_row, SWEEP_POINTS="1e-4x1000,5e-4x500"),
            continued_row_done),
        "continued_sweep_refuses_another_recipe": continued(
            ["lcqmc", "roberta", "sweep"],
            dict(sweep_after_row, SWEEP_POINTS="1e-4x1000,2e-5x500", CONTINUE_BATCH_SIZE="32"),
            continued_row_done),
        "continued_refuses_another_recipe": continued(
            ["lcqmc", "albert"], sweep_after_row, continued_other_recipe),
    })
    at_40000 = dict(CONTINUED, FINETUNE_MAX_TRAIN_EXAMPLES="40000")
    cases.update({
        "continued_lcqmc_roberta_arms": continued(["lcqmc", "roberta", "arms"], at_40000),
        "continued_chnsenticorp_roberta_arms": continued(["chnsenticorp", "roberta", "arms"],
                                                         CONTINUED),
        "continued_msra_roberta_arms": continued(["msra", "roberta", "arms"], CONTINUED),
        "continued_lcqmc_roberta_arms_after_row": continued(
            ["lcqmc", "roberta", "arms"],
            dict(sweep_after_row, FINETUNE_MAX_TRAIN_EXAMPLES="40000",
                 ARMS="tt15_poly,tt30to15_wsd"), continued_arms_done),
        "continued_lcqmc_roberta_arms_other_budget": continued(
            ["lcqmc", "roberta", "arms"], dict(CONTINUED, ARMS="static15_poly"), None),
        "continued_arms_refuses_unknown_arm": continued(
            ["lcqmc", "roberta", "arms"], dict(CONTINUED, ARMS="tt15_poly,tt45_poly")),
        "continued_arms_refuses_albert": continued(["lcqmc", "albert", "arms"], CONTINUED),
        "continued_arms_refuses_another_recipe": continued(
            ["lcqmc", "roberta", "arms"], dict(sweep_after_row, ARMS="tt30_poly"),
            continued_arm_other_recipe),
    })
    refusals = {
        "unknown_task": (["--dry_run", "cmrc", "roberta"], {}),
        "unknown_model": (["--dry_run", "lcqmc", "xlnet"], {}),
        "third_argument": (["--dry_run", "lcqmc", "roberta", "grid"], {}),
        "one_argument": (["--dry_run", "lcqmc"], {}),
        "unknown_option": (["--dry_run", "--foo", "lcqmc", "roberta"], {}),
        "random_init": (["--dry_run", "lcqmc", "roberta"], {"RANDOM_INIT": "2"}),
        "sweep_point": (["--dry_run", "lcqmc", "roberta", "sweep"],
                        {"SWEEP_POINTS": "1e-4x500,fast"}),
        "sweep_grid": (["--dry_run", "lcqmc", "roberta", "sweep"], {"SWEEP_STEPS": "0"}),
        "examples": (["--dry_run", "lcqmc", "roberta"], {"FINETUNE_MAX_TRAIN_EXAMPLES": "0"}),
        "no_general_model": (["--dry_run", "lcqmc", "albert"],
                             {"GENERAL_MODELS": "{FIX}/empty"}),
    }
    for name, (args, settings) in refusals.items():
        cases[f"continued_refuses_{name}"] = (
            "continued_experiment.sh", args, dict(CONTINUED, **settings), None, None)

    cases.update({
        "general_shared": ("make_general_models.sh", ["--dry_run"], {}, None, "shared"),
        "general": ("make_general_models.sh", ["--dry_run"], GENERAL, None, None),
        "general_settings": ("make_general_models.sh", [], dict(
            GENERAL, DRY_RUN="1", MODELS="albert", PRETRAIN_STEPS="10",
            PRETRAIN_BATCH_SIZE="8", PRETRAIN_SEED="2", MAX_SEQ_LENGTH="32",
            MAX_PREDICTIONS="5", DUPE_FACTOR="1", EVAL_SHARE="0.1"), None, None),
        "general_data_done": ("make_general_models.sh", ["--dry_run"], GENERAL,
                              general_data_done, None),
        "general_refuses_unknown_model": ("make_general_models.sh", ["--dry_run"],
                                          dict(GENERAL, MODELS="bert,gpt"), None, None),
        "general_refuses_argument": ("make_general_models.sh", ["--dry_run", "bert"], GENERAL,
                                     None, None),
        "general_refuses_corpus": ("make_general_models.sh", ["--dry_run"],
                                   dict(GENERAL, GENERAL_CORPUS="{FIX}/nope.txt"), None,
                                   None),
    })
    return cases


CASES = _cases()


GOLDENS = script_goldens.Goldens(CASES, make_fixture, GOLDEN_DIR)

if __name__ == "__main__":
    GOLDENS.write(sys.argv[1:])
