"""docs/architecture.md's layering holds in the code: imports go experiments -> finetune -> pretrain ->
data_gen -> common.

Each package may import only what the table there lists; the contracts
between stages (record features, sidecar, globs, atomic writes, LCQMC) are
imported from data_gen, never declared again. Inside pretrain, each room
(models, checkpoints, training, interop) imports only the rooms its section
there allows, and pretrain/ itself holds only run_pretraining (and its options) and
cpu_kernels; so
for data_gen's rooms (native, text, records, modes, runner, tools) under its entry
(config, create_pretraining_data). No module of the project reaches itself through
its imports.
"""
import ast
import pathlib
import re

import pytest

from data_gen.records import record_schema

REPO = pathlib.Path(__file__).resolve().parents[1]
ALLOWED = {
    "common": {"common"},
    "data_gen": {"data_gen", "common"},
    "pretrain": {"pretrain", "common", "data_gen.records.record_schema",
                 "data_gen.records.metadata", "data_gen.records.tfrecord_scan",
                 "data_gen.text.tokenization", "data_gen.text.vocab_gaps",
                 "data_gen.modes.xlnet.xlnet_records"},
    "finetune": {"finetune", "pretrain", "common", "data_gen.text.tokenization",
                 "data_gen.text.spm_tokenization", "data_gen.tools.lcqmc_format",
                 "data_gen.text.unreadable_input", "data_gen.records.record_schema"},
    "experiments": {"experiments", "finetune", "pretrain", "common"},
}

# pretrain's rooms: which of pretrain's modules each may import (its own room always).
# pretrain.cpu_kernels is the package's import-time setup, below every room.
ROOMS = {
    "pretrain.models": {"pretrain.cpu_kernels"},
    "pretrain.checkpoints": {"pretrain.models"},
    "pretrain.training": {"pretrain.models", "pretrain.checkpoints", "pretrain.cpu_kernels"},
    "pretrain.interop": {"pretrain.models", "pretrain.checkpoints"},
}
# Directly in pretrain/: the package's setup and the training CLI with its options, which
# sit on top of the rooms, and the Python of scripts/pretrain.sh, which runs that CLI (it
# imports no room).
PRETRAIN_ROOT = {"__init__", "cpu_kernels", "run_pretraining", "pretraining_options",
                 "pretrain_script"}

# data_gen's rooms: which of data_gen's modules each may import (its own room always);
# an entry ending in "=" allows that module alone, not the modules under it.
DATA_GEN_ROOMS = {
    "data_gen.native": set(),
    "data_gen.text": {"data_gen.native"},
    "data_gen.records": {"data_gen.native"},
    "data_gen.modes": {"data_gen.native", "data_gen.text", "data_gen.records",
                       "data_gen.runner.chunk_processing"},
    "data_gen.runner": {"data_gen.native", "data_gen.text", "data_gen.records",
                        "data_gen.modes=", "data_gen.config"},
    "data_gen.tools": {"data_gen.native", "data_gen.text", "data_gen.records",
                      "data_gen.modes"},
}
# Directly in data_gen/: the flags and the local run, on top of the rooms, and the Python of
# scripts/create_pretrain_data.sh, which runs the stage's commands (it imports none of them).
DATA_GEN_ROOT = {"__init__", "config", "create_pretraining_data", "create_pretrain_data_script"}


def _project_imports(path):
    """Every data_gen/pretrain/finetune module a file imports (top level or inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in ALLOWED}


def _allowed(name, allowed):
    return any(name == entry or name.startswith(entry + ".") for entry in allowed)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_the_architecture_allows(package):
    bad = []
    for path in sorted((REPO / package).rglob("*.py")):
        for name in sorted(_project_imports(path)):
            # `from data_gen.records import metadata` also yields the bare package and room.
            room_of_allowed = any(entry.startswith(name + ".") for entry in ALLOWED[package])
            if name in ALLOWED or room_of_allowed or _allowed(name, ALLOWED[package]):
                continue
            bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, "imports against docs/architecture.md:\n" + "\n".join(bad)


# A family's transformers converter (pretrain/models/<family>/hf.py) builds on the interop
# room's converter base class and name-table machinery; interop reaches it only through
# the registry (ModelFamily.hf_converter names it), so no import runs the other way.
FAMILY_CONVERTER_ROOMS = {"pretrain.interop"}


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_each_room_of_pretrain_imports_only_the_rooms_it_may(room):
    bad = []
    for path in sorted(REPO.joinpath(*room.split(".")).rglob("*.py")):
        converter = room == "pretrain.models" and path.name == "hf.py"
        allowed = ROOMS[room] | {room} | (FAMILY_CONVERTER_ROOMS if converter else set())
        for name in sorted(_project_imports(path)):
            # `from pretrain.models import config` also yields the bare room name.
            bare_room_allowed = name in ROOMS and any(entry.startswith(name) for entry in allowed)
            if name.split(".")[0] != "pretrain" or name == "pretrain" or bare_room_allowed:
                continue
            if not _allowed(name, allowed):
                bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, "imports against docs/architecture.md's rooms of pretrain:\n" + "\n".join(bad)


def test_interop_reaches_a_family_converter_only_through_the_registry():
    for path in sorted((REPO / "pretrain" / "interop").rglob("*.py")):
        imported = [name for name in _project_imports(path)
                    if name.startswith("pretrain.models.") and name.endswith(".hf")]
        assert not imported, f"{path.relative_to(REPO)} imports {imported}"


@pytest.mark.parametrize("room", sorted(DATA_GEN_ROOMS))
def test_each_room_of_data_gen_imports_only_the_rooms_it_may(room):
    exact = {entry[:-1] for entry in DATA_GEN_ROOMS[room] if entry.endswith("=")}
    allowed = {entry for entry in DATA_GEN_ROOMS[room] if not entry.endswith("=")} | {room}
    bad = []
    for path in sorted(REPO.joinpath(*room.split(".")).rglob("*.py")):
        for name in sorted(_project_imports(path)):
            if name.split(".")[0] != "data_gen" or name == "data_gen" or name in exact:
                continue
            # `from data_gen.text import vocab_gaps` also yields the bare room name.
            bare_room_allowed = name in DATA_GEN_ROOMS and any(
                entry.startswith(name) for entry in allowed | exact)
            if not bare_room_allowed and not _allowed(name, allowed):
                bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, "imports against docs/architecture.md's rooms of data_gen:\n" + "\n".join(bad)


def test_data_gen_itself_holds_only_its_flags_and_local_run():
    assert {path.stem for path in (REPO / "data_gen").glob("*.py")} == DATA_GEN_ROOT


def _module_graph():
    """{module: the project's modules it imports}, a package standing for its __init__.py.
    `from package import module` imports that module, and the package only when the
    importer is outside it (an importer's own packages are loaded before it)."""
    modules = {}
    for package in ALLOWED:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def with_packages(name, importer):
        while name and name not in modules:  # `import package.module.Class`
            name = name.rpartition(".")[0]
        found = set()
        while name:
            if not importer.startswith(name + "."):
                found.add(name)
            name = name.rpartition(".")[0]
        return found

    graph = {}
    for module, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    targets |= with_packages(alias.name, module)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & set(modules)
                targets |= with_packages(node.module, module) if len(submodules) < len(
                    node.names) else set().union(*(with_packages(name, module)
                                                   for name in submodules))
        graph[module] = {target for target in targets
                         if target != module and target.split(".")[0] in ALLOWED}
    return graph


def _loops(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, loops = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return loops


def test_no_module_reaches_itself_through_its_imports():
    graph = _module_graph()
    assert {"data_gen.create_pretraining_data", "data_gen.runner.beam_pipeline"} <= set(graph)
    assert _loops(graph) == []


def test_the_loop_finder_finds_a_loop():
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_pretrain_itself_holds_only_its_cli_and_setup():
    assert {path.stem for path in (REPO / "pretrain").glob("*.py")} == PRETRAIN_ROOT


def _documented_rows(text):
    rows = re.findall(r"^\| `(\w+)` +\| (int64|float32) +\| `?(\w+)`?", text, flags=re.M)
    return {name: (dtype, length) for name, dtype, length in rows}


def _section(text, start, end):
    return text[text.index(start):text.index(end) if end else None]


def test_the_documented_feature_table_is_record_schema():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = _documented_rows(_section(text, "## 1. ", "## 2. "))
    declared = {f.name: (f.dtype, str(f.length)) for f in record_schema.FEATURES}
    assert documented == declared


@pytest.mark.parametrize("kind,heading,next_heading", [
    ("sequence", "Sequence records", "Token records"), ("token", "Token records", "`finetune.compare`")])
def test_the_documented_fine_tuning_tables_are_record_schema(kind, heading, next_heading):
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = _documented_rows(_section(text, heading, next_heading))
    declared = {f.name: (f.dtype, str(f.length))
                for f in record_schema.FINE_TUNING_FEATURES[kind]}
    assert documented == declared
