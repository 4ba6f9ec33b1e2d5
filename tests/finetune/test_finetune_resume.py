"""A fine-tuning run killed mid-training and rerun with the same settings resumes from its
last checkpoint (weights, optimizer, input position, the dev scorings so far) and ends as the
run never killed: the same best step, dev and test scores, curve, predictions and best/
weights. Other settings are refused in one line; compare resumes its interrupted runs."""
import json
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from finetune import compare, run_finetune
from tests.testutil.finetune_task import fast_settings, trained_run
from tests.testutil.resume_runs import Crash, instrument


@pytest.fixture
def trained(tmp_path_factory):
    """The shared run from random initialisation (test_finetune's): the unkilled run."""
    return trained_run(tmp_path_factory)


def test_a_killed_run_resumes_and_ends_as_the_unkilled_run(trained, tmp_path, monkeypatch):
    task, straight_dir, straight, _ = trained
    settings = fast_settings(task, tmp_path / "killed")  # the unkilled run's settings
    steps = {}
    instrument(monkeypatch, steps, crash_after=150)  # its last checkpoint: step 100
    with pytest.raises(Crash):
        run_finetune.run(settings, log_fn=lambda message: None)
    monkeypatch.undo()
    killed_dir = tmp_path / "killed"
    state = json.loads((killed_dir / "dev_state.json").read_text(encoding="utf-8"))
    assert [point["step"] for point in state["curve"]] == [0, 100]
    assert not (killed_dir / "results.json").exists()

    with pytest.raises(UserError, match=r"holds an unfinished run with other settings: "
                                        r"--learning_rate=0.001 \(was 0.003\); rerun with its "
                                        r"settings to resume it, or pass --overwrite_output_dir"):
        run_finetune.run(dict(settings, learning_rate=1e-3), log_fn=lambda message: None)

    messages, resumed_steps = [], {}
    instrument(monkeypatch, resumed_steps)
    resumed = run_finetune.run(settings, log_fn=messages.append)
    assert any(m.startswith(f"resuming the unfinished run in {killed_dir} at step 100")
               for m in messages)
    assert min(resumed_steps) == 100  # no step before the checkpoint trained again
    scored = [int(m.split(":")[0].split()[1]) for m in messages if re.match(r"step \d+: dev", m)]
    assert scored == [200, 300]  # the scorings before the kill were taken up, not redone
    assert resumed["resumed_from_step"] == 100
    for key in ("best_step", "dev_accuracy", "test_accuracy", "dev_curve", "num_train_steps"):
        assert resumed[key] == straight[key], key
    for name in ("test_predictions.jsonl", "dev_predictions.jsonl", "eval_results.txt"):
        assert (killed_dir / name).read_bytes() == (straight_dir / name).read_bytes(), name
    best = tf.train.load_checkpoint(str(killed_dir / "best"))
    want = tf.train.load_checkpoint(str(straight_dir / "best"))
    names = sorted(want.get_variable_to_shape_map())
    assert sorted(best.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_array_equal(best.get_tensor(name), want.get_tensor(name), err_msg=name)


def test_compare_resumes_an_interrupted_comparison_run_by_run(trained, tmp_path, monkeypatch):
    task = trained[0]
    common = fast_settings(task, "unused", max_train_examples=64, num_train_epochs=1,
                           eval_every_steps=1)  # 2 steps, a checkpoint after each
    del common["output_dir"]
    out = str(tmp_path / "comparison")
    instrument(monkeypatch, {}, crash_after=0)  # killed after the checkpoint of step 1
    with pytest.raises(Crash):
        compare.compare(["random init="], common, out, seeds=[3], log_fn=lambda m: None)
    monkeypatch.undo()
    printed = []
    comparison = compare.compare(["random init="], common, out, seeds=[3],
                                 bootstrap_samples=50, log_fn=printed.append)
    run_dir = f"{out}/runs/1-random_init/seed3"
    assert (f"== run 1 of 1: random init, seed 3: resuming the interrupted run in {run_dir}"
            in printed)
    assert any(m.startswith(f"resuming the unfinished run in {run_dir} at step 1")
               for m in printed)
    (row,) = comparison["runs"][0]["per_seed"]
    assert [point["step"] for point in row["dev_curve"]] == [0, 1, 2]
    results = json.loads(open(f"{run_dir}/results.json", encoding="utf-8").read())
    assert results["resumed_from_step"] == 1 and results["num_train_steps"] == 2
