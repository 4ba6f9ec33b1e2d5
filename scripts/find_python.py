"""Print the path of the first Python among the given versions that this machine has.

    python3 scripts/find_python.py 3.13 3.12    # the newest of the two, or exit 1

Each version is looked for as `pythonX.Y` on PATH, then under pyenv's versions folder
($PYENV_ROOT, `pyenv root`, or ~/.pyenv: versions/X.Y*/bin/pythonX.Y, newest patch
first). A candidate counts only if it runs and reports that version: a pyenv shim for a
version that is not selected exits with "pyenv: pythonX.Y: command not found".
`make setup` uses it to pick the interpreter of each environment.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys


def pyenv_root():
    if os.environ.get("PYENV_ROOT"):
        return pathlib.Path(os.environ["PYENV_ROOT"])
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        if found.returncode == 0 and found.stdout.strip():
            return pathlib.Path(found.stdout.strip())
    return pathlib.Path.home() / ".pyenv"


def patch_key(path):
    """Sort key of a pyenv folder name such as 3.13.0 (newest first when reversed)."""
    return [int(part) for part in re.findall(r"\d+", path.parent.parent.name)]


def candidates(version):
    on_path = shutil.which(f"python{version}")
    if on_path:
        yield on_path
    versions = pyenv_root() / "versions"
    found = versions.glob(f"{version}*/bin/python{version}")
    # 3.1* would also match 3.10 when 3.1 is asked: keep exactly X.Y and X.Y.Z folders
    exact = [path for path in found
             if re.fullmatch(re.escape(version) + r"(\.\d+)?", path.parent.parent.name)]
    yield from (str(path) for path in sorted(exact, key=patch_key, reverse=True))


def runs_as(interpreter, version):
    """True when `interpreter` starts and is Python `version` (X.Y)."""
    try:
        answer = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return False
    return answer.returncode == 0 and answer.stdout.strip() == version


def find(versions):
    for version in versions:
        for interpreter in candidates(version):
            if runs_as(interpreter, version):
                return interpreter
    return None


def main(argv):
    versions = argv[1:]
    if not versions or not all(re.fullmatch(r"3\.\d+", version) for version in versions):
        sys.exit("usage: find_python.py 3.Y [3.Y ...] (the versions wanted, preferred first)")
    interpreter = find(versions)
    if interpreter is None:
        print(f"no Python {' or '.join(versions)} on PATH or in {pyenv_root() / 'versions'}",
              file=sys.stderr)
        return 1
    print(interpreter)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
