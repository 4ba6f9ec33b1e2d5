"""warmup_stable_decay's plateau checkpoint (pretrain.training.plateau_checkpoint): a run keeps
the state at the end of its stable phase outside checkpoint rotation; a later run started
from it with --resume_from replays the decay exactly (branch) or trains longer at the peak
(continue); bad schedules and starting points are refused in one line, before training."""
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.training import input_state, lr_schedules, plateau_checkpoint, training_hooks
from pretrain.training import strategy as strategy_lib
from pretrain.training.training_loop import TrainingLoop
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 4
PEAK = 1e-3
# 8 updates: 2 of warmup, 3 stable, 3 of linear decay; the plateau is the state after 5.
WSD = dict(lr_scheduler_type="warmup_stable_decay", num_train_steps=8, num_warmup_steps=2,
           num_decay_steps=3, decay_type="linear", learning_rate=PEAK)


def _options(data, output_dir, **changes):
    config, records = data
    options = dict(WSD, bert_config_file=config, input_file=records, shuffle_buffer=16,
                   random_seed=5, keep_checkpoint_max=1, log_every_n_steps=100)
    options.update(changes)
    return run_options(SEQ, PREDS, BATCH, output_dir=output_dir, **options)


def _state(checkpoint):
    """{name: value} of a checkpoint (a prefix or a directory's latest), without the
    serialized iterator (whose bytes are not a training state)."""
    if tf.io.gfile.isdir(checkpoint):
        checkpoint = tf.train.latest_checkpoint(checkpoint)
    reader = tf.train.load_checkpoint(checkpoint)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != input_state.STATE_NAME}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wsd_data")
    return (tiny_config(folder / "cfg.json", dropout=0.1),
            write_records(folder / "r.tfrecord",
                          make_examples(40, sentence_task="none", seed=3), mode="roberta"))


@pytest.fixture(scope="module")
def wsd_run(data, tmp_path_factory):
    """The session loop's WSD run of 8 updates, checkpoints every step, only one kept."""
    output_dir = tmp_path_factory.mktemp("wsd") / "run"
    run_pretraining.run(_options(data, output_dir, training_loop="session",
                                 save_checkpoints_steps=1))
    return output_dir


def test_a_wsd_run_keeps_its_plateau_outside_rotation(wsd_run):
    plateau = tf.train.latest_checkpoint(str(wsd_run / "plateau"))
    assert plateau == str(wsd_run / "plateau" / "model.ckpt-5")
    state = _state(plateau)
    assert int(state["global_step"]) == 5
    assert any(name.endswith("/adam_m") for name in state)
    assert tf.train.load_variable(plateau, input_state.STATE_NAME)  # the input position
    assert int(state[input_state.SEED_NAME]) == 5
    files = os.listdir(wsd_run / "plateau")
    shards = [name for name in files if name.startswith("model.ckpt-5.data-")]
    assert shards and sorted(set(files) - set(shards)) == [
        "bert_config.json", "checkpoint", "model.ckpt-5.index"]
    # Rotation kept the last checkpoint only, and never saw the plateau.
    state_file = (wsd_run / "checkpoint").read_text(encoding="utf-8")
    assert "model.ckpt-8" in state_file and "plateau" not in state_file
    assert not list(wsd_run.glob("model.ckpt-5.*"))
    assert not [name for name in os.listdir(wsd_run) if name.startswith(".plateau")]


@pytest.mark.parametrize("loop,k", [("session", 2), ("estimator", 1)])
def test_a_branch_from_the_plateau_ends_with_the_original_runs_weights_bit_for_bit(
        data, tmp_path, loop, k):
    if loop == "estimator" and not strategy_lib.estimator_available():
        pytest.skip("tf.estimator is not in TensorFlow >= 2.16: the Estimator loop is tested "
                    "on the TensorFlow 2.15 runtime")
    # k micro-batches per update: the plateau is global step 5 * k.
    options = dict(training_loop=loop, gradient_accumulation_steps=k)
    run_pretraining.run(_options(data, tmp_path / "original", **options))
    assert tf.train.latest_checkpoint(str(tmp_path / "original" / "plateau")).endswith(
        f"-{5 * k}")
    result = run_pretraining.run(_options(data, tmp_path / "branch", **options,
                                          resume_from=str(tmp_path / "original" / "plateau")))
    assert result["global_step"] == 8 * k
    record = json.loads((tmp_path / "branch" / "resumed_from.json").read_text(encoding="utf-8"))
    assert record["checkpoint"].endswith(f"model.ckpt-{5 * k}")
    final, reference = _state(tmp_path / "branch"), _state(tmp_path / "original")
    assert sorted(final) == sorted(reference)
    for name in sorted(final):
        np.testing.assert_array_equal(final[name], reference[name], err_msg=name)


class _Rates(tf.train.SessionRunHook):
    """{global step: the learning rate its update used}."""

    def __init__(self, rates):
        self._rates = rates

    def begin(self):
        self._step_tensor = tf.train.get_global_step()
        self._rate = training_hooks.registered_log_tensors()["learning_rate"]

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._step_tensor))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._rate)

    def after_run(self, run_context, run_values):
        self._rates[self._step] = float(run_values.results)
        self._step += 1


def test_continuing_the_stable_phase_trains_at_the_peak_past_the_old_plateau(
        data, wsd_run, tmp_path, monkeypatch):
    plateau = str(wsd_run / "plateau")
    longer = _options(data, tmp_path / "longer", training_loop="session", num_train_steps=11,
                      resume_from=plateau)
    with pytest.raises(UserError, match=r"the run in .*plateau \(step 5\) was trained with "
                       r"another schedule: --num_train_steps=11 \(was 8\); .*"
                       r"--allow_schedule_change"):
        run_pretraining.run(longer)
    assert tf.train.latest_checkpoint(str(tmp_path / "longer")) is None  # nothing copied

    rates = {}
    original_train = TrainingLoop.train
    monkeypatch.setattr(TrainingLoop, "train", lambda self, input_fn, max_steps, hooks=(), **kw:
                        original_train(self, input_fn, max_steps, list(hooks) + [_Rates(rates)],
                                       **kw))
    result = run_pretraining.run(dict(longer, allow_schedule_change=True))
    assert result["global_step"] == 11 and sorted(rates) == list(range(5, 11))
    scheduler = lr_schedules.Scheduler("warmup_stable_decay", 3, "linear", 0.0)
    # The new decay starts at update 11 - 3 = 8: updates 5-8 at the peak, then 2/3, 1/3.
    np.testing.assert_array_equal([rates[step] for step in range(5, 9)], np.float32(PEAK))
    np.testing.assert_allclose([rates[9], rates[10]], [PEAK * 2 / 3, PEAK / 3], rtol=1e-6)
    assert lr_schedules.plateau_update(scheduler, 11) == 8
    assert tf.train.latest_checkpoint(str(tmp_path / "longer" / "plateau")).endswith("-8")
    # Rerunning the same command continues this run; another start into it is refused.
    again = run_pretraining.run(dict(longer, allow_schedule_change=True, num_train_steps=12,
                                     num_decay_steps=4))
    assert again["global_step"] == 12
    with pytest.raises(UserError, match=r"--resume_from=.*: --output_dir=.* already holds a "
                       r"run .*; give a new --output_dir"):
        run_pretraining.run(dict(longer, resume_from=str(tmp_path)))


@pytest.mark.parametrize("changes,message", [
    (dict(num_warmup_steps=4, num_decay_steps=5),
     r"^--num_warmup_steps=4 \+ --num_decay_steps=5 exceed --num_train_steps=8: "),
    (dict(min_lr_ratio=2.0), r"^--min_lr_ratio=2.0 must be within \[0, 1\]"),
    (dict(lr_scheduler_type="polynomial"), r"^--num_decay_steps is read by "
     r"--lr_scheduler_type=warmup_stable_decay only, not polynomial"),
    (dict(lr_scheduler_type="cosine", num_decay_steps=None),
     r"^--decay_type is read by --lr_scheduler_type=warmup_stable_decay only, not cosine"),
    (dict(resume_from="RUN_DIR"), r"^--resume_from=.*run holds no checkpoint: give the "
     r"plateau/ directory"),
])
def test_bad_schedules_and_starting_points_are_refused_before_training(
        data, tmp_path, changes, message):
    changes = {key: str(tmp_path / "run") if value == "RUN_DIR" else value
               for key, value in changes.items()}
    with pytest.raises(UserError, match=message) as refusal:
        run_pretraining.run(_options(data, tmp_path / "out", training_loop="session", **changes))
    assert "\n" not in str(refusal.value)
    assert tf.train.latest_checkpoint(str(tmp_path / "out")) is None


class _Killed(Exception):
    """Stands for a kill between writing the plateau and renaming it."""


def test_a_plateau_is_renamed_into_place_whole_and_replaced_only_when_the_new_one_is(
        tmp_path, monkeypatch):
    def save_plateau_at(step_value, weight):
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            tf.get_variable("w", initializer=float(weight))
            hook = plateau_checkpoint.PlateauSaverHook(str(tmp_path), step_value)
            hook.begin()
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                session.run(step.assign(step_value))
                hook.after_create_session(session, None)  # a run that starts at its plateau

    def killed_rename(source, target, overwrite=False):
        raise _Killed(source)

    plateau = str(tmp_path / "plateau")
    with monkeypatch.context() as patch:
        patch.setattr(tf.io.gfile, "rename", killed_rename)
        with pytest.raises(_Killed):
            save_plateau_at(3, 1.0)
    assert not os.path.exists(plateau)  # only the hidden staging folder is left
    save_plateau_at(3, 1.0)
    assert tf.train.load_variable(plateau, "w") == 1.0
    with monkeypatch.context() as patch:  # killed before the new one is in place: the old stays
        patch.setattr(tf.io.gfile, "rename", killed_rename)
        with pytest.raises(_Killed):
            save_plateau_at(4, 2.0)
    assert tf.train.latest_checkpoint(plateau).endswith("-3")
    save_plateau_at(4, 2.0)
    assert tf.train.latest_checkpoint(plateau).endswith("-4")
    assert tf.train.load_variable(plateau, "w") == 2.0
    assert sorted(name for name in os.listdir(tmp_path) if "plateau" in name) == ["plateau"]
