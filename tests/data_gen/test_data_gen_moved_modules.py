"""Code written against data_gen's flat paths keeps working: `from data_gen import
tokenization` (as google-research/bert's users import `tokenization`), `import
data_gen.masking`, `from data_gen.tokenization import FullTokenizer` reach the moved
modules (data_gen.moved_modules), and the old `python -m` paths are kept files."""
import importlib
import sys

from cli_testutil import REPO_ROOT, run_parallel
from data_gen import moved_modules


def test_every_old_path_reaches_its_new_module():
    for old, new in moved_modules.MOVED.items():
        assert not REPO_ROOT.joinpath(*old.split(".")).with_suffix(".py").exists(), old
        moved = importlib.import_module(new)
        alias = importlib.import_module(old)
        public = [name for name in vars(moved) if not name.startswith("_")]
        assert public and all(getattr(alias, name) is getattr(moved, name) for name in public)


def test_the_import_forms_users_wrote_work_in_a_fresh_interpreter(tmp_path):
    script = (
        "from data_gen import tokenization\n"
        "from data_gen.text import tokenization as new\n"
        "assert tokenization.FullTokenizer is new.FullTokenizer\n"
        "import data_gen.masking\n"
        "from data_gen.modes.mlm import masking\n"
        "assert data_gen.masking.MaskingConfig is masking.MaskingConfig\n"
        "from data_gen.record_schema import FEATURES\n"
        "from data_gen.records.record_schema import FEATURES as features\n"
        "assert FEATURES is features\n"
        "from data_gen.build_vocab import main\n"
        "from data_gen.tools import build_vocab\n"
        "assert main is build_vocab.main\n"
        "import data_gen, pytest\n"
        "with pytest.raises(ImportError, match='not_a_module'):\n"
        "    from data_gen import not_a_module\n"
        "with pytest.raises(AttributeError, match=\"no attribute 'nothing'\"):\n"
        "    data_gen.nothing\n")
    code, _, err, _ = run_parallel({"imports": [sys.executable, "-c", script]}.items(),
                                   tmp_path)["imports"]
    assert code == 0, err[-3000:]

