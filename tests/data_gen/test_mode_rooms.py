"""Mode dispatch lives in data_gen.modes (docs/architecture.md, data_gen's rooms): outside
its room and the registry, no data_gen module names xlnet in code, and outside
data_gen/modes/ none names roberta/albert/bert as a mode. Code: identifiers, imports and
string literals other than docstrings; comments and docstrings may name them."""
import ast
import io
import pathlib
import re
import tokenize

import pytest

from data_gen import modes

DATA_GEN = pathlib.Path(__file__).resolve().parents[2] / "data_gen"
MLM_MODES = ("roberta", "albert", "bert")
# A string naming an MLM mode: the bare name, or `--mode=NAME` / `NAME mode`.
MLM_MODE_STRING = re.compile(r"^(%s)$|mode=(%s)\b|\b(%s) mode\b" % (("|".join(MLM_MODES),) * 3),
                             re.I)


def _docstring_lines(source):
    """Line numbers where a docstring starts (module, class, function)."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.add(body[0].lineno)
    return lines


def _code_tokens(path):
    """(kind, text, line) of every name and non-docstring string of a module."""
    source = path.read_text(encoding="utf-8")
    docstrings = _docstring_lines(source)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME:
            yield "name", token.string, token.start[0]
        elif token.type == tokenize.STRING and token.start[0] not in docstrings:
            yield "string", token.string, token.start[0]
        elif token.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            yield "string", token.string, token.start[0]


def _modules(outside):
    for path in sorted(DATA_GEN.rglob("*.py")):
        relative = path.relative_to(DATA_GEN)
        if not any(relative.parts[:len(room)] == room for room in outside):
            yield relative, path


def test_only_the_xlnet_room_and_the_registry_name_xlnet():
    bad = [f"data_gen/{relative}:{line}: {text}"
           for relative, path in _modules([("modes", "xlnet"), ("modes", "__init__.py")])
           for kind, text, line in _code_tokens(path) if "xlnet" in text.lower()]
    assert not bad, "name xlnet only in data_gen/modes/xlnet/ (ask data_gen.modes):\n" + \
        "\n".join(bad)


def test_only_the_modes_room_names_the_masked_lm_modes():
    bad = []
    for relative, path in _modules([("modes",)]):
        for kind, text, line in _code_tokens(path):
            value = text.strip("\"'rbfuRBFU")
            if (kind == "name" and re.search("roberta|albert", text, re.I)) or (
                    kind == "string" and MLM_MODE_STRING.search(value)):
                bad.append(f"data_gen/{relative}:{line}: {text}")
    assert not bad, "name the masked-LM modes only in data_gen/modes/ (ask data_gen.modes):\n" \
        + "\n".join(bad)


@pytest.mark.parametrize("name", list(modes.MODES))
def test_every_mode_has_what_the_rest_of_data_gen_asks_for(name):
    mode = modes.get(name)
    assert mode.name == name and mode.sentence_task in ("none", "sop", "nsp")
    assert mode.required_names() and mode.summary in modes.mode_help()
    for hook in ("FLAGS", "flag_checks", "make_processor", "load_vocabulary", "report_lines",
                 "inspector"):
        assert hasattr(mode.room, hook), f"{mode.room.__name__} lacks {hook}"
    assert mode.room in modes.ROOMS


def test_an_unknown_mode_is_refused_naming_the_modes():
    with pytest.raises(ValueError, match="choose one of " + ", ".join(modes.MODES)):
        modes.get("gpt")
