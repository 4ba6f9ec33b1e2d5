"""tests/conftest.py's NEEDS_ESTIMATOR names tests that exist, and it skips them only where
TensorFlow has no tf.estimator: an entry left behind by a renamed or moved test would skip
nothing, and one that skipped on 2.15 would hide a test that runs there."""
import ast
import re

import conftest
from conftest import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def _test_files():
    """{file name: path} of every test file (names are unique across the tree)."""
    files = {}
    for path in TESTS.rglob("test_*.py"):
        assert path.name not in files, f"two test files named {path.name}: {files[path.name]}, {path}"
        files[path.name] = path
    return files


def _test_functions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test")}


def test_every_entry_names_an_existing_file_and_test():
    files = _test_files()
    stale = []
    for entry in sorted(conftest.NEEDS_ESTIMATOR):
        name, _, test = entry.partition("::")
        function = re.sub(r"\[.*\]$", "", test)  # a parametrized case: its function
        if name not in files:
            stale.append(f"{entry}: no test file {name}")
        elif test and function not in _test_functions(files[name]):
            stale.append(f"{entry}: {name} has no test {function}")
    assert stale == [], "tests/conftest.py NEEDS_ESTIMATOR: " + "; ".join(stale)


def test_skipped_only_where_tensorflow_has_no_estimator():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    version = tuple(int(part) for part in tf.__version__.split(".")[:2])
    assert conftest.HAS_ESTIMATOR == (version <= (2, 15))
    assert "TensorFlow >= 2.16" in conftest.ESTIMATOR_REASON
