"""bench/parity_table.py renders the parity bench's JSON lines; a comparison in which every
seed collapsed on both sides gets no parity verdict."""
import importlib.util
import json

from tests.testutil.cli_runs import REPO_ROOT


def _parity_table():
    spec = importlib.util.spec_from_file_location("parity_table",
                                                  REPO_ROOT / "bench" / "parity_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _metrics(init, ours, theirs, ours_collapsed, theirs_collapsed, interval):
    return {"kind": "metrics", "task": "ner", "init": init, "bias_correction": False,
            "metric": "f1", "seeds": [1, 2, 3], "ours": ours, "theirs": theirs,
            "ours_mean_std": {"mean": sum(ours) / 3, "std": 0.01},
            "theirs_mean_std": {"mean": sum(theirs) / 3, "std": 0.01},
            "ours_collapsed": ours_collapsed, "theirs_collapsed": theirs_collapsed,
            "difference": (sum(ours) - sum(theirs)) / 3, "interval": interval,
            "parity": interval[0] <= 0 <= interval[1]}


def test_collapsed_on_both_sides_is_no_comparison(tmp_path):
    table = _parity_table()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(_metrics("random", [0.2, 0.3, 0.25], [0.2, 0.3, 0.3],
                                         [False] * 3, [False] * 3, [-0.04, 0.01])) + "\n")
    second.write_text(
        json.dumps(_metrics("pretrained", [0.0] * 3, [0.0] * 3, [True] * 3, [True] * 3,
                            [0.0, 0.0])) + "\n"
        + json.dumps(_metrics("random", [0.2, 0.3, 0.25], [0.3, 0.4, 0.3], [False] * 3,
                              [True, False, False], [-0.1, -0.03])) + "\n")
    lines = table.render(table._rows([str(first), str(second)])).splitlines()
    pretrained = next(line for line in lines if "| ner | pretrained |" in line)
    assert pretrained.endswith("| 3 / 3 | +0.00 [+0.00, +0.00] | no comparison: every seed "
                               "collapsed on both sides |")
    # The later file's line for the same comparison wins: one collapsed seed, parity "no".
    (random,) = [line for line in lines if "| ner | random |" in line]
    assert random.endswith("| 0 / 1 | -8.33 [-10.00, -3.00] | no |")
