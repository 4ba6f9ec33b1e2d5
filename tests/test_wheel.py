"""What `pip install '.[cpu]'` gives a user, proven outside the checkout.

The checkout's .venv holds an editable install, whose path finder resolves every folder
of the checkout whether or not the wheel would hold it. So these tests build the sdist as a
release would, install it with the README's own line into a fresh virtual environment (no
editable install, no PYTHONPATH), and run everything from a folder outside the checkout:
each module of the source tree imports from site-packages, each console script calls
the entry setup.cfg names (and the data_gen ones and one per other stage answer --help), the
C accelerators are built, the shipped files are found, and a data_gen job
writes the checkout's bytes.

`make test` runs this file in one runtime: .venv-tf2.21 (the newest Python, where new users
are) when it is built, .venv otherwise. The sdist and its file list do not depend on the
runtime, and `make setup` already installs the same setup.cfg (its per-Python TensorFlow
lines, the C accelerators' build) into both runtimes; a second fresh install of
TensorFlow would add about a minute (62 s measured) of the 20 minutes both runtimes have.
"""
import configparser
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tarfile

import pytest

from tests.testutil.cli_runs import run_parallel, tool_env
from conftest import REPO_ROOT, in_one_runtime
from common.model_configs import shipped_names

PACKAGES = ("common", "data_gen", "pretrain", "finetune", "experiments")
pytestmark = in_one_runtime("the packaging does not depend on the runtime")
README_LINE = re.compile(r"^pip install '\.\[cpu\]'$")


def source_files(root, suffixes=(".py", ".c", ".h", ".json")):
    """Package files under `root`, relative, sorted (caches and build products left out)."""
    found = []
    for package in PACKAGES:
        for path in (pathlib.Path(root) / package).rglob("*"):
            if path.suffix in suffixes and "__pycache__" not in path.parts:
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def module_names(root):
    """Dotted names of every module of the source tree (packages by their own name)."""
    names = []
    for path in source_files(root, (".py",)):
        parts = path[:-len(".py")].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def readme_install_line():
    """The README's package-only install line (the one this file tests)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if README_LINE.match(line.strip())]
    assert len(lines) == 1, "README.md must show `pip install '.[cpu]'` once, on its own line"
    return lines[0]


def outside_env(venv):
    """A user's shell with the fresh environment active: nothing points at the checkout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


def clean_tree(destination):
    """A copy of the checkout's files as git sees them (tracked, or new and not ignored):
    an egg-info or build/ folder left by an earlier build would feed its own file list to
    the sdist and hide a folder the packaging misses."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO_ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():  # a file deleted but not yet staged is listed too
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, unpacked sdist folder, a working folder outside both and the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    tree = clean_tree(root / "tree")
    built = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                            "--outdir", str(root / "dist"), str(tree)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (sdist,) = (root / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(root / "src", filter="data")
    (source,) = (root / "src").iterdir()
    venv = root / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True, timeout=120)
    command = shlex.split(readme_install_line())
    command = [str(venv / "bin" / "pip")] + command[1:] + ["--quiet"]
    install = subprocess.run(command, cwd=source, env=outside_env(venv), capture_output=True,
                             text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return venv, source, elsewhere


def run_installed(installed, argv, **kwargs):
    venv, _, elsewhere = installed
    return subprocess.run(argv, cwd=kwargs.pop("cwd", elsewhere), env=outside_env(venv),
                          capture_output=True, text=True, timeout=300, **kwargs)


def test_the_sdist_holds_every_file_of_the_packages(installed):
    _, source, _ = installed
    assert source_files(source) == source_files(REPO_ROOT)
    for package in PACKAGES:  # every folder of modules is a package, so the wheel finds it
        for folder in (REPO_ROOT / package).rglob("*"):
            if folder.is_dir() and any(folder.glob("*.py")):
                assert (folder / "__init__.py").is_file(), f"{folder} is not a package"


def test_every_module_imports_from_the_installed_package(installed):
    venv, _, _ = installed
    names = [name for name in module_names(REPO_ROOT) if not name.endswith("__main__")]
    probe = ("import importlib, json, sys\n"
             "where = {}\n"
             "for name in sys.argv[1:]:\n"
             "    try:\n"
             "        where[name] = importlib.import_module(name).__file__\n"
             "    except Exception as error:\n"
             "        where[name] = f'{type(error).__name__}: {error}'\n"
             "print(json.dumps(where))\n")
    result = run_installed(installed, [str(venv / "bin" / "python"), "-c", probe] + names)
    assert result.returncode == 0, result.stderr[-3000:]
    where = json.loads(result.stdout.strip().splitlines()[-1])
    site = str(venv / "lib")
    wrong = {name: found for name, found in where.items()
             if not (found or "").startswith(site)}
    assert not wrong, f"not imported from the installed package: {wrong}"
    assert len(where) == len(names) > 150


def console_scripts():
    """{script name: (module, function)} from setup.cfg."""
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    lines = config["options.entry_points"]["console_scripts"].strip().splitlines()
    entries = {}
    for line in lines:
        name, target = (part.strip() for part in line.split("=", 1))
        entries[name] = tuple(target.split(":"))
    return dict(sorted(entries.items()))


# The scripts run here with --help: every data_gen one (no TensorFlow at start-up) and one
# per other stage. Each of the others starts TensorFlow (4-8 s of CPU on 2 cores) to print
# its flags, which tests/test_cli_help.py checks for every script's module in both runtimes;
# what the install adds, the wrapper pip writes for each entry, is checked for all of them.
HELP_RUNS = ("zh-run-pretraining", "zh-run-finetune")


def test_every_console_script_runs_its_entry_and_answers_help(installed):
    venv, _, elsewhere = installed
    entries = console_scripts()
    assert len(entries) >= 10
    for name, (module, function) in entries.items():
        script = (venv / "bin" / name).read_text(encoding="utf-8")
        assert script.startswith(f"#!{venv / 'bin' / 'python'}"), name
        assert re.search(rf"^from {re.escape(module)} import {function}$", script, re.M), name
    names = [name for name, (module, _) in entries.items()
             if module.startswith("data_gen.") or name in HELP_RUNS]
    results = run_parallel([(name, [str(venv / "bin" / name), "--help"], outside_env(venv))
                            for name in names], cwd=elsewhere)
    for name in names:
        code, stdout, stderr, _ = results[name]
        assert code == 0, f"{name} --help: {stderr[-2000:]}"
        assert "USAGE:" in stdout and re.search(r"^  --\w", stdout, re.M), name
        assert "Traceback" not in stderr, name


def test_the_c_accelerators_are_built(installed):
    venv, _, _ = installed
    result = run_installed(installed, [str(venv / "bin" / "python"), "-m", "data_gen.native"])
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ") for line in result.stdout.strip().splitlines())
    assert sorted(lines) == sorted(["_jieba", "_tokenize", "_records", "_instances",
                                    "_tfrecord", "_xlnet"])
    assert set(lines.values()) == {"C"}, result.stdout


def test_the_shipped_files_are_found_in_the_package(installed):
    venv, _, _ = installed
    python = str(venv / "bin" / "python")
    listing = run_installed(installed, [python, "-m", "common.model_configs"])
    assert listing.returncode == 0, listing.stderr
    assert [line.split()[0] for line in listing.stdout.splitlines()] == shipped_names()
    # The experiments' data files: the rows, the tasks, the general models, the continuing
    # recipe, read by the runners' --help.
    rows = run_installed(installed, [python, "-m", "experiments.from_scratch_row", "--help"])
    assert rows.returncode == 0, rows.stderr
    assert re.findall(r"^  (\w+) +\S", rows.stdout.split("\nRECIPE")[1].split("\n\n")[0],
                      re.MULTILINE) == ["roberta", "albert", "span", "macbert", "electra", "xlnet"]
    continued = run_installed(installed, [python, "-m", "experiments.continued_row", "--help"])
    assert continued.returncode == 0, continued.stderr
    assert "  msra          MSRA_DIR (train.txt, test.txt;" in continued.stdout
    assert "  albert        the ALBERT of the same width and depth;" in continued.stdout
    assert "CONTINUE_STEPS     continued-pretraining updates      [1000]" in continued.stdout
    general = run_installed(installed, [python, "-m", "experiments.general_models", "--help"])
    assert general.returncode == 0 and "  bert    lcqmc_small_bert (L4 H256)" in general.stdout


def test_a_data_gen_job_writes_the_checkouts_bytes(installed, tmp_path):
    """build_vocab then create_pretraining_data (a shipped config by name), relative paths
    in two folders: from the installed console scripts and from the checkout's modules."""
    venv, _, _ = installed
    corpus = (REPO_ROOT / "data" / "sample" / "corpus_zh.txt").read_bytes()
    outputs = {}
    for side in ("installed", "checkout"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "corpus.txt").write_bytes(corpus)
        if side == "installed":
            commands = [[str(venv / "bin" / "zh-build-vocab")],
                        [str(venv / "bin" / "zh-create-pretraining-data")]]
            env = outside_env(venv)
        else:
            commands = [[sys.executable, "-m", "data_gen.tools.build_vocab"],
                        [sys.executable, "-m", "data_gen.create_pretraining_data"]]
            env = tool_env()
        flags = [["--input_file=corpus.txt", "--output_file=vocab.txt", "--vocab_size=3000"],
                 ["--input_file=corpus.txt", "--output_file=out/train.tfrecord",
                  "--vocab_file=vocab.txt", "--bert_config_file=demo_tiny_bert",
                  "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2",
                  "--num_workers=2", "--random_seed=7"]]
        for command, command_flags in zip(commands, flags):
            result = subprocess.run(command + command_flags, cwd=folder, env=env,
                                    capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, f"{side}: {result.stderr[-2000:]}"
        outputs[side] = {path.relative_to(folder).as_posix(): path.read_bytes()
                         for path in sorted(folder.rglob("*")) if path.is_file()}
    assert sorted(outputs["installed"]) == ["corpus.txt", "out/train.tfrecord",
                                            "out/train.tfrecord.meta.json", "vocab.txt"]
    assert len(outputs["installed"]["out/train.tfrecord"]) > 10000
    sidecars = [json.loads(outputs[side].pop("out/train.tfrecord.meta.json"))
                for side in ("installed", "checkout")]
    for sidecar, side in zip(sidecars, ("installed", "checkout")):  # the only absolute path
        assert sidecar.pop("vocab_file") == str(tmp_path / side / "vocab.txt")
    assert sidecars[0] == sidecars[1]
    assert outputs["installed"] == outputs["checkout"]
