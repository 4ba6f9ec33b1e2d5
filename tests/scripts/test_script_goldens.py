"""The stage scripts (finetune.sh, lcqmc_finetune.sh) print and run today's commands and
refuse today's input: the output of each case of golden_cases equals its golden file,
recorded from the bash scripts before their logic moved into Python."""
import pytest

from tests.scripts import golden_cases
from tests.testutil import script_goldens


@pytest.mark.parametrize("name", sorted(golden_cases.CASES))
def test_the_run_equals_its_golden_file(name):
    reason = script_goldens.skip_reason(golden_cases.CASES[name])
    if reason:
        pytest.skip(reason)
    golden = golden_cases.golden_path(name).read_text(encoding="utf-8")
    assert golden.startswith("exit ")
    assert golden_cases.run_case(name) == golden


def test_every_golden_file_has_its_case():
    names = {path.stem for path in golden_cases.GOLDEN_DIR.glob("*.txt")}
    assert names == set(golden_cases.CASES)
