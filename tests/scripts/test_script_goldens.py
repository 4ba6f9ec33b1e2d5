"""The stage scripts (finetune.sh, lcqmc_finetune.sh, create_pretrain_data.sh, pretrain.sh)
print and run today's commands and refuse today's input: the output of each case of
golden_cases equals its golden file, recorded from the bash scripts before their logic moved
into Python."""
import pytest

from tests.scripts.golden_cases import CASES, GOLDENS


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_run_equals_its_golden_file(name):
    GOLDENS.check(name)


def test_every_golden_file_has_its_case():
    assert GOLDENS.unpinned() == set()
