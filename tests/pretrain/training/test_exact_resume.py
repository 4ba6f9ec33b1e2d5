"""A run stopped at any step and rerun with the same options ends where the unstopped run
ends: the input position and the seed live in the checkpoint (pretrain.training.input_state)
and every training draw is stateless (pretrain.models.random_draws).

In process, for each family and data mode, precision, accumulation and training loop: one
uninterrupted run_pretraining, then the same run crashed twice (an exception after a chosen
step, so no final save: what a kill leaves) and rerun each time. A hook hashes the batch
every step trains on; the resumed steps must train on the uninterrupted run's batches, step
for step, and end with its weights and Adam slots bit for bit (same graph, same kernels, same
restored values). The SIGKILL test of the command itself is test_resume.py.
"""
import hashlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain import run_pretraining
from pretrain.training import estimator_runtime, input_state
from pretrain.training import strategy as strategy_lib
from pretrain.training.training_loop import TrainingLoop
from pretrain_testdata import (make_examples, make_span_examples, make_xlnet_examples,
                               run_options, tiny_config, tiny_xlnet_config, write_records,
                               write_xlnet_records)

SEQ, PREDS, BATCH, STEPS = 16, 4, 4, 12


class _Crash(Exception):
    """Raised by the recorder after the crash step: the run stops without its final save."""


class _Recorder(tf.train.SessionRunHook):
    """Hashes each step's batch (the training iterator's get_next outputs); raises _Crash
    after step `crash_after` (global step numbering)."""

    def __init__(self, batches, crash_after=None):
        self._batches, self._crash_after = batches, crash_after

    def begin(self):
        get_next = [op for op in tf.get_default_graph().get_operations()
                    if op.type == "IteratorGetNext"]
        assert len(get_next) == 1, [op.name for op in get_next]
        self._outputs = list(get_next[0].outputs)
        self._step_tensor = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._step_tensor))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._outputs)

    def after_run(self, run_context, run_values):
        digest = hashlib.sha256()
        for value in run_values.results:
            digest.update(np.ascontiguousarray(value).tobytes())
        self._batches[self._step] = digest.hexdigest()
        if self._step == self._crash_after:
            raise _Crash(self._step)
        self._step += 1


_TRAIN = {TrainingLoop: TrainingLoop.train,
          estimator_runtime.PositionSavingEstimator:
              estimator_runtime.PositionSavingEstimator.train}


def _instrument(monkeypatch, batches, crash_after=None):
    """Both loops' train() run one recorder (this one) too."""
    def wrap(original):
        def train(self, input_fn, hooks=None, max_steps=None, saving_listeners=None, **kw):
            hooks = list(hooks or ()) + [_Recorder(batches, crash_after)]
            return original(self, input_fn, hooks=hooks, max_steps=max_steps,
                            saving_listeners=saving_listeners or (), **kw)
        return train
    for cls, original in _TRAIN.items():
        monkeypatch.setattr(cls, "train", wrap(original))


def _state(output_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != input_state.STATE_NAME}


CASES = {
    # BERT records with NSP labels, dropout, fp16 loss scaling, 2 micro-steps per update:
    # the second crash falls inside an accumulation cycle.
    "bert-fp16-k2": dict(family="bert", precision="fp16", gradient_accumulation_steps=2),
    "roberta-span": dict(family="span", span_boundary_objective=True),
    "electra": dict(family="electra"),  # replacements sampled at temperature 1
    "xlnet": dict(family="xlnet"),  # permutations drawn in the input pipeline
    "bert-estimator": dict(family="bert", training_loop="estimator"),
}


def _data(tmp_path, family):
    if family == "xlnet":
        return (tiny_xlnet_config(tmp_path / "cfg.json", dropout=0.1, dropatt=0.1),
                write_xlnet_records(tmp_path / "x.tfrecord",
                                    make_xlnet_examples(40, SEQ, 8, PREDS, seed=3)))
    if family == "span":
        return (tiny_config(tmp_path / "cfg.json", dropout=0.1),
                write_records(tmp_path / "s.tfrecord", make_span_examples(40, seed=3),
                              mode="roberta", masking="span", has_span_boundaries=True))
    extra = dict(model_type="electra", embedding_size=16,
                 generator_hidden_size=0.5) if family == "electra" else {}
    mode = "roberta" if family == "electra" else "bert"
    examples = make_examples(40, sentence_task="none" if mode == "roberta" else "nsp", seed=3)
    return (tiny_config(tmp_path / "cfg.json", dropout=0.1, **extra),
            write_records(tmp_path / "r.tfrecord", examples, mode=mode))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crashed_and_rerun_run_trains_on_the_same_batches_to_the_same_weights(
        tmp_path, monkeypatch, case):
    settings = dict(CASES[case])
    family = settings.pop("family")
    if settings.get("training_loop") == "estimator" and not strategy_lib.estimator_available():
        pytest.skip("tf.estimator is not in TensorFlow >= 2.16: the Estimator loop is tested "
                    "on the TensorFlow 2.15 runtime")
    config, records = _data(tmp_path, family)
    k = settings.get("gradient_accumulation_steps", 1)
    options = dict(bert_config_file=config, input_file=records, learning_rate=1e-3,
                   num_train_steps=STEPS // k, num_warmup_steps=2, shuffle_buffer=16,
                   random_seed=5, save_checkpoints_steps=2 // k or 1, keep_checkpoint_max=50,
                   log_every_n_steps=100, **settings)
    if family == "xlnet":
        options.update(max_seq_length=None, max_predictions_per_seq=None)

    straight = {}
    _instrument(monkeypatch, straight)
    run_pretraining.run(run_options(SEQ, PREDS, BATCH, output_dir=tmp_path / "straight",
                                    **options))
    assert sorted(straight) == list(range(STEPS))
    assert len(set(straight.values())) > STEPS // 2  # the batches differ: order matters

    start = 0
    for crash_after in (4, 9, None):  # a crash inside an accumulation cycle, one at its end
        segment = {}
        _instrument(monkeypatch, segment, crash_after)
        try:
            run_pretraining.run(run_options(SEQ, PREDS, BATCH, output_dir=tmp_path / "killed",
                                             **options))
        except _Crash:
            pass
        assert min(segment) == start  # it resumed from the latest checkpoint's step ...
        for step in sorted(segment):  # ... and trained on the straight run's batches
            assert segment[step] == straight[step], (case, step)
        start = int(tf.train.load_variable(str(tmp_path / "killed"), "global_step"))
        assert start <= max(segment) + 1
    assert start == STEPS

    final, reference = _state(tmp_path / "killed"), _state(tmp_path / "straight")
    assert int(final["global_step"]) == STEPS and sorted(final) == sorted(reference)
    assert any(name.endswith("/adam_m") for name in final)
    for name in sorted(final):
        np.testing.assert_array_equal(final[name], reference[name], err_msg=name)
