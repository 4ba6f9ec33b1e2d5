"""docs/architecture.md's layering holds in the code: imports go finetune -> pretrain -> data_gen -> common.

Each package may import only what the table there lists; the contracts
between stages (record features, sidecar, globs, atomic writes, LCQMC) are
imported from data_gen, never declared again. Inside pretrain, each room
(models, checkpoints, training, interop) imports only the rooms its section
there allows, and pretrain/ itself holds only run_pretraining and cpu_kernels.
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
}

# pretrain's rooms: which of pretrain's modules each may import (its own room always).
# pretrain.cpu_kernels is the package's import-time setup, below every room.
ROOMS = {
    "pretrain.models": {"pretrain.cpu_kernels"},
    "pretrain.checkpoints": {"pretrain.models"},
    "pretrain.training": {"pretrain.models", "pretrain.checkpoints", "pretrain.cpu_kernels"},
    "pretrain.interop": {"pretrain.models", "pretrain.checkpoints"},
}
# Directly in pretrain/: the package's setup and the training CLI, which sits on top of
# the rooms.
PRETRAIN_ROOT = {"__init__", "cpu_kernels", "run_pretraining"}


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
