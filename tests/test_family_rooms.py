"""A model family is a plug-in: outside its own folder (pretrain/models/<family>/), its data
mode's room (data_gen/modes/<mode>/) and the two registries that list them, no package
module names the family in code: identifiers, imports and string literals (docstrings and
comments may name it). Code that needs to know something about a family asks the model
registry (pretrain.models.registry) or the data-mode registry (data_gen.modes).

BERT and ALBERT are one folder (pretrain/models/bert/); their names are also Google's
variable scopes and flag names (`bert/...`, --bert_config_file), so the rule is checked for
the families with a folder of their own besides: ELECTRA and XLNet.
"""
import io
import pathlib
import tokenize

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("common", "data_gen", "pretrain", "finetune")
FAMILIES = {
    "electra": ("pretrain/models/electra/",),
    "xlnet": ("pretrain/models/xlnet/", "data_gen/modes/xlnet/"),
}
# The registries: one entry per family, by module path.
REGISTRIES = ("pretrain/models/registry.py", "common/model_families.py",
              "data_gen/modes/__init__.py", "data_gen/modes/registry.py")


def _code_tokens(text):
    """(line, token text) of every name and non-docstring string of a module's source."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    found = []
    previous = tokenize.NEWLINE
    for token in tokens:
        kind = token.type
        if kind == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.NL,
                                                    tokenize.INDENT, tokenize.DEDENT):
            previous = kind  # a statement that is only a string: a docstring
            continue
        if kind in (tokenize.NAME, tokenize.STRING):
            found.append((token.start[0], token.string))
        if kind not in (tokenize.COMMENT, tokenize.NL):
            previous = kind
    return found


def _leaks():
    leaks = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative in REGISTRIES:
                continue
            tokens = _code_tokens(path.read_text(encoding="utf-8"))
            for family, rooms in FAMILIES.items():
                if relative.startswith(rooms):
                    continue
                leaks += [f"{relative}:{line}: {text[:70]}" for line, text in tokens
                          if family in text.lower()]
    return leaks


def test_no_module_outside_a_family_room_names_the_family():
    leaks = _leaks()
    assert not leaks, ("family names outside their rooms (ask the registries instead):\n  "
                       + "\n  ".join(leaks))


def test_the_scan_sees_code_and_skips_docstrings_and_comments():
    source = ('"""XLNet in a docstring."""\n'
              "# xlnet in a comment\n"
              "def f():\n"
              '    """ELECTRA in a function docstring."""\n'
              '    return XLNET_MODE == "electra"\n')
    assert _code_tokens(source) == [(3, "def"), (3, "f"), (5, "return"), (5, "XLNET_MODE"),
                                    (5, '"electra"')]
