"""Golden runs of the entry scripts: a case runs scripts/SCRIPT.sh with some arguments and
settings in a fixture folder FIX; its record (exit code, stdout, stderr) is compared to a
golden file recorded from the bash script before its logic moved to Python.

A case is (script, args, settings, state function or None, requirements): `settings` are
environment variables ({FIX} in them and in `args` stands for the fixture folder), `state(fix)`
prepares a folder beyond the fixture, and the requirements (None, one, or a tuple of them: see
_unmet) name what the machine must hold for the case to run. Records name the
machine's paths by placeholders: <PYTHON> (the interpreter), <FIX> (the fixture folder),
<REPO> (the repository); clock times read HH:MM:SS (the demo's elapsed seconds N).
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
CLOCK = re.compile(r"\[\d\d:\d\d:\d\d\]")
ELAPSED = re.compile(r"\(t = \d+ s\)")


def _unmet(requirement):
    """Why this machine does not meet `requirement`, or None: "shared" (../shared/data
    present), "with GLOB" or "without GLOB" (files of the checkout, such as the demo's
    output, present or absent)."""
    if requirement == "shared":
        return None if SHARED_DATA.is_dir() else (
            f"{SHARED_DATA} not present: the case uses the default paths")
    presence, _, pattern = requirement.partition(" ")
    found = any(REPO_ROOT.glob(pattern))
    if presence == "with":
        return None if found else f"no {pattern} in this checkout"
    assert presence == "without", requirement
    return f"{pattern} present in this checkout" if found else None


def skip_reason(case):
    """Why `case` cannot run on this machine, or None."""
    requirements = case[4] if isinstance(case[4], tuple) else (case[4],)
    return next(filter(None, map(_unmet, filter(None, requirements))), None)


def environment(settings, fix):
    """A clean environment: no setting of the scripts inherited from the caller's."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(PYTHON=sys.executable, TF_CPP_MIN_LOG_LEVEL="2")
    env.update({name: value.replace("{FIX}", str(fix)) for name, value in settings.items()})
    return env


def normalise(text, fix):
    """`text` with this machine's paths and clock times as placeholders."""
    for path, placeholder in ((sys.executable, "<PYTHON>"), (str(fix), "<FIX>"),
                              (str(REPO_ROOT), "<REPO>")):
        text = text.replace(path, placeholder)
    return ELAPSED.sub("(t = N s)", CLOCK.sub("[HH:MM:SS]", text))


def run_case(case, make_fixture):
    """The normalised record of `case` run in a fresh fixture folder made by `make_fixture`."""
    script, args, settings, state, _ = case
    with tempfile.TemporaryDirectory() as folder:
        fix = pathlib.Path(folder).resolve()
        make_fixture(fix)
        if state:
            state(fix)
        args = [arg.replace("{FIX}", str(fix)) for arg in args]
        done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / script), *args], cwd=fix,
                              env=environment(settings, fix), capture_output=True, text=True,
                              timeout=120)
        return normalise(f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n"
                         f"{done.stderr}", fix)


class Goldens:
    """The cases of a set of scripts, their fixture and their golden files (golden_dir/NAME.txt)."""

    def __init__(self, cases, make_fixture, golden_dir):
        self.cases, self.make_fixture, self.golden_dir = cases, make_fixture, golden_dir

    def path(self, name):
        return self.golden_dir / f"{name}.txt"

    def run(self, name):
        """The normalised record of case `name`: exit code, stdout and stderr."""
        return run_case(self.cases[name], self.make_fixture)

    def check(self, name):
        """Asserts that case `name` prints its golden file (skips where it cannot run)."""
        reason = skip_reason(self.cases[name])
        if reason:
            import pytest  # pylint: disable=import-outside-toplevel
            pytest.skip(reason)
        golden = self.path(name).read_text(encoding="utf-8")
        assert golden.startswith("exit ")
        assert self.run(name) == golden

    def unpinned(self):
        """The golden files without a case and the cases without a golden file."""
        names = {path.stem for path in self.golden_dir.glob("*.txt")}
        return names ^ set(self.cases)

    def write(self, names):
        """(Re)writes the golden file of each case named (all when none is)."""
        self.golden_dir.mkdir(exist_ok=True)
        for name in names or sorted(self.cases):
            reason = skip_reason(self.cases[name])
            if reason:
                print(f"{name}: skipped, {reason}")
                continue
            self.path(name).write_text(self.run(name), encoding="utf-8")
            print(f"{name}: written")
