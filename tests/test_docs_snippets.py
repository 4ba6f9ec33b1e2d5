"""The README's and docs' Python stays importable: every `from X import Y` / `import X` of the
toolkit's packages they show, in code blocks or inline code, imports in a fresh interpreter
(transformers' and torch's lines are the user's environment, not ours)."""
import re
import subprocess
import sys

from tests.testutil.cli_runs import REPO_ROOT, tool_env

PACKAGES = ("common", "data_gen", "pretrain", "finetune")
IMPORT = re.compile(r"(?:^|`)\s*((?:from (%s)[\w.]* import [\w, ]+)|(?:import (%s)[\w.]*))\s*(?:$|`)"
                    % ("|".join(PACKAGES), "|".join(PACKAGES)), re.M)


def _documented_imports():
    found = {}
    for path in [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "docs").glob("*.md")):
        for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1).strip().rstrip(","), path.name)
    return found


def test_the_docs_show_imports_and_each_one_works():
    imports = _documented_imports()
    assert "from pretrain.models.bert import modeling" in imports  # the porting guide's line
    script = "\n".join(imports) + "\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=tool_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (sorted(imports.items()), done.stderr[-2000:])
