"""Hugging Face interop without torch: round trips, brightmart export, transformers' own fixture.

The fixture under tests/fixtures/hf/ was written by transformers itself
(see its README); its numbers are what transformers computes.
"""
import json
import os
import pathlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from safetensors import safe_open

from tests.testutil.hf_interop import (assert_log_probs_close, bert_chain, interop_ulps, model_outputs,
                         random_checkpoint, sample_batch, worst_case_ulps, write_tiny_vocab)
from pretrain import run_pretraining
from pretrain.checkpoints import checkpoint_assets, checkpoint_io, checkpoint_loading
from pretrain.interop import hf_files
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from pretrain.models.bert.config import BertConfig
from tests.testutil.pretrain_data import make_examples, tiny_config, write_records
from tests.testutil.float32_bounds import assert_close, magnitude, tolerance
from conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hf"
TRAINING_STATE = {  # ignored by the export, whatever the optimizer's naming
    "global_step": np.array(7, np.int64),
    "bert/pooler/dense/kernel/adam_m": np.zeros([32, 32], np.float32),
    "bert/pooler/dense/kernel/AdamWeightDecay_1": np.zeros([32, 32], np.float32),
}
HF_FILES = ["config.json", "model.safetensors", "special_tokens_map.json",
            "tokenizer_config.json", "vocab.txt"]
ROUND_TRIPS = {  # kind: (config fields, num_labels, architecture, hidden_act in config.json)
    "bert": ({}, None, "BertForPreTraining", "gelu_new"),
    "albert": (dict(model_type="albert", embedding_size=16, num_hidden_groups=2,
                    inner_group_num=2), None, "AlbertForPreTraining", "gelu_new"),
    "classifier": (dict(hidden_act="gelu_exact"), 3, "BertForSequenceClassification", "gelu"),
}


@pytest.mark.parametrize("kind", sorted(ROUND_TRIPS))
def test_round_trip_tf_hf_tf_is_bit_identical(tmp_path, kind):
    fields, num_labels, architecture, hf_act = ROUND_TRIPS[kind]
    config_file = tiny_config(tmp_path / "bert_config.json", **fields)
    vocab = write_tiny_vocab(tmp_path / "vocab.txt")
    skip = ("cls/",) if num_labels else ()  # a fine-tuned classifier has no pretraining heads
    original = random_checkpoint(config_file, str(tmp_path / "run" / "model.ckpt-7"),
                                 num_labels=num_labels, skip=skip, extra=TRAINING_STATE)

    export_model(str(tmp_path / "run"), config_file, tmp_path / "hf", vocab_file=vocab,
                 log_fn=None)
    assert sorted(os.listdir(tmp_path / "hf")) == HF_FILES
    hf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf["architectures"] == [architecture] and hf["hidden_act"] == hf_act
    assert hf["layer_norm_eps"] == 1e-12 and hf["vocab_size"] == 50
    if num_labels:
        assert hf["id2label"] == {"0": "0", "1": "1", "2": "2"} and hf["num_labels"] == 3
    with safe_open(str(tmp_path / "hf" / "model.safetensors"), "numpy") as weights:
        assert weights.metadata() == {"format": "pt"}
        assert not any("decoder" in key for key in weights.keys())  # tied, not stored
    tokenizer = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert tokenizer["tokenizer_class"] == "BertTokenizer"
    assert tokenizer["model_max_length"] == 32 and tokenizer["do_lower_case"] is True

    report = import_model(tmp_path / "hf", tmp_path / "back", log_fn=None)
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    assert sorted(back) == sorted(original)
    for name, value in original.items():
        assert back[name].dtype == np.float32 and np.array_equal(back[name], value), name
    assert report.config.to_dict() == BertConfig.from_json_file(config_file).to_dict()
    assert (tmp_path / "back" / "vocab.txt").read_bytes() == pathlib.Path(vocab).read_bytes()


@pytest.mark.parametrize("sharing", ["all", "ffn"])
def test_brightmart_albert_exports_as_the_bert_it_computes(tmp_path, sharing):
    """Kernel-path sensitive: the BERT graph multiplies by the folded word table where the
    ALBERT graph projects, so the two agree to the bound of two summation orders."""
    config_file = tiny_config(tmp_path / "brightmart.json", model_type="albert",
                              albert_layout="brightmart", embedding_size=16, sharing=sharing)
    checkpoint = str(tmp_path / "bm" / "model.ckpt")
    random_checkpoint(config_file, checkpoint, seed=3)
    export_model(checkpoint, config_file, tmp_path / "hf",
                 vocab_file=write_tiny_vocab(tmp_path / "vocab.txt"), log_fn=None)
    hf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf["model_type"] == "bert" and hf["architectures"] == ["BertForPreTraining"]
    assert "embedding_size" not in hf

    report = import_model(tmp_path / "hf", tmp_path / "bert", log_fn=None)
    assert report.config.model_type == "bert" and report.config.sharing == "none"
    ours = model_outputs(config_file, checkpoint, *sample_batch())
    bert = model_outputs(report.config, report.checkpoint, *sample_batch())
    for key, output in (("mlm_log_probs", "mlm"), ("pooled_output", "pooled"),
                        ("sequence_output", "sequence")):
        # two TF graphs (case 2) on the longer chain, ALBERT's (embedding projection, MLM
        # projection back to E), plus the one rounding of the folded table
        ulps = worst_case_ulps(bert_chain(config_file, 12, output)) + 1
        if output == "mlm":
            assert_log_probs_close(bert[key], ours[key], ours["mlm_logits"], ulps, key)
        else:
            assert_close(bert[key], ours[key], ulps, err_msg=key)


def _two_adamw_steps(learning_rate, value):
    """The farthest 2 steps of run_pretraining's default AdamW (no bias correction, decoupled
    weight decay 0.01, the learning rate decaying from `learning_rate`) can move a weight of
    `value`'s magnitude: step t moves it by lr * (|m_t| / sqrt(v_t) + 0.01 |w|), and by
    Cauchy-Schwarz over the gradients g_1..g_t, |m_t| / sqrt(v_t) <= sqrt(sum_k c1_k^2 / c2_k)
    with m_t = sum_k c1_k g_k, v_t = sum_k c2_k g_k^2 (3.16 at t = 1, 4.26 at t = 2); each
    step's float32 update of the weight rounds by half an ulp of it."""
    beta_1, beta_2 = 0.9, 0.999
    ratios = [np.sqrt(sum(((1 - beta_1) * beta_1 ** age) ** 2 / ((1 - beta_2) * beta_2 ** age)
                          for age in range(t))) for t in (1, 2)]
    scale = magnitude(value)
    return learning_rate * sum(ratio + 0.01 * scale for ratio in ratios) + tolerance(1, scale)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The transformers-written fixture models imported once: {"bert": report, "albert": ...}."""
    root = tmp_path_factory.mktemp("imported")
    return {name: import_model(FIXTURES / ("%s_mlm" % name), root / name, log_fn=None)
            for name in ("bert", "albert")}


@pytest.mark.parametrize("name,hidden_act,weights,key_bias", [
    ("bert", "gelu_exact", "model.safetensors.index.json",
     ("bert.encoder.layer.1.attention.self.key.bias",
      "bert/encoder/layer_1/attention/self/key/bias")),
    ("albert", "gelu", "model.safetensors",
     ("albert.encoder.albert_layer_groups.0.albert_layers.0.attention.key.bias",
      "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/key/bias")),
])
def test_transformers_fixture_imports_with_transformers_numbers(imported, name, hidden_act,
                                                                 weights, key_bias):
    """Kernel-path sensitive: our graph against transformers' numbers, to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    report = imported[name]
    expected = np.load(FIXTURES / "expected_outputs.npz")
    assert report.config.hidden_act == hidden_act and report.weights == weights
    ours = model_outputs(report.config, report.checkpoint, expected[name + "_input_ids"],
                         expected[name + "_attention_mask"], expected[name + "_token_type_ids"])
    # our graph against torch's (case 2): a wrong GELU moves these 10x-18x the bound
    assert_log_probs_close(ours["mlm_log_probs"], expected[name + "_mlm_log_probs"],
                           ours["mlm_logits"], interop_ulps(bert_chain(report.config, 12, "mlm")),
                           "log-probs")
    assert_close(ours["sequence_output"], expected[name + "_sequence_output"],
                 interop_ulps(bert_chain(report.config, 12)), err_msg="sequence output")
    # The attention key bias cannot show in any output: compare the tensor itself.
    state, _ = hf_files.read_weights(str(FIXTURES / ("%s_mlm" % name)))
    ours = checkpoint_io.read_checkpoint(report.checkpoint, [key_bias[1]])[key_bias[1]]
    assert np.array_equal(ours, state[key_bias[0]])  # a copied tensor: bit for bit
    # vocab.txt comes from vocab.txt (bert) or from tokenizer.json only (albert).
    assert os.path.basename(report.vocab_source) == (
        "vocab.txt" if name == "bert" else "tokenizer.json")
    assert (pathlib.Path(report.output_dir) / "vocab.txt").read_bytes() == \
        (FIXTURES / "vocab").read_bytes()
    assert report.conversion.fresh == ["pooler (bert/pooler/dense)",
                                       "sentence head (cls/seq_relationship/*)"]


def test_imported_checkpoint_initialises_pretraining_and_finetuning(imported, tmp_path):
    report = imported["bert"]
    config_file = os.path.join(report.output_dir, "bert_config.json")
    data = write_records(tmp_path / "train.tfrecord", make_examples(8, seed=3))
    result = run_pretraining.run(dict(
        bert_config_file=config_file, input_file=data, output_dir=str(tmp_path / "run"),
        init_checkpoint=report.checkpoint, do_train=True, max_seq_length=16,
        max_predictions_per_seq=4, train_batch_size=8, learning_rate=1e-6, num_train_steps=2,
        num_warmup_steps=0, save_checkpoints_steps=1000, log_every_n_steps=1, random_seed=1,
        shuffle_buffer=0))
    assert result["global_step"] == 2
    trained = tf.train.load_checkpoint(str(tmp_path / "run"))
    for name, value in checkpoint_io.read_checkpoint(report.checkpoint).items():
        # Loaded, then moved by the 2 steps only: at most 7.5e-6 (_two_adamw_steps); a weight
        # not loaded would be a fresh init, ~0.2 away (the fixture's weights: N(0, 0.2)).
        np.testing.assert_allclose(trained.get_tensor(name), value, rtol=0,
                                   atol=_two_adamw_steps(1e-6, value), err_msg=name)
    # The sentence head the import did not have was created fresh.
    assert "cls/seq_relationship/output_weights" in trained.get_variable_to_shape_map()
    # The data names no vocab: the run's vocab.txt is the checkpoint's.
    vocab = os.path.join(report.output_dir, "vocab.txt")
    assert result["vocab_file"] == vocab
    assert (tmp_path / "run" / "vocab.txt").read_bytes() == pathlib.Path(vocab).read_bytes()
    # OUT works as a directory, and later stages find bert_config.json and vocab.txt beside it.
    assert checkpoint_loading.resolve_checkpoint(report.output_dir) == report.checkpoint
    found = checkpoint_assets.resolve(report.output_dir)
    assert (found.checkpoint, found.config_file, found.vocab_file, found.task) == (
        report.checkpoint, config_file, vocab, None)
