"""XLNet through run_pretraining: permutation features made at input time from data_gen's
xlnet records, the permutation LM trained and reported as plm_loss / plm_accuracy beside
their unigram baseline, zihangdai's variable names in the checkpoint, precision,
accumulation, resume and TPUEstimator's plumbing, and the data or flags it refuses."""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.models import registry
from pretrain.models.xlnet.permutation import PermutationInput
from pretrain.models.xlnet.record_input import RECORDS
from pretrain.training import data_checks, input_pipeline, pretraining_model_fn
from pretrain.training import estimator_runtime
from pretrain.training import strategy as strategy_lib
from tests.testutil.pretrain_data import (XLNET_SPECIAL_IDS, make_examples, make_xlnet_examples,
                               run_options, tiny_xlnet_config, write_records,
                               write_xlnet_records)

SEQ, REUSE, PREDS, BATCH = 16, 8, 4, 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("xlnet_data")
    return {"cfg": tiny_xlnet_config(root / "xlnet.json"),
            "records": write_xlnet_records(root / "xlnet.tfrecord",
                                           make_xlnet_examples(BATCH, SEQ, REUSE, PREDS, seed=3),
                                           reuse_length=REUSE),
            "roberta": write_records(root / "roberta.tfrecord",
                                     make_examples(BATCH, sentence_task="none"), mode="roberta")}


def _opts(data, out, **kw):
    return run_options(SEQ, PREDS, BATCH, **{
        "bert_config_file": data["cfg"], "input_file": data["records"], "output_dir": out,
        "do_eval": True, "learning_rate": 1e-2, "num_train_steps": 60, "log_every_n_steps": 20,
        "max_seq_length": None, "max_predictions_per_seq": None, **kw})


def _eval_results(out):
    return {key: float(value) for key, value in (
        line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())}


def test_the_permutation_lm_trains_and_is_reported_beside_its_baseline(data, tmp_path):
    out = tmp_path / "xlnet"
    result = run_pretraining.run(_opts(data, out))
    assert result["global_step"] == 60 and result["sentence_head"] is False
    written = _eval_results(out)
    # One eval batch of 8 records, 4 predictions each; lengths from the sidecar.
    assert written["plm_num_targets"] == BATCH * PREDS
    assert 0.0 < written["plm_unigram_accuracy"] < 0.5
    assert written["plm_accuracy"] > written["plm_unigram_accuracy"] + 0.3, written
    assert written["plm_loss"] < written["plm_unigram_loss"], written
    assert "masked_lm_accuracy" not in written
    assert result["not_learned"] == []
    names = tf.train.load_checkpoint(str(out)).get_variable_to_shape_map()
    for name, shape in (("model/transformer/word_embedding/lookup_table", [50, 32]),
                        ("model/transformer/mask_emb/mask_emb", [1, 1, 32]),
                        ("model/transformer/r_w_bias", [2, 2, 16]),
                        ("model/transformer/seg_embed", [2, 2, 2, 16]),
                        ("model/transformer/layer_1/rel_attn/r/kernel", [32, 2, 16]),
                        ("model/transformer/layer_0/ff/layer_2/kernel", [64, 32]),
                        ("model/lm_loss/bias", [50])):
        assert names[name] == shape, name
    assert not any(name.startswith(("bert/", "cls/", "model/sequnece_summary"))
                   for name in names)
    assert '"model_type": "xlnet"' in (out / "bert_config.json").read_text()


def test_input_features_follow_the_records_and_their_sidecar(data):
    files, metas = data_checks.check_input_data(
        data["records"], SEQ, PREDS, registry.read_config(data["cfg"]))
    options, _ = RECORDS.prepare(list(zip(files, metas)), SimpleNamespace(
        perm_size=None, max_seq_length=SEQ, max_predictions_per_seq=PREDS))
    assert options == PermutationInput(REUSE, REUSE, PREDS, (XLNET_SPECIAL_IDS["sep"],
                                                             XLNET_SPECIAL_IDS["cls"]))
    input_fn = input_pipeline.input_fn_builder(files, SEQ, PREDS, False, batch_size=BATCH,
                                               record_reader=RECORDS, prepared=options, seed=2)
    with tf.Graph().as_default():
        batch = tf.data.make_one_shot_iterator(input_fn({})).get_next()
        with tf.Session() as session:
            got = session.run(batch)
    records = make_xlnet_examples(BATCH, SEQ, REUSE, PREDS, seed=3)
    np.testing.assert_array_equal(got["input_ids"], [r["input"] for r in records])
    np.testing.assert_array_equal(got["segment_ids"], [r["seg_id"] for r in records])
    assert got["input_mask"].min() == 1
    assert got["perm_mask"].shape == (BATCH, SEQ, SEQ)
    # Each record's targets are its masked positions, in order, with their tokens.
    for row, record in enumerate(records):
        positions = np.flatnonzero(record["is_masked"])
        np.testing.assert_array_equal(got["target_mapping"][row].argmax(-1), positions)
        np.testing.assert_array_equal(got["target_ids"][row],
                                      np.asarray(record["input"])[positions])
        assert got["target_weights"][row].tolist() == [1.0] * PREDS
        # The reuse window never sees the new part; no target sees itself.
        assert got["perm_mask"][row][:REUSE, REUSE:].min() == 1.0
        assert all(got["perm_mask"][row][p, p] == 1.0 for p in positions)


def test_mixed_precision_accumulation_and_resume(data, tmp_path):
    """fp16 (loss scaling) with 2 micro-batches per update, then resumed; bf16 runs in the
    TPUEstimator test below."""
    precision, accumulation = "fp16", 2
    out = tmp_path / precision
    opts = _opts(data, out, num_train_steps=3, precision=precision,
                 gradient_accumulation_steps=accumulation, do_eval=False)
    assert run_pretraining.run(opts)["global_step"] == 3 * accumulation  # micro-steps
    first = tf.train.load_checkpoint(str(out)).get_tensor("model/lm_loss/bias")
    resumed = run_pretraining.run(dict(opts, num_train_steps=5, do_eval=True,
                                       allow_schedule_change=True))  # 3 -> 5 updates
    assert resumed["global_step"] == 5 * accumulation
    reader = tf.train.load_checkpoint(str(out))
    assert np.isfinite(resumed["eval_results"]["plm_loss"])
    assert not np.array_equal(reader.get_tensor("model/lm_loss/bias"), first)
    assert reader.get_tensor("model/transformer/r_r_bias").dtype == np.float32  # stored fp32


def test_tpu_estimator_plumbing_on_cpu_in_bf16(data, tmp_path):
    """TPUEstimator's CPU emulation: bf16, one-hot embeddings, the (metric_fn, tensors)
    pair of the permutation LM's metrics. Kernel-path sensitive: bf16 matmuls (see
    tests/pretrain/training/test_strategies.py's bf16 plumbing test; bf16 in the name for kernel_paths)."""
    config = registry.read_config(data["cfg"])
    run_settings = strategy_lib.RunSettings(model_dir=str(tmp_path), save_checkpoints_steps=100,
                                            iterations_per_loop=2, num_tpu_cores=1)
    model_fn = pretraining_model_fn.model_fn_builder(
        config, learning_rate=3e-3, num_train_steps=4, precision="bf16",
        use_one_hot_embeddings=True, use_sentence_head=False)
    estimator = estimator_runtime.build_estimator("tpu", model_fn, run_settings,
                                                  train_batch_size=8, eval_batch_size=8,
                                                  _tpu_estimator_on_cpu=True)
    options = PermutationInput(REUSE, 4, PREDS, (1, 2))
    estimator.train(input_pipeline.input_fn_builder(
        data["records"], SEQ, PREDS, True, seed=1, record_reader=RECORDS, prepared=options),
        max_steps=4)
    results = estimator.evaluate(input_pipeline.input_fn_builder(
        data["records"], SEQ, PREDS, False, record_reader=RECORDS, prepared=options), steps=1)
    assert results["global_step"] == 4 and results["plm_num_targets"] == 32.0
    assert 0.0 <= results["plm_accuracy"] <= 1.0 and np.isfinite(results["plm_loss"])


def test_refused_data_and_flags_are_named(data, tmp_path):
    with pytest.raises(data_checks.DataCheckError,
                       match=r"roberta.tfrecord.meta.json: mode=roberta data, but model_type "
                             r"xlnet trains on --mode=xlnet data; make them with data_gen "
                             r"--mode=xlnet, or train a bert/albert/electra model on these"):
        run_pretraining.run(_opts(data, tmp_path / "a", input_file=data["roberta"]))
    bert = tmp_path / "bert.json"
    bert.write_text('{"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 1, '
                    '"num_attention_heads": 2, "intermediate_size": 64}')
    with pytest.raises(data_checks.DataCheckError,
                       match=r"mode=xlnet data, but model_type bert trains on "
                             r"--mode=roberta/albert/bert data; make them with data_gen "
                             r"--mode=roberta, or train a xlnet model on these"):
        run_pretraining.run(_opts(data, tmp_path / "b", bert_config_file=str(bert)))
    with pytest.raises(data_checks.DataCheckError,
                       match=r"--perm_size=3 must divide the data's reuse_length=8 and the "
                             r"rest of the sequence, 8"):
        run_pretraining.run(_opts(data, tmp_path / "c", perm_size=3))
    with pytest.raises(UserError, match=r"--sentence_head: model_type 'xlnet'"):
        run_pretraining.run(_opts(data, tmp_path / "d", sentence_head="true"))
    with pytest.raises(UserError, match=r"--perm_size is read by model_type xlnet only"):
        run_pretraining.run(_opts(data, tmp_path / "e", bert_config_file=str(bert),
                                  input_file=data["roberta"], perm_size=4))


def test_sentencepiece_data_leaves_its_model_beside_the_checkpoints(tmp_path):
    """Data made with --spm_model_file (hfl/chinese-xlnet-base's kind): the output gets that
    spiece.model, byte for byte, and no vocab.txt; resuming with another model is refused."""
    pytest.importorskip("sentencepiece", reason="the spm extra (pip install sentencepiece)")
    from tests.testutil import data_gen_runs
    from tests.testutil import xlnet_data
    from data_gen.config import GenerationConfig
    from data_gen.create_pretraining_data import run as make_data
    spm_model = xlnet_data.train_spm(tmp_path)
    corpus = data_gen_runs.write_corpus(tmp_path / "corpus.txt",
                                           data_gen_runs.documents(40, 3))
    make_data(GenerationConfig(input_file=str(corpus), output_file=str(tmp_path / "d.tfrecord"),
                               mode="xlnet", spm_model_file=str(spm_model), max_seq_length=SEQ,
                               max_predictions_per_seq=PREDS, dupe_factor=1, num_workers=1,
                               progress=False))
    config = tiny_xlnet_config(tmp_path / "x.json", n_token=300)  # the model has ~240 pieces
    out = tmp_path / "out"
    opts = run_options(SEQ, PREDS, 4, bert_config_file=config,
                       input_file=str(tmp_path / "d.tfrecord"), output_dir=out,
                       num_train_steps=2, do_eval=False)
    result = run_pretraining.run(opts)
    assert result["global_step"] == 2
    assert (out / "spiece.model").read_bytes() == spm_model.read_bytes()
    assert not (out / "vocab.txt").exists()
    (out / "spiece.model").write_bytes(spm_model.read_bytes() + b"\0")  # another model
    with pytest.raises(UserError, match=r"holds checkpoints trained with .*spiece.model, which "
                                        r"differs from .* in its bytes"):
        run_pretraining.run(dict(opts, num_train_steps=3))
