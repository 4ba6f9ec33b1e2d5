"""Every experiment runner's dry run (and refusal) prints today's commands: the output of each
case of golden_cases equals its golden file, recorded from the bash scripts before their
logic moved into experiments/ (git log tests/experiments/golden: the general models' config
paths corrected since)."""
import pytest

from tests.experiments.golden_cases import CASES, GOLDENS, RECIPES


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dry_run_equals_its_golden_file(name):
    GOLDENS.check(name)


def test_every_golden_file_has_its_case():
    assert GOLDENS.unpinned() == set()
    assert {f"from_scratch_{recipe}" for recipe in RECIPES} <= set(CASES)
