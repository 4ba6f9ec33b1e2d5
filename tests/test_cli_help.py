"""Every console script's module answers --help with its own flags (expected failures:
tests/test_cli_failures.py).

The entries come from setup.cfg's [options.entry_points], so a new script is
covered without touching this file. Each module runs as `python -m MODULE --help`, which
calls the same main() as its console script (the installed scripts themselves answer
--help in tests/test_wheel.py, from a fresh install). Every run imports TensorFlow, so the
runs go in parallel.
"""
import os
import re
import sys

import pytest

from tests.testutil.cli_runs import REPO_ROOT, console_scripts, run_parallel

# absl's own flags (listed by --help beside the tool's flags, or advertised after them).
ABSL_FLAGS = {"help", "helpshort", "helpfull", "helpxml", "flagfile", "undefok", "only_check_args",
              "pdb", "pdb_post_mortem", "run_with_pdb", "run_with_profiling", "profile_file",
              "use_cprofile_for_profiling", "logtostderr", "alsologtostderr", "log_dir", "v",
              "verbosity", "logger_levels", "stderrthreshold", "showprefixforinfo"}

def help_commands():
    """[(id, module, argv)]: `python -m MODULE --help` of each console script's module."""
    modules = dict.fromkeys(module for _, module, _ in console_scripts())
    return [(f"python -m {module}", module, [sys.executable, "-m", module, "--help"])
            for module in modules]


@pytest.fixture(scope="module")
def help_outputs(tmp_path_factory):
    """{id: (module, exit code, stdout + stderr, seconds)}."""
    cwd = tmp_path_factory.mktemp("help")  # nothing may be written; and not the repo
    commands = help_commands()
    modules = {key: module for key, module, _ in commands}
    results = run_parallel([(key, argv) for key, _, argv in commands], cwd)
    assert not os.listdir(cwd), f"--help wrote files: {os.listdir(cwd)}"
    return {key: (modules[key], code, out + err, seconds)
            for key, (code, out, err, seconds) in results.items()}


def test_entries_are_read_from_setup_cfg():
    names = [name for name, _, _ in console_scripts()]
    assert "zh-run-finetune" in names and "zh-vocab-surgery" in names and len(names) >= 8


def test_each_console_script_is_named_after_its_module():
    """One command scheme: `zh-<module>` runs `python -m <package>.<module>`."""
    for name, module, _ in console_scripts():
        assert name == "zh-" + module.rsplit(".", 1)[-1].replace("_", "-"), (name, module)
    modules = {m for _, m, _ in console_scripts()}
    assert len(help_commands()) == len(modules)


@pytest.mark.parametrize("key", [key for key, _, _ in help_commands()])
def test_help_lists_the_tools_flags_and_exits_0(help_outputs, key):
    module, code, output, _ = help_outputs[key]
    assert "Traceback" not in output, output
    assert code == 0, f"{key} --help exited {code}:\n{output}"
    # absl's --help lists only the main program's flags: any other flag listed is the tool's own.
    listed = set(re.findall(r"^\s+--(?:\[no\])?([a-z][a-z0-9_]*)", output, re.MULTILINE))
    assert listed - ABSL_FLAGS, f"{key} --help lists none of {module}'s flags:\n{output}"


def readme_commands():
    """[(module, [flag names])] of every `python -m MODULE --flag ...` in README.md's code
    blocks (continuation lines joined; `--noX` counts as X)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0]
            for match in re.finditer(r"python -m ([\w.]+)((?:\s+--[\w]+(?:=\S*)?)*)", line):
                flags = re.findall(r"--(\w+)", match.group(2))
                commands.append((match.group(1), flags))
    return commands


def test_the_readmes_commands_use_flags_their_tools_know(help_outputs, tmp_path):
    commands = readme_commands()
    assert len(commands) >= 8  # the front door's five steps and the stages
    helps = {module: output for module, _, output, _ in help_outputs.values()}
    missing = sorted({module for module, _ in commands if module not in helps})
    extra = run_parallel([(module, [sys.executable, "-m", module, "--helpfull"])
                          for module in missing], tmp_path)
    helps.update({module: out + err for module, (_, out, err, _) in extra.items()})
    for module, flags in commands:
        known = set(re.findall(r"^\s+--(?:\[no\])?([a-z][a-z0-9_]*)", helps[module],
                               re.MULTILINE))
        for flag in flags:
            name = flag[2:] if flag.startswith("no") and flag[2:] in known else flag
            assert name in known, f"README: python -m {module} --{flag}: not one of its flags"
