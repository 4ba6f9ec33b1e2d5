"""Every console script and every `python -m` entry answers --help with its own flags;
expected failures end in one `error:` line with exit code 2.

The entries come from setup.cfg's [options.entry_points], so a new script is
covered without touching this file. Each is run twice: as the console script
(the installed one beside sys.executable, else the equivalent
`python -c "from MODULE import main; main()"`, which is what the installed
script does) and as `python -m MODULE`. Every run imports TensorFlow, so the
runs go in parallel.
"""
import configparser
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

PARALLEL_RUNS = 4
TIMEOUT_SECONDS = 240
# absl's own flags (listed by --help beside the tool's flags, or advertised after them).
ABSL_FLAGS = {"help", "helpshort", "helpfull", "helpxml", "flagfile", "undefok", "only_check_args",
              "pdb", "pdb_post_mortem", "run_with_pdb", "run_with_profiling", "profile_file",
              "use_cprofile_for_profiling", "logtostderr", "alsologtostderr", "log_dir", "v",
              "verbosity", "logger_levels", "stderrthreshold", "showprefixforinfo"}


def console_scripts():
    """[(script name, module, function)] from setup.cfg."""
    parser = configparser.ConfigParser()
    parser.read(REPO_ROOT / "setup.cfg", encoding="utf-8")
    entries = []
    for line in parser["options.entry_points"]["console_scripts"].strip().splitlines():
        name, target = (part.strip() for part in line.split("=", 1))
        module, function = target.split(":")
        entries.append((name, module, function))
    return entries


def help_commands():
    """[(id, argv)]: each console script, then each module's `python -m` form."""
    commands = []
    for name, module, function in console_scripts():
        installed = os.path.join(os.path.dirname(sys.executable), name)
        if os.path.isfile(installed):
            commands.append((name, module, [installed, "--help"]))
        else:
            commands.append((name, module, [sys.executable, "-c",
                                            f"from {module} import {function}; {function}()",
                                            "--help"]))
    for module in dict.fromkeys(module for _, module, _ in console_scripts()):
        commands.append((f"python -m {module}", module, [sys.executable, "-m", module, "--help"]))
    return commands


@pytest.fixture(scope="module")
def help_outputs(tmp_path_factory):
    """{id: (module, exit code, stdout + stderr, seconds)}, PARALLEL_RUNS processes at a time."""
    cwd = tmp_path_factory.mktemp("help")  # nothing may be written; and not the repo
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        TF_CPP_MIN_LOG_LEVEL="2")
    pending, running, outputs = list(help_commands()), [], {}
    while pending or running:
        while pending and len(running) < PARALLEL_RUNS:
            key, module, argv = pending.pop(0)
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
            running.append((key, module, process, time.time()))
        key, module, process, started = running.pop(0)
        output, _ = process.communicate(timeout=TIMEOUT_SECONDS)
        outputs[key] = (module, process.returncode, output, time.time() - started)
    assert not os.listdir(cwd), f"--help wrote files: {os.listdir(cwd)}"
    return outputs


def test_entries_are_read_from_setup_cfg():
    names = [name for name, _, _ in console_scripts()]
    assert "zh-run-lcqmc" in names and "zh-reduce-vocab" in names and len(names) >= 8
    assert len(help_commands()) == len(names) + len({m for _, m, _ in console_scripts()})


@pytest.mark.parametrize("key", [key for key, _, _ in help_commands()])
def test_help_lists_the_tools_flags_and_exits_0(help_outputs, key):
    module, code, output, _ = help_outputs[key]
    assert "Traceback" not in output, output
    assert code == 0, f"{key} --help exited {code}:\n{output}"
    # absl's --help lists only the main program's flags: any other flag listed is the tool's own.
    listed = set(re.findall(r"^\s+--(?:\[no\])?([a-z][a-z0-9_]*)", output, re.MULTILINE))
    assert listed - ABSL_FLAGS, f"{key} --help lists none of {module}'s flags:\n{output}"


def test_reduce_vocab_failures_are_one_error_line_with_exit_code_2(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n你\n\n好\n",
                                        encoding="utf-8")
    outputs = ["--output_vocab_file=out/vocab.txt", "--output_keep_tokens_file=out/keep.json"]
    cases = {
        "error: missing required flag(s): --output_vocab_file, --output_keep_tokens_file":
            ["--vocab_file=vocab.txt", "--token_file=tokens.txt"],
        "error: pass --corpus_files or --token_file": ["--vocab_file=vocab.txt", *outputs],
        "error: --corpus_files=no_such_*.txt matched no file":
            ["--vocab_file=vocab.txt", "--corpus_files=no_such_*.txt", *outputs],
        "error: [Errno 2] No such file or directory: 'missing.txt'":
            ["--vocab_file=missing.txt", "--token_file=vocab.txt", *outputs],
        "error: vocab.txt:7: empty line in vocab file": ["--vocab_file=vocab.txt",
                                                          "--token_file=vocab.txt", *outputs],
    }
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for message, flags in cases.items():
        done = subprocess.run([sys.executable, "-m", "pretrain.vocab_surgery", *flags],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), lines
    assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]  # no output, not even a partial one
