"""data_gen's optional C accelerators (their sources beside this file, built by `make setup`,
see setup.py) and their loader.

Every accelerated function has a pure-Python twin that produces the same
words, ids and bytes; tests run both and compare. The Python path is used
when a module was not built (no C compiler at install time) or when the
environment sets ZH_PRETRAIN_PURE_PYTHON=1.

    python -m data_gen.native     # prints which modules are in use
"""
import functools
import importlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DISABLE_VARIABLE = "ZH_PRETRAIN_PURE_PYTHON"


def disabled():
    """True when the environment asks for the pure-Python path."""
    return os.environ.get(DISABLE_VARIABLE, "") not in ("", "0")


@functools.lru_cache(maxsize=None)  # load() asks on every call; the folder does not change
def module_names(folder=HERE):
    """Every C module's name: each `_NAME.c` beside this file (a module's main source; its
    other parts have names without the underscore), or each built `_NAME` extension where
    the sources are not shipped (a wheel). setup.py builds the same list."""
    names = set()
    for entry in os.listdir(folder):
        stem = entry.split(".", 1)[0]
        if entry.startswith("_") and not entry.startswith("__") and (
                entry.endswith(".c") or entry.endswith((".so", ".pyd"))):
            names.add(stem)
    return tuple(sorted(names))


def _check_name(name):
    known = module_names()
    if name not in known:
        raise ValueError(f"unknown native module {name!r}; known: {', '.join(known)}")


def load(name):
    """The C module data_gen.native.<name>, or None (not built, or disabled)."""
    _check_name(name)
    if disabled():
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None


def resolve(name, use_native=None):
    """The module for a `use_native` argument, as every accelerated API takes it.

    None: load(name) (the C module when built and not disabled, else None);
    False: None (pure Python); True: the C module even when the environment
    disables it, ImportError saying how to build it when it is not built.
    """
    if use_native is False:
        return None
    if use_native is None:
        return load(name)
    _check_name(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError as error:
        raise ImportError(
            f"use_native=True but the C extension {__name__}.{name} is not built ({error}); "
            "build it with `make setup` (needs gcc and the Python headers) or pass "
            "use_native=None/False") from error


def status():
    """{module name: True if it is built and in use}."""
    return {name: load(name) is not None for name in module_names()}


def main():
    states = status()
    for name, in_use in states.items():
        print(f"{name}: {'C' if in_use else 'pure Python'}")
    if disabled():
        print(f"({DISABLE_VARIABLE} is set: the C modules are ignored)")
    elif not all(states.values()):
        print("rebuild with `make setup` (needs gcc and the Python headers) for the C path")
    return 0

