"""The entry scripts hold no second copy of the Python tools' defaults, and speak one vocabulary.

Each stage script (create_pretrain_data.sh, pretrain.sh, finetune.sh) execs a Python module
that lists the settings it forwards as (VARIABLE, flag) tables. These tests check, for every
table: each flag is a field of the tool's options dataclass (a renamed flag fails here); the
module reads each of those variables left unset as empty and gives none a default of its
own; and a dry run outside the demo forwards no flag the user did not set, so the Python
default applies. The Makefile repeats no script setting either. lcqmc_finetune.sh forwards
through finetune.sh; its LCQMC presets are settings finetune.sh forwards.

The vocabulary: one name per setting in every script (LEARNING_RATE,
WARMUP_STEPS, WARMUP_PROPORTION, SEED, MAX_SEQ_LENGTH, BATCH_SIZE, EPOCHS, ...,
with a PRETRAIN_ / FINETUNE_ prefix where a script has both stages), each
script option the lower-case name of its variable.
"""
import dataclasses
import re
import shlex
import subprocess

import pytest

from tests.testutil.cli_runs import clean_env
from common.model_configs import shipped_path

from data_gen import create_pretrain_data_script
from data_gen.tools.build_vocab import BuildVocabOptions
from data_gen.config import GenerationConfig
from finetune import finetune_script, lcqmc_finetune_script, run_finetune
from finetune.compare import CompareOptions
from pretrain import pretrain_script
from pretrain.pretraining_options import PretrainingOptions

# The stage scripts: the Python module each execs, and its tables -> the options dataclass of
# the tool each feeds.
ENTRIES = {"create_pretrain_data.sh": create_pretrain_data_script,
           "pretrain.sh": pretrain_script, "finetune.sh": finetune_script}
TABLES = {
    "create_pretrain_data.sh": {"GENERATION_SETTINGS": GenerationConfig,
                                "VOCAB_SETTINGS": BuildVocabOptions},
    "pretrain.sh": {"TRAINING_SETTINGS": PretrainingOptions},
    "finetune.sh": {"DATA_SETTINGS": CompareOptions, "MODEL_SETTINGS": CompareOptions,
                    "TRAINING_SETTINGS": CompareOptions, "COMPARE_SETTINGS": CompareOptions},
}
# Every entry script whose settings pass to a tool, and the Python source that reads them.
SOURCES = {"create_pretrain_data.sh": "data_gen/create_pretrain_data_script.py",
           "pretrain.sh": "pretrain/pretrain_script.py",
           "finetune.sh": "finetune/finetune_script.py",
           "lcqmc_finetune.sh": "finetune/lcqmc_finetune_script.py",
           "lcqmc_experiment.sh": "experiments/from_scratch_row.py",
           "demo.sh": "experiments/demo.py"}
STAGES = ("PRETRAIN_", "FINETUNE_")  # prefixes of the stage-specific names of the two-stage scripts
# The one name of each tunable setting, and the flag of the Python tools it sets.
VOCABULARY = {
    "LEARNING_RATE": "learning_rate", "WARMUP_STEPS": "num_warmup_steps",
    "WARMUP_PROPORTION": "warmup_proportion", "SEED": "random_seed",
    "MAX_SEQ_LENGTH": "max_seq_length", "MAX_PREDICTIONS": "max_predictions_per_seq",
    "BATCH_SIZE": "train_batch_size", "EVAL_BATCH_SIZE": "eval_batch_size",
    "EPOCHS": "num_train_epochs", "STEPS": "num_train_steps", "EVAL_STEPS": "max_eval_steps",
    "DUPE_FACTOR": "dupe_factor", "MAX_TRAIN_EXAMPLES": "max_train_examples",
    "MAX_DEV_EXAMPLES": "max_dev_examples", "EVAL_EVERY": "eval_every_steps",
    "STRATEGY": "strategy", "OPTIMIZER": "optimizer", "PRECISION": "precision",
    "CONFIG": "bert_config_file", "SEEDS": "seeds",
}


def _all_settings():
    """(script, VARIABLE, flag, options dataclass) of every row of every table."""
    for script, tables in TABLES.items():
        for table, options in tables.items():
            for variable, flag in getattr(ENTRIES[script], table):
                yield script, variable, flag, options


def _forwarded(script):
    return [variable for name, variable, _, _ in _all_settings() if name == script]


def stem(variable):
    """The setting's name without its stage prefix: PRETRAIN_LEARNING_RATE -> LEARNING_RATE."""
    for prefix in STAGES:
        if variable.startswith(prefix) and variable[len(prefix):] in VOCABULARY:
            return variable[len(prefix):]
    return variable


def test_every_forwarded_flag_is_a_flag_of_the_tool():
    count = 0
    for script, variable, flag, options in _all_settings():
        names = {field.name for field in dataclasses.fields(options)}
        assert flag in names, f"{script}: {variable} forwards --{flag}, not a flag of {options}"
        count += 1
    assert count >= 45


def test_scripts_give_forwarded_settings_no_default_of_their_own(monkeypatch):
    """Unset, a forwarded setting reads as empty (nothing forwarded); set, as given."""
    for script, module in ENTRIES.items():
        names = _forwarded(script)
        for variable in names:
            monkeypatch.delenv(variable, raising=False)
        values = module.read_settings()
        assert {name: values[name] for name in names} == dict.fromkeys(names, ""), script
        for variable in names:
            monkeypatch.setenv(variable, "7")
        values = module.read_settings()
        assert {name: values[name] for name in names} == dict.fromkeys(names, "7"), script
    # A script's own defaults are of its own settings only (paths, the starting points).
    for script, own in (("create_pretrain_data.sh", create_pretrain_data_script.OWN_SETTINGS),
                        ("finetune.sh", finetune_script.OWN_SETTINGS),
                        ("pretrain.sh", pretrain_script.DEMO_PATHS)):
        assert own and not set(own) & set(_forwarded(script)), script


def test_lcqmc_presets_are_settings_of_finetune_sh():
    """lcqmc_finetune.sh's presets (MAX_SEQ_LENGTH=64, task pair) are settings finetune.sh
    forwards, to flags of run_finetune."""
    table = {variable: flag for script, variable, flag, _ in _all_settings()
             if script == "finetune.sh"}
    presets = lcqmc_finetune_script.LCQMC_SETTINGS
    assert presets == {"MAX_SEQ_LENGTH": "64"}
    fields = {field.name for field in dataclasses.fields(run_finetune.FinetuneOptions)}
    assert {table[variable] for variable in presets} <= fields
    assert lcqmc_finetune_script.LCQMC_TASK == "pair"
    assert set(lcqmc_finetune_script.LCQMC_PATHS) <= {"AFTER", "OUT"}


def _run(repo_root, cwd, script, *args, **settings):
    return subprocess.run(["bash", str(repo_root / "scripts" / script), *args], cwd=cwd,
                          env=clean_env(**settings), capture_output=True, text=True, timeout=60)


def _dry_run(repo_root, tmp_path, script, *args, **settings):
    done = _run(repo_root, tmp_path, script, "--dry_run", *args, **settings)
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_inputs(tmp_path):
    """What the scripts' dry runs check for: a vocab, LCQMC-format data, a checkpoint dir."""
    (tmp_path / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    (tmp_path / "lcqmc").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "lcqmc" / f"{split}.txt").write_text("a\tb\t1\n", encoding="utf-8")
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "checkpoint").write_text("", encoding="utf-8")


# The arguments of a dry run of each script outside its demo, and the settings they give.
DRY_RUNS = {
    "create_pretrain_data.sh": (["--input", "corpus.txt", "--vocab", "vocab.txt",
                                 "--output_dir", "out", "--build_vocab", "never"], set()),
    "pretrain.sh": (["--input", "data/*.tfrecord", "--config", "c.json", "--output_dir", "o"],
                    set()),
    "finetune.sh": (["--data_dir", "lcqmc", "--after", "after"], {"data_dir"}),
}


@pytest.mark.parametrize("script", sorted(DRY_RUNS))
def test_a_dry_run_forwards_only_what_was_set(repo_root, tmp_path, script):
    make_inputs(tmp_path)
    args, given = DRY_RUNS[script]
    command = _dry_run(repo_root, tmp_path, script, *args)
    forwarded = set(re.findall(r"--(?:no)?([a-z_]+)", command))
    flags = {flag for name, _, flag, _ in _all_settings() if name == script}
    assert not (forwarded & flags) - given, \
        f"{script} forwards {(forwarded & flags) - given} nobody set:\n{command}"
    # ... and forwards a setting once it is set (the table is wired up).
    command = _dry_run(repo_root, tmp_path, script, *args, "--max_seq_length", "77")
    assert "--max_seq_length=77" in command


def test_lcqmc_dry_run_forwards_its_presets_and_what_was_set(repo_root, tmp_path):
    make_inputs(tmp_path)
    args = ["--lcqmc_dir", "lcqmc", "--after", "after"]
    command = _dry_run(repo_root, tmp_path, "lcqmc_finetune.sh", *args)
    forwarded = set(re.findall(r"--(?:no)?([a-z_]+)", command))
    flags = {flag for name, _, flag, _ in _all_settings() if name == "finetune.sh"}
    assert forwarded & flags == {"task", "data_dir", "max_seq_length", "output_dir"}, command
    assert "--task=pair" in command and "--max_seq_length=64" in command
    for given in (["--max_seq_length", "77"], ["--max_seq_length=77"]):
        assert "--max_seq_length=77" in _dry_run(repo_root, tmp_path, "lcqmc_finetune.sh",
                                                 *args, *given)
    command = _dry_run(repo_root, tmp_path, "lcqmc_finetune.sh", *args, MAX_SEQ_LENGTH="77")
    assert "--max_seq_length=77" in command and "--max_seq_length=64" not in command


@pytest.mark.parametrize("recipe, config", [("roberta", "bert"), ("span", "bert"),
                                            ("albert", "albert"), ("electra", "electra"),
                                            ("xlnet", "xlnet")])
def test_lcqmc_experiment_trains_the_recipes_model_unless_model_config_is_set(
        repo_root, tmp_path, recipe, config):
    make_inputs(tmp_path)
    command = _dry_run(repo_root, tmp_path, "lcqmc_experiment.sh", recipe, **_dry_run_env(tmp_path))
    assert f"--bert_config_file={shipped_path('lcqmc_small_' + config)}" in command
    (tmp_path / "mine.json").write_text("{}", encoding="utf-8")
    command = _dry_run(repo_root, tmp_path, "lcqmc_experiment.sh", recipe, MODEL_CONFIG="mine.json",
                       **_dry_run_env(tmp_path))
    assert f"--bert_config_file={tmp_path}/mine.json" in command
    assert "lcqmc_small" not in command
    missing = _run(repo_root, tmp_path, "lcqmc_experiment.sh", "--dry_run", recipe,
                   MODEL_CONFIG="nope.json", **_dry_run_env(tmp_path))
    assert missing.returncode == 2
    assert missing.stderr == "lcqmc_experiment.sh: error: MODEL_CONFIG=nope.json not found\n"


def test_the_makefile_repeats_no_script_setting(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assigned = set(re.findall(r"^([A-Z_]+)\s*\??=", makefile, re.MULTILINE))
    variables = {variable for _, variable, _, _ in _all_settings()}
    variables |= {"LCQMC_DIR", "BEFORE", "AFTER", "CONFIG", "VOCAB", "OUT", "INPUT", "OUTPUT_DIR"}
    assert not assigned & variables, f"the Makefile sets {assigned & variables}"


# ---- one vocabulary ----------------------------------------------------------------------------

def forwardings(text):
    """[(VARIABLE, flag)] of a script's Python source where the whole value is one setting:
    `f"--flag={values['VAR']}"` (to a tool) and `"--option", values["VAR"]` (to another
    script)."""
    to_tools = re.findall(r'f"--([a-z_]+)=\{values\[\'([A-Z_]+)\'\]\}"', text)
    to_scripts = re.findall(r'"--([a-z_]+)",\s+values\["([A-Z_]+)"\]', text)
    return ([(variable, flag) for flag, variable in to_tools],
            [(variable, option) for option, variable in to_scripts])


def test_one_name_per_setting_in_every_script(repo_root):
    """A tunable setting has one name everywhere (its flag decides which); a stage prefix is the
    only variation; no script still uses an old name outside its alias table."""
    seen = {}  # Python flag -> {(script, variable)}
    for script, variable, flag, _ in _all_settings():
        seen.setdefault(flag, set()).add((script, variable))
    script_options = []
    for script, source in SOURCES.items():
        to_tools, to_scripts = forwardings((repo_root / source).read_text(encoding="utf-8"))
        for variable, flag in to_tools:
            seen.setdefault(flag, set()).add((script, variable))
        script_options += [(script, variable, option) for variable, option in to_scripts]
    names_of = {flag: name for name, flag in VOCABULARY.items()}
    for flag, users in seen.items():
        for script, variable in users:
            if flag in names_of:
                assert stem(variable) == names_of[flag], (
                    f"{script}: {variable} sets --{flag}; its name is {names_of[flag]}")
            if stem(variable) in VOCABULARY:
                assert flag == VOCABULARY[stem(variable)], (
                    f"{script}: {variable} sets --{flag}, not --{VOCABULARY[stem(variable)]}")
    assert {"learning_rate", "num_warmup_steps", "warmup_proportion", "random_seed",
            "max_seq_length", "train_batch_size", "num_train_epochs"} <= set(seen)
    # A script calling another passes a setting to the option of the same name.
    for script, variable, option in script_options:
        if option.upper() in VOCABULARY:
            assert stem(variable) == option.upper(), f"{script}: --{option} \"${{{variable}}}\""
    assert len(script_options) >= 10


def help_options(repo_root, script):
    """[(option, VARIABLE)] from the `--option ARG  VARIABLE  ...` lines of the script's --help."""
    done = _run(repo_root, repo_root, script, "--help")
    assert done.returncode == 0, done.stderr
    return re.findall(r"^\s+--([a-z_]+) \S+\s+([A-Z][A-Z_]+)\s", done.stdout, re.MULTILINE)


@pytest.mark.parametrize("script", ["create_pretrain_data.sh", "pretrain.sh", "finetune.sh",
                                    "lcqmc_finetune.sh"])
def test_each_option_is_its_variable_in_lower_case(repo_root, script):
    options = help_options(repo_root, script)
    assert len(options) >= 10
    for option, variable in options:
        assert option.upper() == variable, f"{script}: --{option} sets {variable}"


def _dry_run_env(tmp_path):
    """Settings that let the dry runs of lcqmc_experiment.sh and demo.sh pass their checks."""
    return dict(LCQMC_DIR=str(tmp_path / "lcqmc"), VOCAB=str(tmp_path / "vocab.txt"),
                RUNS=str(tmp_path / "runs"), DEMO_DIR=str(tmp_path / "demo"))



def _experiment_commands(repo_root, tmp_path, recipe, **settings):
    """{module: [its flags]} of lcqmc_experiment.sh's dry run (one command per module)."""
    lines = _dry_run(repo_root, tmp_path, "lcqmc_experiment.sh", recipe,
                     **_dry_run_env(tmp_path), **settings).splitlines()
    commands = [shlex.split(line) for line in lines if not line.startswith("#")]
    by_module = {command[2]: command[3:] for command in commands}
    assert len(by_module) == len(commands), lines  # each module once
    return by_module


def test_the_experiment_uses_max_seq_length_for_data_and_fine_tuning(repo_root, tmp_path):
    make_inputs(tmp_path)
    by_module = _experiment_commands(repo_root, tmp_path, "span", MAX_SEQ_LENGTH="48",
                                     SEEDS="3, 4")
    assert "--max_seq_length=48" in by_module["data_gen.create_pretraining_data"]
    # One comparison: random init and the pretrained model, over every seed.
    runs = tmp_path / "runs"
    assert by_module["finetune.compare"] == [
        "--task=pair", f"--data_dir={tmp_path}/lcqmc", f"--vocab_file={tmp_path}/vocab.txt",
        "--max_seq_length=48", "--max_train_examples=16000", "--num_train_epochs=1",
        "--learning_rate=1e-4", "--eval_every_steps=250", "--strategy=cpu",
        f"--output_dir={runs}/span/compare", "--seeds=3,4", "--run=random init=",
        f"--run=span={runs}/span/pretrain"]
    assert by_module["experiments.from_scratch_table"] == [f"--runs_dir={runs}",
                                                       f"--output_file={runs}/table.md"]
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_the_albert_row_reads_every_question_as_its_own_document(repo_root, tmp_path):
    """Sentence-order prediction on a paraphrase pair has no order to learn: the albert
    recipe's documents are single questions; the others' keep a pair as one document."""
    make_inputs(tmp_path)
    for recipe, docs, flags in (("albert", "docs_sentences.txt", ["--noparaphrase_documents"]),
                                ("roberta", "docs.txt", [])):
        by_module = _experiment_commands(repo_root, tmp_path, recipe)
        output = [f for f in by_module["data_gen.tools.lcqmc_to_docs"] if f.startswith("--output")]
        assert output == [f"--output_file={tmp_path / 'runs' / docs}"], recipe
        assert [f for f in by_module["data_gen.tools.lcqmc_to_docs"] if "paraphrase" in f] == flags
        assert f"--input_file={tmp_path / 'runs' / docs}" in by_module[
            "data_gen.create_pretraining_data"], recipe


def recipe_defaults(repo_root):
    """{recipe: {setting: default}} from the RECIPE section of --help (each recipe's line,
    then its 'pretraining: NAME=VALUE ...' line, read from experiments/recipes/)."""
    done = _run(repo_root, repo_root, "lcqmc_experiment.sh", "--help")
    section = done.stdout.split("\nRECIPE")[1].split("\n\n")[0]
    defaults, recipe = {}, None
    for line in section.splitlines():
        named = re.match(r"^  (\w+) +\S", line)
        recipe = named.group(1) if named else recipe
        settings = re.match(r"^ +pretraining: (.+)$", line)
        if settings:
            defaults[recipe] = {f"PRETRAIN_{name}": value for name, value in
                                (item.split("=") for item in settings.group(1).split())}
    return defaults


PRETRAINING_FLAGS = {"PRETRAIN_STEPS": "--num_train_steps={}",
                     "PRETRAIN_OPTIMIZER": "--optimizer={}",
                     "PRETRAIN_LEARNING_RATE": "--learning_rate={}",
                     "PRETRAIN_WARMUP_STEPS": "--num_warmup_steps={}"}


def _pretraining_setting(flags, setting):
    if setting == "PRETRAIN_BIAS_CORRECTION":  # stated either way: the recipe's, not a default
        given = [flag for flag in flags if flag in ("--adam_bias_correction",
                                                    "--noadam_bias_correction")]
        assert len(given) == 1, flags
        return "1" if given == ["--adam_bias_correction"] else "0"
    prefix = PRETRAINING_FLAGS[setting].format("")
    (value,) = [flag[len(prefix):] for flag in flags if flag.startswith(prefix)]
    return value


def test_the_experiment_forwards_its_pretraining_settings(repo_root, tmp_path):
    """PRETRAIN_SEED, PRETRAIN_STEPS, the optimizer and its settings reach run_pretraining;
    unset, each recipe's pretraining is what --help lists for it; set, the value wins."""
    make_inputs(tmp_path)
    defaults = recipe_defaults(repo_root)
    assert list(defaults) == ["roberta", "albert", "span", "macbert", "electra", "xlnet"]
    # BERT recipes: bias-corrected AdamW (without it RoBERTa's seed 1 stayed on the plateau).
    bert_recipe = {"PRETRAIN_STEPS": "1000", "PRETRAIN_OPTIMIZER": "adamw",
                   "PRETRAIN_LEARNING_RATE": "5e-4", "PRETRAIN_BIAS_CORRECTION": "1",
                   "PRETRAIN_WARMUP_STEPS": "100"}
    # ALBERT: LAMB at google-research/albert's rate (AdamW 5e-4 left it on the plateau).
    assert defaults == {"roberta": bert_recipe, "span": bert_recipe, "macbert": bert_recipe,
                        "xlnet": bert_recipe,
                        # ELECTRA: its discriminator passes the learning check at 3000
                        # steps of 64, not at 2000.
                        "electra": dict(bert_recipe, PRETRAIN_STEPS="3000"),
                        "albert": dict(bert_recipe, PRETRAIN_OPTIMIZER="lamb",
                                       PRETRAIN_LEARNING_RATE="0.00176",
                                       PRETRAIN_BIAS_CORRECTION="0")}
    ours = {"PRETRAIN_STEPS": "40", "PRETRAIN_OPTIMIZER": "lamb",
            "PRETRAIN_LEARNING_RATE": "2e-3", "PRETRAIN_BIAS_CORRECTION": "1",
            "PRETRAIN_WARMUP_STEPS": "7"}
    for recipe in ("roberta", "albert", "span", "electra", "xlnet"):  # macbert: word vectors
        flags = _experiment_commands(repo_root, tmp_path, recipe)["pretrain.run_pretraining"]
        assert "--random_seed=1" in flags  # PRETRAIN_SEED's default
        for setting, default in defaults[recipe].items():
            assert _pretraining_setting(flags, setting) == default, (recipe, setting)
        flags = _experiment_commands(repo_root, tmp_path, recipe, PRETRAIN_SEED="17",
                                     **ours)["pretrain.run_pretraining"]
        assert "--random_seed=17" in flags and "--random_seed=1" not in flags
        for setting, value in ours.items():
            assert _pretraining_setting(flags, setting) == value, (recipe, setting)
        # One setting given (the other optimizer): it wins, the others keep the recipe's.
        other = "adamw" if defaults[recipe]["PRETRAIN_OPTIMIZER"] == "lamb" else "lamb"
        flags = _experiment_commands(repo_root, tmp_path, recipe, PRETRAIN_OPTIMIZER=other,
                                     PRETRAIN_BIAS_CORRECTION="0")["pretrain.run_pretraining"]
        assert _pretraining_setting(flags, "PRETRAIN_OPTIMIZER") == other
        assert _pretraining_setting(flags, "PRETRAIN_BIAS_CORRECTION") == "0"
        assert _pretraining_setting(flags, "PRETRAIN_LEARNING_RATE") == defaults[recipe][
            "PRETRAIN_LEARNING_RATE"]
    span = _experiment_commands(repo_root, tmp_path, "span", PRETRAIN_BIAS_CORRECTION="1")
    assert span["pretrain.run_pretraining"][-2:] == ["--adam_bias_correction",
                                                     "--span_boundary_objective"]
