"""XLNet <-> transformers without torch: transformers' own fixture (tests/fixtures/hf_xlnet)
imported and reproduced, exported back bit for bit, round trips, the sentencepiece model
travelling with the checkpoint, clean refusals."""
import json
import os
import shutil

import numpy as np
import pytest
from tests.testutil import hf_interop
from safetensors.numpy import load_file

from pretrain.checkpoints import checkpoint_assets, checkpoint_io
from pretrain.interop import export_hf, hf_files, import_hf
from pretrain.models.xlnet import hf as hf_xlnet
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from pretrain.models.xlnet.config import XLNetConfig
from tests.testutil.hf_interop import interop_ulps
from tests.testutil.float32_bounds import assert_close
from tests.testutil.xlnet_hf_bounds import (LM_HEAD, SPM_PIECES, WORDPIECE_VOCAB, fixture_copy,
                               load_fixture_arrays, random_xlnet_tensors, write_spm_model,
                               xlnet_chain, xlnet_outputs)

SEQ = 10  # the fixture's inputs are [2, 10]
KEYS = ("sequence_output", "lm_logits", "perm_sequence_output", "perm_query_output",
        "plm_logits")
TRAINING_STATE = {"global_step": np.array(9, np.int64),
                  "model/lm_loss/bias/adam_m": np.zeros([115], np.float32)}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fixture (with the BERT fixture's 115-token vocab.txt) imported once."""
    root = tmp_path_factory.mktemp("xlnet")
    lines = []
    report = import_model(fixture_copy(root / "src"), root / "out", log_fn=lines.append)
    return report, lines


def test_imported_fixture_reproduces_transformers_outputs(imported):
    """Kernel-path sensitive: our graph against transformers' numbers, to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps); an erf GELU in place of the
    tanh one moves them 5.7x-11x that bound."""
    report, lines = imported
    config = report.config
    assert config.to_dict() == XLNetConfig(
        n_token=115, d_model=16, n_layer=2, n_head=2, d_head=8, d_inner=24,
        ff_activation="gelu", untie_r=True, dropout=0.0, dropatt=0.0, init_std=0.2).to_dict()
    arrays = load_fixture_arrays()
    ours = xlnet_outputs(config, report.checkpoint, arrays)
    real = arrays["attention_mask"].astype(bool)
    for key in KEYS:
        assert ours[key].shape == arrays[key].shape, key
        got, want = (ours[key], arrays[key]) if key.startswith(("perm_q", "plm")) else (
            ours[key][real], arrays[key][real])
        assert_close(got, want, interop_ulps(xlnet_chain(config, SEQ, key)), err_msg=key)
    assert np.abs(ours["plm_logits"]).max() > 0.5  # real numbers, not a zero model
    assert not any(line.startswith("WARNING") for line in lines)  # gelu_new: nothing to say
    assert sorted(os.listdir(report.output_dir)) == [
        "bert_config.json", "checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index",
        "vocab.txt"]


def test_every_tensor_of_the_state_dict_is_converted_or_reported(imported, tmp_path):
    report, lines = imported
    state = load_file(str(LM_HEAD / "model.safetensors"))
    assert sorted(row[0] for row in report.conversion.rows) == sorted(state)
    assert not report.conversion.skipped and not report.conversion.fresh
    assert "summary: 37 tensors converted, 0 not converted, 0 part(s) start fresh" in lines[0]
    # XLNetModel's keys (no prefix, no LM head), a tied copy and a stranger
    model_state = {key[len("transformer."):]: value for key, value in state.items()
                   if key.startswith("transformer.")}
    model_state["lm_loss.weight"] = model_state["word_embedding.weight"]
    model_state["qa_outputs.weight"] = np.zeros([2, 16], np.float32)
    config, _ = hf_xlnet.xlnet_config(json.loads((LM_HEAD / "config.json").read_text()))
    tensors, conversion, _ = hf_xlnet.hf_to_ours(model_state, config)
    assert sorted(tensors) == sorted(set(checkpoint_io.read_checkpoint(report.checkpoint))
                                     - {"model/lm_loss/bias"})
    assert sorted(conversion.skipped) == [
        ("lm_loss.weight", "tied to word_embedding.weight (equal)"),
        ("qa_outputs.weight", "unknown, not imported")]
    assert conversion.fresh == [hf_xlnet.FRESH["lm_head"]]
    assert len(conversion.rows) + len(conversion.skipped) == len(model_state)


def test_export_of_the_import_is_the_fixture_bit_for_bit(imported, tmp_path):
    report, _ = imported
    lines = []
    export_model(report.output_dir, output_dir=tmp_path / "hf", log_fn=lines.append)
    assert sorted(os.listdir(tmp_path / "hf")) == [
        "config.json", "model.safetensors", "special_tokens_map.json", "tokenizer_config.json",
        "vocab.txt"]
    ours = load_file(str(tmp_path / "hf" / "model.safetensors"))
    theirs = load_file(str(LM_HEAD / "model.safetensors"))  # lm_loss.weight: tied, not saved
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():  # copies: bit for bit
        assert ours[key].dtype == value.dtype and np.array_equal(ours[key], value), key
    exported = json.loads((tmp_path / "hf" / "config.json").read_text())
    fixture = json.loads((LM_HEAD / "config.json").read_text())
    for field in ("architectures", "model_type", "vocab_size", "d_model", "n_layer", "n_head",
                  "d_head", "d_inner", "ff_activation", "untie_r", "attn_type", "bi_data",
                  "clamp_len", "same_length", "mem_len", "reuse_len", "dropout",
                  "initializer_range", "layer_norm_eps", "summary_type", "summary_use_proj",
                  "summary_activation", "pad_token_id"):
        assert exported[field] == fixture[field], field
    tokenizer = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert tokenizer["tokenizer_class"] == "BertTokenizer"
    assert any("BertTokenizer" in line for line in lines)


@pytest.mark.parametrize("fields", [
    dict(untie_r=True, ff_activation="gelu"),
    dict(untie_r=False, ff_activation="relu", clamp_len=3, n_layer=3),
], ids=["untied", "tied_relu"])
def test_checkpoint_round_trip_through_transformers_is_bit_identical(tmp_path, fields):
    config = XLNetConfig(**dict(dict(n_token=115, d_model=16, n_layer=2, n_head=2, d_head=8,
                                     d_inner=24), **fields))
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "bert_config.json").write_text(config.to_json_string())
    shutil.copyfile(WORDPIECE_VOCAB, tmp_path / "ckpt" / "vocab.txt")
    tensors = random_xlnet_tensors(config, seed=3)
    checkpoint_io.write_checkpoint(dict(tensors, **TRAINING_STATE),
                                   str(tmp_path / "ckpt" / "model.ckpt-9"), write_state=True)
    export_model(str(tmp_path / "ckpt"), output_dir=tmp_path / "hf", log_fn=None)
    state = load_file(str(tmp_path / "hf" / "model.safetensors"))
    assert len(state) == 3 + 17 * config.n_layer  # embeddings, mask_emb, LM bias
    assert np.array_equal(state["transformer.layer.1.rel_attn.r_w_bias"],
                          tensors["model/transformer/r_w_bias"][1] if config.untie_r
                          else tensors["model/transformer/r_w_bias"])
    report = import_model(tmp_path / "hf", tmp_path / "back", log_fn=None)
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    assert sorted(back) == sorted(tensors)
    for name, value in tensors.items():  # copied both ways: bit for bit
        assert back[name].dtype == value.dtype and np.array_equal(back[name], value), name
    assert report.config.to_dict() == config.to_dict()


def test_the_sentencepiece_model_travels_with_the_checkpoint(tmp_path):
    source = fixture_copy(tmp_path / "src", vocab="spiece.model")
    report = import_model(source, tmp_path / "out", log_fn=None)
    assert report.vocab_source == str(source / "spiece.model")
    assert sorted(os.listdir(tmp_path / "out")) == [
        "bert_config.json", "checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index",
        "spiece.model"]
    assert (tmp_path / "out" / "spiece.model").read_bytes() == (
        source / "spiece.model").read_bytes()
    assets = checkpoint_assets.resolve(str(tmp_path / "out"))
    assert (assets.spm_model_file, assets.vocab_file) == (str(tmp_path / "out" / "spiece.model"),
                                                          None)
    export_model(str(tmp_path / "out"), output_dir=tmp_path / "hf", log_fn=None)
    assert sorted(os.listdir(tmp_path / "hf")) == [
        "config.json", "model.safetensors", "special_tokens_map.json", "spiece.model",
        "tokenizer_config.json"]
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (source / "spiece.model").read_bytes()
    tokenizer = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert (tokenizer["tokenizer_class"], tokenizer["padding_side"], tokenizer["sep_token"],
            tokenizer["cls_token"], tokenizer["additional_special_tokens"]) == (
        "XLNetTokenizer", "left", "<sep>", "<cls>", ["<eop>", "<eod>"])
    hf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert (hf["pad_token_id"], hf["bos_token_id"], hf["eos_token_id"]) == (5, 1, 2)
    again = import_model(tmp_path / "hf", tmp_path / "again", log_fn=None)
    assert (tmp_path / "again" / "spiece.model").read_bytes() == (
        source / "spiece.model").read_bytes()
    assert again.config.to_dict() == report.config.to_dict()
    # a --vocab_file given on the command line wins over the spiece.model
    export_model(str(tmp_path / "out"), output_dir=tmp_path / "bert_tok",
                 vocab_file=str(WORDPIECE_VOCAB), log_fn=None)
    assert "vocab.txt" in os.listdir(tmp_path / "bert_tok")
    assert list(hf_files.read_spm_pieces(str(source / "spiece.model"))) == SPM_PIECES


def test_transformers_erf_gelu_imports_as_ours_with_a_warning_and_untie_r_follows_the_weights(
        tmp_path):
    def differing_biases(weights):
        return {"transformer.layer.1.rel_attn.r_w_bias":
                weights["transformer.layer.0.rel_attn.r_w_bias"] + 1}
    lines = []
    report = import_model(fixture_copy(tmp_path / "src", config={
        "ff_activation": "gelu", "untie_r": False, "mem_len": 512}, state=differing_biases),
        tmp_path / "out", log_fn=lines.append)
    warnings = [line for line in lines if line.startswith("WARNING")]
    assert len(warnings) == 2 and "transformers' erf GELU" in warnings[0]
    assert "mem_len=512" in warnings[1]
    assert report.config.ff_activation == "gelu" and report.config.untie_r
    assert any("layers differ: untie_r true" in row[3] for row in report.conversion.rows)
    # untie_r false with equal layers stays shared: [n_head, d_head]
    def equal_biases(weights):
        return {"transformer.layer.1.rel_attn.%s" % name:
                weights["transformer.layer.0.rel_attn.%s" % name]
                for name in ("r_w_bias", "r_r_bias", "r_s_bias")}
    shared = import_model(fixture_copy(tmp_path / "src2", config={"untie_r": False},
                                       state=equal_biases), tmp_path / "out2", log_fn=None)
    assert not shared.config.untie_r
    assert checkpoint_io.read_checkpoint(shared.checkpoint)["model/transformer/r_w_bias"].shape \
        == (2, 8)
    assert sum(reason.startswith("equal to layer 0's") for _, reason in
               shared.conversion.skipped) == 3


def test_a_sequence_classifier_imports_with_its_task_and_exports_back(tmp_path):
    rng = np.random.RandomState(0)
    head = {"sequence_summary.summary.weight": rng.normal(size=[16, 16]).astype(np.float32),
            "sequence_summary.summary.bias": rng.normal(size=[16]).astype(np.float32),
            "logits_proj.weight": rng.normal(size=[3, 16]).astype(np.float32),
            "logits_proj.bias": rng.normal(size=[3]).astype(np.float32)}
    source = fixture_copy(tmp_path / "src", config={
        "architectures": ["XLNetForSequenceClassification"],
        "id2label": {"0": "neg", "1": "mid", "2": "pos"}},
        state=lambda w: dict(head, **{"lm_loss.bias": None}))
    lines = []
    report = import_model(source, tmp_path / "out", log_fn=lines.append)
    assert report.task["labels"] == ["neg", "mid", "pos"] and report.task["task"] == \
        "classification"
    tensors = checkpoint_io.read_checkpoint(report.checkpoint)
    assert np.array_equal(tensors["classifier/output_weights"], head["logits_proj.weight"])
    assert np.array_equal(tensors["model/sequnece_summary/summary/kernel"],
                          head["sequence_summary.summary.weight"].T)
    assert any("last position, ours the last real token" in line for line in lines)
    export_model(str(tmp_path / "out"), output_dir=tmp_path / "hf", log_fn=None)
    hf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf["architectures"] == ["XLNetForSequenceClassification"]
    assert hf["id2label"] == {"0": "neg", "1": "mid", "2": "pos"}
    ours, theirs = (load_file(str(path / "model.safetensors"))
                    for path in (tmp_path / "hf", source))
    assert sorted(ours) == sorted(theirs)
    assert all(np.array_equal(ours[key], value) for key, value in theirs.items())


def _main(module, *args):
    """(exit code, stderr) of `python -m pretrain.MODULE ARGS`, run in this process."""
    return hf_interop.run_main(module, *args)


def test_bad_input_is_one_clear_message(tmp_path):
    out = tmp_path / "out"
    bare = fixture_copy(tmp_path / "bare", vocab=None)
    cases = [  # (directory, message)
        (bare, "has neither vocab.txt, spiece.model nor tokenizer.json"),
        (fixture_copy(tmp_path / "uni", config={"attn_type": "uni"}),
         "attn_type 'uni': our XLNet attends bidirectionally only"),
        (fixture_copy(tmp_path / "bi_data", config={"bi_data": True}), "bi_data true"),
        (fixture_copy(tmp_path / "eps", config={"layer_norm_eps": 1e-5}),
         "layer_norm_eps=1e-05, but our LayerNorm epsilon is fixed at 1e-12"),
        (fixture_copy(tmp_path / "act", config={"ff_activation": "swish"}),
         "ff_activation 'swish' is not supported; use one of gelu, gelu_new"),
        (fixture_copy(tmp_path / "layers", config={"n_layer": 3}),
         "the weights lack 17 encoder tensor(s) the config implies, e.g. "
         "layer.2.rel_attn.r_w_bias"),
        (fixture_copy(tmp_path / "shape", config={"d_inner": 32}),
         "has shape [24] but the config implies [32]"),
        (fixture_copy(tmp_path / "summary", config={
            "architectures": ["XLNetForSequenceClassification"], "summary_type": "first"}),
         "summary_type, summary_use_proj, summary_activation = ('first', True, 'tanh')"),
        (fixture_copy(tmp_path / "big", config={"vocab_size": 100}, vocab="vocab.txt"),
         "vocab.txt has 115 tokens but config.json has vocab_size=100"),
    ]
    broken = fixture_copy(tmp_path / "broken", vocab=None)
    (broken / "spiece.model").write_bytes(b"\x0a\x05ab")
    cases.append((broken, "spiece.model is not a sentencepiece model (truncated)"))
    for directory, message in cases:
        code, stderr = _main(import_hf, "--model_dir=%s" % directory, "--output_dir=%s" % out)
        assert code == 2 and "Traceback" not in stderr, (directory, stderr)
        assert stderr.startswith("error: ") and message in stderr, (directory, stderr)
        assert not out.exists()


def test_exports_transformers_cannot_hold_are_refused(tmp_path):
    cases = []
    config = XLNetConfig(n_token=115, d_model=16, n_layer=1, n_head=2, d_head=4, d_inner=24,
                         ff_activation="gelu", untie_r=True)
    cases.append((config, {}, "d_head=4 x n_head=2 is not d_model=16"))
    config = XLNetConfig(n_token=15, d_model=16, n_layer=1, n_head=2, d_head=8, d_inner=24,
                         ff_activation="gelu", untie_r=True)
    cases.append((config, {"spiece.model": SPM_PIECES[:3]}, "lacks XLNetTokenizer's "
                  "special token(s) <sep> <pad> <cls> <mask>"))
    cases.append((config, {"vocab.txt": None}, "has 115 tokens but the config has n_token=15"))
    for index, (config, vocab, message) in enumerate(cases):
        directory = tmp_path / str(index)
        directory.mkdir()
        (directory / "bert_config.json").write_text(config.to_json_string())
        if "spiece.model" in vocab:
            write_spm_model(directory / "spiece.model", vocab["spiece.model"])
        else:
            shutil.copyfile(WORDPIECE_VOCAB, directory / "vocab.txt")
        checkpoint_io.write_checkpoint(random_xlnet_tensors(config), str(directory / "model.ckpt"),
                                       write_state=True)
        out = tmp_path / ("hf%d" % index)
        code, stderr = _main(export_hf, "--init_checkpoint=%s" % directory,
                             "--output_dir=%s" % out)
        assert code == 2 and "Traceback" not in stderr, stderr
        assert stderr.startswith("error: ") and message in stderr, stderr
        assert not out.exists()
