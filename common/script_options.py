"""The options of the stage scripts (create_pretrain_data.sh, pretrain.sh, finetune.sh): every
setting is an environment variable and the option `--setting VALUE` or `--setting=VALUE` (its
name in lower case; the option wins), a few options stand alone (`--dry_run`, switches), and
the arguments after `--` go to the tool unchanged.

A script forwards the settings of its `(VARIABLE, flag)` tables only when they are set, so
the tool's own defaults are the only ones (tests/scripts/test_script_defaults.py).
"""
import shutil
import sys

from common.script_runs import Refusal, ScriptRun


def read_options(argv, values, usage, *, value_options, tool, words=None, switches=(),
                 unknown_option="unknown option {}"):
    """Sets `values` (VARIABLE -> text) from `argv` as the bash scripts read it; returns the
    arguments after `--`. `words` maps an option that stands alone to (VARIABLE, value);
    a switch (`--rerun`, `--rerun=true|false`) sets its VARIABLE to true or false; `tool`
    names where the flags after `--` go; -h/--help prints usage(values) and exits 0."""
    words = words or {}
    args = list(argv)
    after_dashes = f"(see --help; flags for {tool} go after --)"
    while args:
        option = args[0]
        if option in ("-h", "--help"):
            print(usage(values), flush=True)
            sys.exit(0)
        if option in words:
            variable, value = words[option]
            values[variable] = value
            del args[0]
            continue
        if option == "--":
            return args[1:]
        if not option.startswith("--"):
            raise Refusal(f"unknown argument '{option}' {after_dashes}")
        name, given, value = option.partition("=")
        variable = name[2:].upper()
        if given and variable in switches:
            if value not in ("true", "false"):
                raise Refusal(f"{option}: use {name} alone, or {name}=true|false")
            values[variable] = value
            del args[0]
            continue
        if given:
            args[0:1] = [name, value]
            continue
        if variable in switches:
            values[variable] = "true"
            del args[0]
            continue
        if variable not in value_options:
            raise Refusal(f"{unknown_option.format(option)} {after_dashes}")
        if len(args) < 2:
            raise Refusal(f"{option} needs a value (see --help)")
        values[variable] = args[1]
        del args[:2]
    return []


def tool_flags(table, values, switch_words=True):
    """The tool's flags of the settings of `table` [(VARIABLE, flag)] that are set:
    --flag=value, or with switch_words true/false as --flag / --noflag."""
    flags = []
    for variable, flag in table:
        value = values[variable]
        if not value:
            continue
        if switch_words and value == "true":
            flags.append(f"--{flag}")
        elif switch_words and value == "false":
            flags.append(f"--no{flag}")
        else:
            flags.append(f"--{flag}={value}")
    return flags


def assignments(presets):
    """`NAME=value NAME=value` of {NAME: value}, as --help shows a script's presets."""
    return " ".join(f"{name}={value}" for name, value in presets.items())


def variables(*tables):
    """The VARIABLE names of the settings tables, in order, each once."""
    return list(dict.fromkeys(variable for table in tables for variable, _ in table))


def use_settings(run, values):
    """The ScriptRun's interpreter (PYTHON, refused when it is not there) and dry run
    (DRY_RUN=1) from the settings."""
    if not values["PYTHON"] or not shutil.which(values["PYTHON"]):
        raise Refusal("no Python found; run 'make setup' or set PYTHON=/path/to/python3.11")
    run.dry_run, run.python = values["DRY_RUN"] == "1", values["PYTHON"]


def script_main(script, body, argv=None):
    """Runs body(run, args) as scripts/SCRIPT (a ScriptRun): a refusal is one line, exit 2."""
    run = ScriptRun(script, None)  # read_options prints the usage
    run.main(lambda args: body(run, args), argv)
