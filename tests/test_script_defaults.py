"""The shell scripts hold no second copy of the Python tools' defaults.

Each script lists the settings it forwards as `VARIABLE:flag` tables. These
tests check, for every table: each flag is a field of the tool's options
dataclass (a renamed flag fails here); the script gives none of those
variables a default of its own; and a dry run outside the demo forwards no
flag the user did not set, so the Python default applies. The Makefile
repeats no script setting either.
"""
import dataclasses
import os
import re
import subprocess
import sys

import pytest

from data_gen.build_vocab import BuildVocabOptions
from data_gen.config import GenerationConfig
from finetune.compare import CompareOptions
from pretrain.run_pretraining import PretrainingOptions

TABLES = {  # script -> {table name: options dataclass of the tool it feeds}
    "create_pretrain_data.sh": {"GENERATION_SETTINGS": GenerationConfig,
                                "VOCAB_SETTINGS": BuildVocabOptions},
    "pretrain.sh": {"TRAINING_SETTINGS": PretrainingOptions},
    "lcqmc_finetune.sh": {"TRAINING_SETTINGS": CompareOptions},
}


def _script_text(repo_root, name):
    return (repo_root / "scripts" / name).read_text(encoding="utf-8")


def settings_table(text, table):
    """[(VARIABLE, flag)] of the bash array `table=(VAR:flag ...)`."""
    match = re.search(rf"^{table}=\(([^)]*)\)", text, re.MULTILINE)
    assert match, f"no {table}=(...) table"
    return [tuple(item.split(":", 1)) for item in match.group(1).split()]


def _all_settings(repo_root):
    for script, tables in TABLES.items():
        text = _script_text(repo_root, script)
        for table, options in tables.items():
            for variable, flag in settings_table(text, table):
                yield script, text, variable, flag, options


def test_every_forwarded_flag_is_a_flag_of_the_tool(repo_root):
    count = 0
    for script, _, variable, flag, options in _all_settings(repo_root):
        names = {field.name for field in dataclasses.fields(options)}
        assert flag in names, f"{script}: {variable} forwards --{flag}, not a flag of {options}"
        count += 1
    assert count >= 25


def test_scripts_give_forwarded_settings_no_default_of_their_own(repo_root):
    for script, text, variable, _, _ in _all_settings(repo_root):
        own_defaults = re.findall(rf'\b{variable}="\$\{{{variable}:-([^}}]+)\}}"', text)
        assert not own_defaults, f"{script} gives {variable} a default {own_defaults}"
        # a statement `VAR=value` (not `VAR=x command ...`, not inside the demo preset array)
        literal = re.findall(rf"^\s*{variable}=([^\s)]+)\s*$", text, re.MULTILINE)
        assert not literal, f"{script} assigns {variable}={literal}"


def _dry_run(repo_root, tmp_path, script, *args):
    env = {key: value for key, value in os.environ.items()
           if not re.fullmatch(r"[A-Z_]+", key) or key in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PYTHON"] = sys.executable
    done = subprocess.run(["bash", str(repo_root / "scripts" / script), "--dry_run", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("script,args", [
    ("create_pretrain_data.sh", ["--input", "corpus.txt", "--vocab", "vocab.txt",
                                 "--output_dir", "out", "--build_vocab", "never"]),
    ("pretrain.sh", ["--input", "data/*.tfrecord", "--config", "c.json", "--output_dir", "o"]),
])
def test_a_dry_run_forwards_only_what_was_set(repo_root, tmp_path, script, args):
    (tmp_path / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    command = _dry_run(repo_root, tmp_path, script, *args)
    forwarded = set(re.findall(r"--(?:no)?([a-z_]+)", command))
    flags = {flag for _, _, _, flag, _ in _all_settings(repo_root)}
    assert not forwarded & flags, f"{script} forwards {forwarded & flags} nobody set:\n{command}"
    # ... and forwards a setting once it is set (the table is wired up).
    command = _dry_run(repo_root, tmp_path, script, *args, "--max_seq_length", "77")
    assert "--max_seq_length=77" in command


def test_the_makefile_repeats_no_script_setting(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assigned = set(re.findall(r"^([A-Z_]+)\s*\??=", makefile, re.MULTILINE))
    variables = {variable for _, _, variable, _, _ in _all_settings(repo_root)}
    variables |= {"LCQMC_DIR", "BEFORE", "AFTER", "CONFIG", "VOCAB", "OUT", "INPUT", "OUTPUT_DIR"}
    assert not assigned & variables, f"the Makefile sets {assigned & variables}"
