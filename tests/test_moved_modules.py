"""Code written against the paths before pretrain/ had rooms keeps working: `from pretrain
import modeling` (as google-research/bert's users import `modeling`), `import
pretrain.optimization`, `from pretrain.heads import *` reach the moved modules."""
import importlib
import subprocess
import sys

import pytest

from cli_testutil import REPO_ROOT, tool_env
from pretrain import moved_modules


def test_every_old_path_reaches_its_new_module():
    for old, new in moved_modules.MOVED.items():
        moved = importlib.import_module(new)
        alias = importlib.import_module(old)
        public = [name for name in vars(moved) if not name.startswith("_")]
        assert public and all(getattr(alias, name) is getattr(moved, name) for name in public)
        assert alias.__all__ == list(getattr(moved, "__all__", None) or public)


def test_the_import_forms_users_wrote_work_in_a_fresh_interpreter(tmp_path):
    script = (
        "from pretrain import modeling\n"
        "from pretrain.models.bert import modeling as new\n"
        "assert modeling.BertModel is new.BertModel and modeling.BertConfig is new.BertConfig\n"
        "from pretrain.models import modeling as before_the_family_folder\n"
        "assert before_the_family_folder.AlbertModel is new.AlbertModel\n"
        "import pretrain.models.masked_lm_pretraining as objective\n"
        "from pretrain.models.bert import pretraining\n"
        "assert objective.masked_lm_pretraining_losses is "
        "pretraining.masked_lm_pretraining_losses\n"
        "import pretrain.optimization\n"
        "from pretrain.training import optimization\n"
        "assert pretrain.optimization.create_optimizer is optimization.create_optimizer\n"
        "from pretrain.heads import *\n"
        "from pretrain.models import heads\n"
        "assert get_masked_lm_output is heads.get_masked_lm_output\n"
        "try:\n"
        "    from pretrain import not_a_module\n"
        "except ImportError as error:\n"
        "    assert 'not_a_module' in str(error)\n"
        "else:\n"
        "    raise AssertionError('an unknown name imported')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=tool_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_aliases_name_only_modules_that_moved():
    for old in moved_modules.MOVED:
        assert not REPO_ROOT.joinpath(*old.split(".")).with_suffix(".py").exists(), old
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        moved_modules.alias("nothing")
