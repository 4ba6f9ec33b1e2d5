"""A run stopped at any step and rerun with the same options ends where the unstopped run
ends: the input position and the seed live in the checkpoint (pretrain.training.input_state)
and every training draw is stateless (pretrain.models.random_draws).

In process, for each family and data mode, precision, accumulation and training loop: one
uninterrupted run_pretraining, then the same run crashed (an exception after a chosen step,
so no final save: what a kill leaves) and rerun. A hook hashes the batch
every step trains on; the resumed steps must train on the uninterrupted run's batches, step
for step, and end with its weights and Adam slots bit for bit (same graph, same kernels, same
restored values). The SIGKILL test of the command itself is test_resume.py.
"""
import logging

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.training import input_state
from pretrain.training import strategy as strategy_lib
from tests.testutil.resume_runs import Crash, instrument
from tests.testutil.pretrain_data import (
    UNMASKED_SIDECAR, make_examples, make_span_examples, make_unmasked_examples,
    make_xlnet_examples, run_options, tiny_config, tiny_xlnet_config, write_records,
    write_xlnet_records)

SEQ, PREDS, BATCH, STEPS = 16, 4, 4, 8


def _state(output_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != input_state.STATE_NAME}


CASES = {
    # SpanBERT records (span boundaries parsed), dropout, fp16 loss scaling, 2 micro-steps per
    # update: the crash falls inside an accumulation cycle.
    "span-fp16-k2": dict(family="span", span_boundary_objective=True, precision="fp16",
                         gradient_accumulation_steps=2),
    # replacements sampled at temperature 1, on data_gen --train_time_masking records: whole-word
    # masks drawn in the input pipeline, at a rate moving from 0.3 to 0.15
    "electra-train-time-masking": dict(family="electra", mlm_probability=0.3,
                                       final_mlm_probability=0.15),
    "xlnet": dict(family="xlnet"),  # permutations drawn in the input pipeline
    "bert-estimator": dict(family="bert", training_loop="estimator"),  # NSP records
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
    if family == "electra":
        return (tiny_config(tmp_path / "cfg.json", dropout=0.1, model_type="electra",
                            embedding_size=16, generator_hidden_size=0.5),
                write_records(tmp_path / "u.tfrecord", make_unmasked_examples(40, SEQ, seed=3),
                              mode="roberta", **UNMASKED_SIDECAR))
    return (tiny_config(tmp_path / "cfg.json", dropout=0.1),
            write_records(tmp_path / "r.tfrecord", make_examples(40, sentence_task="nsp",
                                                                 seed=3), mode="bert"))


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
    if family in ("xlnet", "electra"):  # lengths from the data (and the masking rate)
        options.update(max_seq_length=None, max_predictions_per_seq=None)

    straight = {}
    instrument(monkeypatch, straight)
    run_pretraining.run(run_options(SEQ, PREDS, BATCH, output_dir=tmp_path / "straight",
                                    **options))
    assert sorted(straight) == list(range(STEPS))
    assert len(set(straight.values())) > STEPS // 2  # the batches differ: order matters

    start = 0
    for crash_after in (4, None):  # after the first micro-step of the cycle of steps 4-5
        segment = {}
        instrument(monkeypatch, segment, crash_after)
        try:
            run_pretraining.run(run_options(SEQ, PREDS, BATCH, output_dir=tmp_path / "killed",
                                             **options))
        except Crash:
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


def test_a_rerun_with_another_input_or_schedule_stops_and_names_the_flag_that_accepts_it(
        tmp_path, caplog, monkeypatch):
    config, records = _data(tmp_path, "bert")
    options = run_options(SEQ, PREDS, BATCH, bert_config_file=config, input_file=records,
                          output_dir=tmp_path / "run", num_train_steps=6, shuffle_buffer=16,
                          random_seed=5, save_checkpoints_steps=2, learning_rate=1e-3)
    instrument(monkeypatch, {}, crash_after=1)  # stopped with a checkpoint of step 2
    with pytest.raises(Crash):
        run_pretraining.run(options)
    monkeypatch.undo()
    refusals = {
        "random_seed": (dict(random_seed=6), r"--random_seed=6, but the run in .* was started "
                        r"with seed 5 .*: rerun with --random_seed=5, without --random_seed"),
        "batch": (dict(train_batch_size=8), r"saved its input position at step 2 for another "
                  r"input: --train_batch_size=8 \(was 4\); rerun with its values, or add "
                  r"--ignore_data_skip"),
        "schedule": (dict(learning_rate=2e-3, num_warmup_steps=1),
                     r"another schedule: --learning_rate=0.002 \(was 0.001\), "
                     r"--num_warmup_steps=1 \(was 0\); .* add --allow_schedule_change"),
    }
    for name, (changes, message) in refusals.items():
        with pytest.raises(UserError, match=message):
            run_pretraining.run(dict(options, **changes))
    # Accepted on purpose: the input read from a new start, in an order seeded by the step.
    caplog.set_level(logging.INFO)
    instrument(monkeypatch, {}, crash_after=3)  # stopped after its checkpoint of step 4
    with pytest.raises(Crash):
        run_pretraining.run(dict(options, train_batch_size=8, learning_rate=2e-3,
                                 ignore_data_skip=True, allow_schedule_change=True))
    monkeypatch.undo()
    assert "resumed at step 2; the input is read from a new start" in caplog.text
    assert "read again from its start, in a new order (seed 7)" in caplog.text
    # The next rerun compares with what that run saved: unchanged, it continues exactly.
    caplog.clear()
    run_pretraining.run(dict(options, train_batch_size=8, learning_rate=2e-3))
    assert "resumed at step 4, input position restored" in caplog.text
    assert int(tf.train.load_variable(str(tmp_path / "run"), "global_step")) == 6
