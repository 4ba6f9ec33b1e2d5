"""End-to-end pretraining runs on tiny generated data (CPU, few steps)."""
import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from common.file_utils import file_sha256
from tests.testutil.hf_interop import write_tiny_vocab
from pretrain import pretraining_options, run_pretraining
from pretrain.checkpoints import checkpoint_assets, checkpoint_io
from pretrain.training import data_checks
from tests.testutil.pretrain_data import (make_examples, rename_slots_to_legacy, run_options, tiny_config,
                              write_records)

SEQ, PREDS, BATCH = 16, 4, 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain_data")
    cfg = tiny_config(root / "cfg.json")
    fixed = write_records(root / "fixed.tfrecord", make_examples(BATCH, seed=7))
    return {"root": root, "cfg": cfg, "fixed": fixed}


def _opts(data, out, **kw):
    return run_options(SEQ, PREDS, BATCH, **{
        "bert_config_file": data["cfg"], "input_file": data["fixed"], "output_dir": out,
        "learning_rate": 3e-3, "num_train_steps": 30, "num_warmup_steps": 2,
        "log_every_n_steps": 5, **kw})


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
    # Clearly off its unigram baseline, so no masked-LM warning (pretrain.training.learning_check);
    # 8 sentence labels cannot show a head above chance, and the line says just that.
    assert [line.split(" ")[0:3] for line in result["not_learned"]] == [["too", "few", "eval"]]
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
    # Resuming (global step, optimizer state, input from the start): tests/pretrain/training/test_resume.py.


def test_evaluating_an_init_checkpoint_alone_scores_its_weights(data, tmp_path):
    """--do_eval without --do_train into a fresh --output_dir evaluates the
    --init_checkpoint's weights: the same numbers as evaluating it where it was trained."""
    trained = run_pretraining.run(_opts(data, tmp_path / "trained", num_train_steps=20,
                                        do_eval=True))
    alone = run_pretraining.run(_opts(data, tmp_path / "alone", do_train=False, do_eval=True,
                                      init_checkpoint=str(tmp_path / "trained")))
    assert alone["global_step"] == 0  # nothing trained or saved in --output_dir
    assert not glob.glob(str(tmp_path / "alone" / "model.ckpt-*"))
    # The same eval graph (shapes, kernels) on bit-identical weights, in this process:
    # the same numbers, bit for bit.
    for key, value in trained["eval_results"].items():
        if key != "global_step":
            assert alone["eval_results"][key] == value, key
    assert (tmp_path / "alone" / "eval_results.txt").is_file()


def test_mismatched_data_stops_before_training(data, tmp_path):
    with pytest.raises(data_checks.DataCheckError,
                       match=r"--max_predictions_per_seq=6, but the data was made with "
                             r"max_predictions_per_seq=4 \(.*fixed\.tfrecord\.meta\.json\): "
                             r"drop the flag"):
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
        pretraining_options.options_from({"no_such_flag": 1})
    with pytest.raises(ValueError, match="--do_train and/or --do_eval"):
        run_pretraining.run({"bert_config_file": "c", "output_dir": "o", "input_file": "i"})


def test_resumes_from_checkpoint_with_old_slot_names(data, tmp_path):
    # LAMB's old names (`/Lamb`, `/Lamb_1`) map the same way (test_checkpoint_compat.py).
    legacy = "AdamWeightDecay"
    const = dict(num_warmup_steps=0, poly_power=0.0)
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    # The straight run's checkpoint at step 3 (constant learning rate: what a 3-step run
    # leaves) is the one resumed, its slots renamed to the old names.
    run_pretraining.run(_opts(data, straight, num_train_steps=6, save_checkpoints_steps=3,
                              **const))
    resumed.mkdir()
    for path in glob.glob(str(straight / "model.ckpt-3.*")):
        shutil.copy(path, resumed)
    tf.train.update_checkpoint_state(str(resumed), str(resumed / "model.ckpt-3"))
    assert _ckpt(str(resumed)).get_tensor("global_step") == 3
    old_names = rename_slots_to_legacy(str(resumed), legacy)
    assert f"bert/pooler/dense/kernel/{legacy}_1" in old_names
    assert run_pretraining.run(_opts(data, resumed, num_train_steps=6, **const))[
        "global_step"] == 6
    a, b = _ckpt(str(straight)), _ckpt(str(resumed))
    names = b.get_variable_to_shape_map()
    assert "bert/pooler/dense/kernel/adam_v" in names  # written back under Google's names
    assert not [n for n in names if n.endswith((f"/{legacy}", f"/{legacy}_1"))]
    # The resumed steps 4-6 run the straight run's graph, shapes and kernels, in this
    # process, on the same batch from bit-identical restored values: equal bit for bit, and
    # only if m and v were restored.
    for name in a.get_variable_to_shape_map():
        if name.startswith(("bert/", "cls/")):
            np.testing.assert_array_equal(b.get_tensor(name), a.get_tensor(name), err_msg=name)


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


# ---- the vocab travels with the checkpoints (pretrain.checkpoints.checkpoint_assets) ------------

def _vocab_data(root, name, vocab, **meta):
    """The fixed batch as `name` whose sidecar names `vocab` (its sha256 unless given)."""
    sha = meta.pop("vocab_sha256", None) or file_sha256(vocab)
    return write_records(root / name, make_examples(BATCH, seed=7), vocab_file=str(vocab),
                         vocab_sha256=sha, **meta)


def test_vocab_and_config_are_written_beside_the_checkpoints(data, tmp_path):
    vocab = write_tiny_vocab(tmp_path / "vocab.txt")
    records = _vocab_data(tmp_path, "v.tfrecord", vocab)
    first = run_pretraining.run(_opts(data, tmp_path / "first", input_file=records,
                                      num_train_steps=1))
    assert first["vocab_file"] == vocab
    assert (tmp_path / "first" / "vocab.txt").read_bytes() == open(vocab, "rb").read()
    # Continue from it without --bert_config_file: the config beside the checkpoint is used;
    # a --vocab_file with the same tokens in other bytes (CRLF) is the data's vocab too.
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(open(vocab, "rb").read().replace(b"\n", b"\r\n"))
    second = run_pretraining.run(_opts(data, tmp_path / "second", input_file=records,
                                       bert_config_file=None, num_train_steps=1,
                                       init_checkpoint=str(tmp_path / "first"),
                                       vocab_file=str(crlf)))
    assert second["config_file"] == str(tmp_path / "first" / "bert_config.json")
    assert second["vocab_file"] == str(crlf)
    assert (tmp_path / "second" / "vocab.txt").read_bytes() == crlf.read_bytes()


def test_a_vocab_that_is_not_the_datas_is_refused_before_training(data, tmp_path):
    vocab = write_tiny_vocab(tmp_path / "vocab.txt")
    records = _vocab_data(tmp_path, "v.tfrecord", vocab)
    tokens = open(vocab, encoding="utf-8").read().split()
    other = tmp_path / "other.txt"  # same size, two tokens swapped
    other.write_text("\n".join(tokens[:5] + [tokens[6], tokens[5]] + tokens[7:]) + "\n")
    with pytest.raises(UserError) as caught:
        run_pretraining.run(_opts(data, tmp_path / "a", input_file=records, vocab_file=str(other)))
    assert str(caught.value) == (
        f"--vocab_file={other} is not the vocab the data was made with ({records}.meta.json "
        f"names {vocab}): their sha256 differ; pass the data's vocab or drop --vocab_file")

    start = tmp_path / "start"  # a checkpoint trained with the other vocab
    checkpoint_io.write_checkpoint({"w": np.zeros([1], np.float32)}, str(start / "model.ckpt"),
                                   write_state=True)
    shutil.copyfile(other, start / "vocab.txt")
    with pytest.raises(UserError, match=(
            rf"^--init_checkpoint=.*start/model.ckpt was trained with .*start/vocab.txt, which "
            rf"is not the vocab the data was made with \(.*names {vocab}\); start from a "
            rf"checkpoint of that vocab or make the data with --vocab_file=.*start/vocab.txt$")):
        run_pretraining.run(_opts(data, tmp_path / "b", input_file=records,
                                  init_checkpoint=str(start)))
    # The checkpoint's vocab and --vocab_file disagree: one line with both files and the line.
    with pytest.raises(checkpoint_assets.VocabMismatchError,
                       match=r"differs from .*start/vocab.txt at line 6"):
        run_pretraining.run(_opts(data, tmp_path / "c", input_file=records, vocab_file=vocab,
                                  init_checkpoint=str(start)))

    resumed = tmp_path / "resumed"  # an output_dir whose checkpoints used the other vocab
    checkpoint_io.write_checkpoint({"w": np.zeros([1], np.float32)},
                                   str(resumed / "model.ckpt-3"), write_state=True)
    shutil.copyfile(other, resumed / "vocab.txt")
    with pytest.raises(UserError, match=r"holds checkpoints trained with .*resumed/vocab.txt, "
                                        r"which differs from .*vocab.txt at line 6"):
        run_pretraining.run(_opts(data, resumed, input_file=records))

    mixed = _vocab_data(tmp_path, "mixed.tfrecord", other)
    with pytest.raises(UserError, match="the input data was made with two vocabs"):
        run_pretraining.run(_opts(data, tmp_path / "d", input_file=f"{records},{mixed}"))
    assert sorted(os.listdir(tmp_path)) == ["mixed.tfrecord", "mixed.tfrecord.meta.json",
                                            "other.txt", "resumed", "start", "v.tfrecord",
                                            "v.tfrecord.meta.json", "vocab.txt"]


def test_without_a_usable_vocab_a_warning_says_why(data, tmp_path, caplog):
    vocab = write_tiny_vocab(tmp_path / "vocab.txt")
    records = _vocab_data(tmp_path, "v.tfrecord", vocab, vocab_sha256="0" * 64)
    result = run_pretraining.run(_opts(data, tmp_path / "out", input_file=records,
                                       num_train_steps=1))
    assert result["vocab_file"] is None and not (tmp_path / "out" / "vocab.txt").exists()
    assert (tmp_path / "out" / "bert_config.json").exists()
    warnings = [r.getMessage() for r in caplog.records if "no vocab.txt" in r.getMessage()]
    assert warnings == [f"no vocab.txt written to --output_dir={tmp_path / 'out'}: "
                        f"{records}.meta.json names vocab {vocab}, which has changed since "
                        "(its sha256 is not the sidecar's vocab_sha256); pass --vocab_file"]
