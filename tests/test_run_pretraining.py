"""End-to-end pretraining runs on tiny generated data (CPU, few steps)."""
import glob
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain import data_checks, run_pretraining
from pretrain_testdata import make_examples, rename_slots_to_legacy, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain_data")
    cfg = tiny_config(root / "cfg.json")
    fixed = write_records(root / "fixed.tfrecord", make_examples(BATCH, seed=7))
    return {"root": root, "cfg": cfg, "fixed": fixed}


def _opts(data, out, **kw):
    opts = dict(bert_config_file=data["cfg"], input_file=data["fixed"], output_dir=str(out),
                do_train=True, max_seq_length=SEQ, max_predictions_per_seq=PREDS,
                train_batch_size=BATCH, eval_batch_size=BATCH, learning_rate=3e-3,
                num_train_steps=30, num_warmup_steps=2, save_checkpoints_steps=1000,
                log_every_n_steps=5, random_seed=1, shuffle_buffer=0, max_eval_steps=1)
    opts.update(kw)
    return opts


def _summary_values(output_dir, tag):
    values = []
    for path in sorted(glob.glob(os.path.join(output_dir, "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    values.append((event.step, value.simple_value))
    return sorted(values)


def _ckpt(output_dir):
    return tf.train.load_checkpoint(output_dir)


def test_overfits_fixed_batch_and_writes_summaries_and_eval(data, tmp_path):
    const = dict(num_warmup_steps=0, poly_power=0.0)
    # 60 steps; the tiny model must memorise the fixed batch.
    straight = tmp_path / "straight"
    result = run_pretraining.run(_opts(data, straight, num_train_steps=60, do_eval=True, **const))
    assert result["global_step"] == 60 and result["sentence_head"] is True
    assert result["eval_results"]["masked_lm_accuracy"] > 0.95
    text = (straight / "eval_results.txt").read_text()
    written = dict(line.split(" = ") for line in text.splitlines())
    for key in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                "next_sentence_loss"):  # google-research/bert's names
        assert key in written
    assert written["sentence_accuracy"] == written["next_sentence_accuracy"]
    assert written["sentence_loss"] == written["next_sentence_loss"]
    losses = _summary_values(str(straight), "train/loss")
    assert len(losses) >= 5 and losses[-1][1] < 0.5 * losses[0][1]  # loss falls
    assert _summary_values(str(straight), "train/learning_rate")
    # Resuming (global step, optimizer state, input from the start): tests/test_resume.py.


def test_mismatched_data_stops_before_training(data, tmp_path):
    with pytest.raises(data_checks.DataCheckError,
                       match=r"fixed\.tfrecord\.meta\.json: max_predictions_per_seq=4 but "
                             r"--max_predictions_per_seq=6"):
        run_pretraining.run(_opts(data, tmp_path / "x", max_predictions_per_seq=6))
    assert not (tmp_path / "x").exists()  # failed before any graph or output


@pytest.mark.parametrize("precision,accumulation", [("fp16", 1), ("bf16", 2)])
def test_mixed_precision_and_accumulation_train(data, tmp_path, precision, accumulation):
    out = tmp_path / precision
    result = run_pretraining.run(_opts(data, out, num_train_steps=4, precision=precision,
                                       optimizer="lamb", train_batch_size=BATCH // accumulation,
                                       gradient_accumulation_steps=accumulation))
    assert result["precision"] == precision
    assert result["global_step"] == 4 * accumulation  # the global step counts micro-batches
    reader = _ckpt(str(out))
    kernel = reader.get_tensor("bert/encoder/layer_0/attention/self/query/kernel")
    assert kernel.dtype == np.float32 and np.all(np.isfinite(kernel))  # fp32 master weights
    m_slot = reader.get_tensor("bert/encoder/layer_0/attention/self/query/kernel/adam_m")
    assert np.abs(m_slot).max() > 0  # updates were applied
    names = reader.get_variable_to_shape_map()
    assert ("loss_scale/scale" in names) == (precision == "fp16")
    losses = _summary_values(str(out), "train/loss")
    assert losses and all(np.isfinite(v) for _, v in losses)


def test_roberta_data_turns_the_sentence_head_off(data, tmp_path):
    path = write_records(data["root"] / "roberta.tfrecord",
                         make_examples(BATCH, sentence_task="none"), mode="roberta")
    result = run_pretraining.run(_opts(data, tmp_path / "r", input_file=path, num_train_steps=2))
    assert result["sentence_head"] is False
    names = _ckpt(str(tmp_path / "r")).get_variable_to_shape_map()
    assert "cls/predictions/output_bias" in names
    assert not any(n.startswith("cls/seq_relationship") for n in names)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="unknown option"):
        run_pretraining.options_from({"no_such_flag": 1})
    with pytest.raises(ValueError, match="--do_train and/or --do_eval"):
        run_pretraining.run({"bert_config_file": "c", "output_dir": "o", "input_file": "i"})


def test_resumes_from_checkpoint_with_old_slot_names(data, tmp_path):
    # LAMB's old names (`/Lamb`, `/Lamb_1`) map the same way (test_checkpoint_compat.py).
    legacy = "AdamWeightDecay"
    const = dict(num_warmup_steps=0, poly_power=0.0)
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_pretraining.run(_opts(data, straight, num_train_steps=6, **const))
    run_pretraining.run(_opts(data, resumed, num_train_steps=3, **const))
    old_names = rename_slots_to_legacy(str(resumed), legacy)
    assert f"bert/pooler/dense/kernel/{legacy}_1" in old_names
    assert run_pretraining.run(_opts(data, resumed, num_train_steps=6, **const))[
        "global_step"] == 6
    a, b = _ckpt(str(straight)), _ckpt(str(resumed))
    names = b.get_variable_to_shape_map()
    assert "bert/pooler/dense/kernel/adam_v" in names  # written back under Google's names
    assert not [n for n in names if n.endswith((f"/{legacy}", f"/{legacy}_1"))]
    for name in a.get_variable_to_shape_map():  # equal only if m and v were restored
        if name.startswith(("bert/", "cls/")):
            np.testing.assert_allclose(b.get_tensor(name), a.get_tensor(name), rtol=1e-5,
                                       atol=1e-6, err_msg=name)


def test_ignore_invalid_weights_keeps_initial_values_of_mismatched_variables(data, tmp_path,
                                                                              capsys):
    """--init_checkpoint stops on a shape mismatch (one error, exit 2) unless
    --ignore_invalid_weights: then the table lists it and only that variable keeps its
    initial value."""
    source = tmp_path / "source"
    run_pretraining.run(_opts(data, source, num_train_steps=2))
    wider = tiny_config(tmp_path / "three_types.json", type_vocab_size=3)
    argv = ["run_pretraining", f"--bert_config_file={wider}", f"--input_file={data['fixed']}",
            f"--output_dir={tmp_path / 'refused'}", "--do_train", "--num_train_steps=1",
            f"--train_batch_size={BATCH}", f"--init_checkpoint={source}"]
    with pytest.raises(SystemExit) as stop:
        run_pretraining.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "bert/embeddings/token_type_embeddings: model shape [3, 32], checkpoint shape " \
           "[2, 32]" in err and "--ignore_invalid_weights" in err and "Traceback" not in err

    lenient = tmp_path / "lenient"
    run_pretraining.run(_opts(data, lenient, bert_config_file=wider, num_train_steps=1,
                              init_checkpoint=str(source), ignore_invalid_weights=True))
    assert "MISMATCH  [3, 32]            [2, 32]" in capsys.readouterr().out
    before, start = _ckpt(source), tf.train.load_checkpoint(str(lenient / "model.ckpt-0"))
    np.testing.assert_array_equal(start.get_tensor("bert/embeddings/word_embeddings"),
                                  before.get_tensor("bert/embeddings/word_embeddings"))
    initial = start.get_tensor("bert/embeddings/token_type_embeddings")
    assert initial.shape == (3, 32) and 0 < np.abs(initial).max() <= 0.04  # truncated normal


def test_hierarchical_positions_train_past_max_position_embeddings(data, tmp_path):
    """16-token records on a model with 8 positions: refused without hierarchical_position
    (the message names the option), trained and evaluated with it, on the same [8, H] table."""
    short = tiny_config(tmp_path / "short.json", max_position=8)
    with pytest.raises(data_checks.DataCheckError, match="hierarchical_position"):
        run_pretraining.run(_opts(data, tmp_path / "refused", bert_config_file=short))
    stretched = tiny_config(tmp_path / "stretched.json", max_position=8, hierarchical_position=0.4)
    out = tmp_path / "stretched"
    result = run_pretraining.run(_opts(data, out, bert_config_file=stretched, num_train_steps=3,
                                       do_eval=True))
    assert result["global_step"] == 3 and np.isfinite(result["eval_results"]["masked_lm_loss"])
    assert _ckpt(out).get_variable_to_shape_map()["bert/embeddings/position_embeddings"] == [8, 32]
