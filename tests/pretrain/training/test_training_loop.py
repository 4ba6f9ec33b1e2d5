"""The session loop (pretrain.training.training_loop) against the Estimator it replaces.

On TensorFlow 2.15 both run: seeded, dropout on, they must build the same graph and train
to the same weights, score the same evals and pick the same best fine-tuning step. On any
TensorFlow the loop must train, resume, evaluate and predict on its own.
"""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from finetune import run_finetune
from tests.testutil.finetune_task import fast_settings, write_task
from pretrain import run_pretraining
from pretrain.training import input_state
from pretrain.training import strategy as strategy_lib
from pretrain.training import training_hooks
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 8
needs_estimator = pytest.mark.skipif(not strategy_lib.estimator_available(),
                                     reason="compares with tf.estimator (TensorFlow <= 2.15)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("loop_data")
    return {"cfg": tiny_config(root / "cfg.json"),
            "records": write_records(root / "a.tfrecord", make_examples(4 * BATCH, seed=3))}


def _pretrain(data, out, loop, **kw):
    options = dict(bert_config_file=data["cfg"], input_file=data["records"], output_dir=out,
                   learning_rate=3e-3, num_train_steps=12, save_checkpoints_steps=5,
                   shuffle_buffer=16, do_eval=True, max_eval_steps=2, training_loop=loop)
    return run_pretraining.run(run_options(SEQ, PREDS, BATCH, **dict(options, **kw)))


def _weights(folder, step=None):
    """The checkpoint's tensors but the saved input iterator, whose bytes hold what tf.data's
    prefetch threads had buffered at the save (the resumed batches are test_exact_resume's)."""
    prefix = (os.path.join(folder, f"model.ckpt-{step}") if step is not None
              else tf.train.latest_checkpoint(folder))
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != input_state.STATE_NAME}


def _checkpoint_steps(folder):
    state = tf.train.get_checkpoint_state(folder)
    return sorted(int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths)


@needs_estimator
def test_the_loop_trains_to_the_estimators_weights(data, tmp_path):
    """Seeded (dropout, shuffling) pretraining, 12 steps with saves every 5: the same
    checkpoints, every variable and Adam slot equal, the same eval numbers."""
    runs = {loop: _pretrain(data, tmp_path / loop, loop) for loop in ("estimator", "session")}
    assert runs["session"]["training_loop"] == "session"
    assert runs["estimator"]["training_loop"] == "estimator"
    steps = {loop: _checkpoint_steps(tmp_path / loop) for loop in runs}
    assert steps["session"] == steps["estimator"] == [0, 5, 10, 12]
    for step in (5, 12):
        ours, theirs = _weights(tmp_path / "session", step), _weights(tmp_path / "estimator", step)
        assert sorted(ours) == sorted(theirs)
        assert any(name.endswith("/adam_m") for name in ours)
        for name in theirs:
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert runs["session"]["eval_results"] == runs["estimator"]["eval_results"]
    assert runs["session"]["global_step"] == 12


@needs_estimator
def test_fine_tuning_picks_the_same_best_step_with_either_loop(tmp_path):
    # 10 steps an epoch, dev scored 5 times (steps 4, 8, ..., 20): every scoring and the
    # choice among them compared, as small as that stays
    task = write_task(tmp_path / "task", sizes=(("train", 320), ("dev", 100), ("test", 100)))
    results = {loop: run_finetune.run(fast_settings(task, tmp_path / loop, num_train_epochs=2,
                                                 eval_every_steps=4, eval_batch_size=100,
                                                 training_loop=loop),
                                   log_fn=lambda message: None)
               for loop in ("estimator", "session")}
    ours, theirs = results["session"], results["estimator"]
    assert [point["step"] for point in ours["dev_curve"]] == [
        point["step"] for point in theirs["dev_curve"]]
    assert ours["dev_curve"] == theirs["dev_curve"]
    assert (ours["best_step"], ours["test"]) == (theirs["best_step"], theirs["test"])
    best = {loop: _weights(str(tmp_path / loop / "best")) for loop in results}
    for name, value in best["estimator"].items():
        np.testing.assert_array_equal(best["session"][name], value, err_msg=name)


def test_fine_tunings_auto_is_the_session_loop_unless_the_variable_says_otherwise(monkeypatch):
    monkeypatch.setattr(strategy_lib, "estimator_available", lambda: True)
    monkeypatch.delenv(strategy_lib.TRAINING_LOOP_VARIABLE, raising=False)
    assert strategy_lib.resolve_training_loop("auto", "cpu") == "estimator"  # pretraining's
    assert strategy_lib.resolve_training_loop("auto", "cpu", auto="session") == "session"
    assert strategy_lib.resolve_training_loop("auto", "tpu", auto="session") == "estimator"
    assert strategy_lib.resolve_training_loop("estimator", "cpu", auto="session") == "estimator"
    monkeypatch.setenv(strategy_lib.TRAINING_LOOP_VARIABLE, "estimator")
    assert strategy_lib.resolve_training_loop("auto", "cpu", auto="session") == "estimator"


def test_choices_this_runtime_cannot_run_are_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(strategy_lib, "estimator_available", lambda: False)
    with pytest.raises(UserError, match="--training_loop=estimator needs TensorFlow <= 2.15"):
        strategy_lib.resolve_training_loop("estimator", "cpu")
    assert strategy_lib.resolve_training_loop("auto", "cpu") == "session"
    with pytest.raises(UserError, match="--strategy=tpu runs on TPUEstimator only, which needs "
                                        "the TensorFlow 2.15 runtime"):
        strategy_lib.resolve_training_loop("auto", "tpu")
    assert strategy_lib.resolve_training_loop("auto", "multi_worker") == "session"
    assert strategy_lib.resolve_training_loop("session", "multi_worker") == "session"
    monkeypatch.setenv(strategy_lib.TRAINING_LOOP_VARIABLE, "fast")
    with pytest.raises(UserError, match="ZH_PRETRAIN_TRAINING_LOOP='fast' is not one of"):
        strategy_lib.resolve_training_loop("auto", "cpu")


@pytest.mark.parametrize("loop", strategy_lib.available_training_loops())
def test_either_loop_trains_without_checkpoints(data, tmp_path, loop):
    """No checkpoint saving (as the step benchmarks run): nothing to save the input position
    with, and the Estimator refuses saving listeners then: none is passed. FinalStepHook reads
    the step training ended at from the session, with no checkpoint to read it from (as a
    non-chief worker's result must)."""
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    from pretrain.training import input_pipeline, pretraining_model_fn  # pylint: disable=import-outside-toplevel
    config = registry.read_config(data["cfg"])
    model_fn = pretraining_model_fn.model_fn_builder(config, learning_rate=1e-3,
                                                     num_train_steps=2, num_warmup_steps=0)
    settings = strategy_lib.make_run_config("cpu", str(tmp_path), save_checkpoints_steps=None,
                                            save_summary_steps=None, log_step_count_steps=None)
    trainer = strategy_lib.build_trainer("cpu", model_fn, settings, train_batch_size=BATCH,
                                         training_loop=loop)
    final_step = training_hooks.FinalStepHook()
    trainer.train(input_pipeline.input_fn_builder(data["records"], SEQ, PREDS, True, seed=1),
                  max_steps=2, hooks=[final_step])
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert final_step.step == 2
