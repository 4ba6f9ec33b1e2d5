"""Every experiment runner's dry run (and refusal) prints today's commands: the output of each
case of golden_cases equals its golden file, recorded from the bash scripts before their
logic moved into experiments/ (git log tests/experiments/golden: the general models' config
paths corrected since)."""
import pytest

from tests.experiments import golden_cases
from tests.testutil import script_goldens


@pytest.mark.parametrize("name", sorted(golden_cases.CASES))
def test_the_dry_run_equals_its_golden_file(name):
    reason = script_goldens.skip_reason(golden_cases.CASES[name])
    if reason:
        pytest.skip(reason)
    golden = golden_cases.golden_path(name).read_text(encoding="utf-8")
    assert golden.startswith("exit ")
    assert golden_cases.run_case(name) == golden


def test_every_golden_file_has_its_case():
    names = {path.stem for path in golden_cases.GOLDEN_DIR.glob("*.txt")}
    assert names == set(golden_cases.CASES)
    assert {name for name in names if name.startswith("from_scratch_")} >= {
        f"from_scratch_{recipe}" for recipe in golden_cases.RECIPES}
