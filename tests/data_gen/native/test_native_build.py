"""The C accelerators are built wherever they can be (a compile error must not pass silently)."""
import os
import shutil
import sysconfig

import pytest

from data_gen import native


def test_every_native_module_loads_when_a_compiler_and_headers_exist():
    if native.disabled():
        pytest.skip(f"{native.DISABLE_VARIABLE} is set: the pure-Python path is requested")
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    if not (shutil.which("gcc") or shutil.which("cc")) or not os.path.exists(headers):
        pytest.skip("no C compiler or no Python headers: the pure-Python twins run instead")
    missing = [name for name, built in native.status().items() if not built]
    assert not missing, (f"C modules {missing} did not build although gcc and {headers} exist; "
                         "run `make setup` and read the compiler errors")


def test_disable_variable_turns_every_module_off(monkeypatch):
    monkeypatch.setenv(native.DISABLE_VARIABLE, "1")
    assert native.status() == {name: False for name in native.module_names()}
    with pytest.raises(ValueError, match="unknown native module"):
        native.load("_nonexistent")
