"""Hugging Face import edge cases (legacy names, buffers, tied decoder, fp16/bf16, missing
heads), config mapping rules, and the command-line tools' clean failures."""
import importlib.util
import json
import os

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from data_gen.text.tokenization import VocabError, load_tokenizer_json_vocab
from tests.testutil.cli_runs import run_main_in_process
from tests.testutil.hf_interop import random_checkpoint, write_tiny_vocab
from pretrain.checkpoints import checkpoint_io
from pretrain.interop import hf_config, hf_files
from common.cli_options import UserError
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from tests.testutil.pretrain_data import tiny_config
from conftest import REPO_ROOT

REPO = str(REPO_ROOT)
WORDS = "bert.embeddings.word_embeddings.weight"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny BertForPreTraining directory: (dir, state dict, our original tensors)."""
    root = tmp_path_factory.mktemp("exported")
    config_file = tiny_config(root / "bert_config.json")
    original = random_checkpoint(config_file, str(root / "model.ckpt"), seed=5)
    export_model(str(root / "model.ckpt"), config_file, root / "hf",
                 vocab_file=write_tiny_vocab(root / "vocab.txt"), log_fn=None)
    state, _ = hf_files.read_weights(str(root / "hf"))
    return root / "hf", {key: np.array(value) for key, value in state.items()}, original


def _model_dir(path, source, state_dict):
    """A copy of `source`'s config.json and vocab.txt with `state_dict` as model.safetensors."""
    os.makedirs(path)
    for name in ("config.json", "vocab.txt"):
        with open(os.path.join(source, name), "rb") as reader, \
                open(os.path.join(path, name), "wb") as writer:
            writer.write(reader.read())
    save_file(state_dict, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    return path


def test_legacy_names_buffers_tied_decoder_and_unknown_tensors(exported, tmp_path, capsys):
    source, state, original = exported
    legacy = {}
    for key, value in state.items():
        if ".LayerNorm." in key:
            key = key.replace(".weight", ".gamma").replace(".bias", ".beta")
        legacy[key] = value
    legacy["bert.embeddings.position_ids"] = np.arange(32, dtype=np.int64)[None]
    legacy["cls.predictions.decoder.weight"] = state[WORDS].copy()
    legacy["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].copy()
    legacy["bert.encoder.extra.weight"] = np.ones([3], np.float32)
    report = import_model(_model_dir(tmp_path / "legacy", source, legacy), tmp_path / "out")
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    assert sorted(back) == sorted(original)
    # copied out and back under legacy names: bit for bit
    assert all(np.array_equal(back[name], value) for name, value in original.items())
    assert dict(report.conversion.skipped) == {
        "bert.embeddings.position_ids": "buffer, not a weight",
        "cls.predictions.decoder.weight": "tied to %s (equal)" % WORDS,
        "cls.predictions.decoder.bias": "tied to cls.predictions.bias (equal)",
        "bert.encoder.extra.weight": "unknown, not imported"}
    printed = capsys.readouterr().out
    assert "legacy name bert.embeddings.LayerNorm.gamma" in printed
    assert "not converted: bert.encoder.extra.weight (unknown, not imported)" in printed


def test_untied_decoder_is_refused_naming_the_tensor(exported, tmp_path):
    source, state, _ = exported
    untied = dict(state, **{"cls.predictions.decoder.weight": state[WORDS] + 1.0})
    with pytest.raises(UserError, match=r"cls\.predictions\.decoder\.weight differs from "
                                        r"bert\.embeddings\.word_embeddings\.weight"):
        import_model(_model_dir(tmp_path / "untied", source, untied), tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["untied"]  # no output, no temporary left


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_weights_are_imported_as_float32(exported, tmp_path, dtype):
    source, state, original = exported
    half = {key: value.astype(dtype) for key, value in state.items()}
    report = import_model(_model_dir(tmp_path / "half", source, half), tmp_path / "out",
                          log_fn=None)
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    for name, value in original.items():
        assert back[name].dtype == np.float32
        # a cast to the half format and back to float32 on both sides: bit for bit
        assert np.array_equal(back[name], value.astype(dtype).astype(np.float32)), name
    assert not np.array_equal(back["bert/embeddings/word_embeddings"],
                              original["bert/embeddings/word_embeddings"])  # really rounded
    notes = {row[1]: row[3] for row in report.conversion.rows}
    assert notes["bert/embeddings/word_embeddings"] == "%s -> float32" % np.dtype(dtype).name


def test_bert_model_keys_without_heads_start_fresh(exported, tmp_path, capsys):
    source, state, original = exported
    encoder_only = {key[len("bert."):]: value for key, value in state.items()
                    if key.startswith("bert.") and not key.startswith("bert.pooler.")}
    report = import_model(_model_dir(tmp_path / "bare", source, encoder_only), tmp_path / "out")
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    expected = {name for name in original if name.startswith("bert/")
                and not name.startswith("bert/pooler/")}
    assert set(back) == expected
    assert all(np.array_equal(back[name], original[name]) for name in expected)  # copies
    printed = capsys.readouterr().out
    for part in ("pooler (bert/pooler/dense)", "MLM head (cls/predictions/*)",
                 "sentence head (cls/seq_relationship/*)"):
        assert "starts fresh: %s is not in the weights" % part in printed


def test_config_mapping_rules():
    base = {"model_type": "bert", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 64}
    acts = {act: hf_config.bert_config_from_hf(dict(base, hidden_act=act)).hidden_act
            for act in ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu")}
    assert acts == {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                    "relu": "relu", "silu": "swish"}
    by_architecture = dict(base, architectures=["BertForMaskedLM"])
    del by_architecture["model_type"]
    assert hf_config.bert_config_from_hf(by_architecture).model_type == "bert"
    refused = {"roberta": dict(base, model_type="roberta"),
               "relative_key": dict(base, position_embedding_type="relative_key"),
               "layer_norm_eps=1e-05": dict(base, layer_norm_eps=1e-5),
               "hidden_act 'quick_gelu'": dict(base, hidden_act="quick_gelu")}
    for message, config in refused.items():
        with pytest.raises(UserError, match=message):
            hf_config.bert_config_from_hf(config)
    with pytest.raises(UserError, match="RoBERTa-wwm .* are published as BERT"):
        hf_config.bert_config_from_hf(dict(base, model_type="roberta"))


def test_tokenizer_json_vocab_needs_contiguous_wordpiece_ids(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "b": 2,
                                                                          "a": 1}},
                                "added_tokens": [{"id": 3, "content": "[X]"}]}))
    assert list(load_tokenizer_json_vocab(path).items()) == [("[PAD]", 0), ("a", 1), ("b", 2),
                                                             ("[X]", 3)]
    path.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "a": 2}}}))
    with pytest.raises(VocabError, match=r"tokenizer\.json: vocab ids must be 0\.\.1.*'a' has "
                                         r"id 2 where 1 was expected"):
        load_tokenizer_json_vocab(path)
    path.write_text(json.dumps({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}))
    with pytest.raises(VocabError, match="'Unigram', not WordPiece"):
        load_tokenizer_json_vocab(path)


def _cli(module, *args):
    """stderr of the tool's refusal: main() called in this process as its console script calls
    it (cli_runs.run_main_in_process; the refusals come before any model is built, so
    no TensorFlow start-up per case)."""
    code, _, stderr, _ = run_main_in_process(module, list(args), REPO)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    return stderr


def test_import_cli_fails_cleanly(tmp_path):
    out = tmp_path / "out"
    missing = _cli("pretrain.interop.import_hf", "--model_dir=%s" % (tmp_path / "nope"),
                   "--output_dir=%s" % out)
    assert "error: --model_dir %s does not exist" % (tmp_path / "nope") in missing
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps({"model_type": "bert",
                                                               "vocab_size": 50}))
    no_weights = _cli("pretrain.interop.import_hf", "--model_dir=%s" % (tmp_path / "bare"),
                      "--output_dir=%s" % out)
    assert ("holds no weights: looked for model.safetensors, model.safetensors.index.json, "
            "pytorch_model.bin, pytorch_model.bin.index.json") in no_weights
    (tmp_path / "gpt").mkdir()
    (tmp_path / "gpt" / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    unsupported = _cli("pretrain.interop.import_hf", "--model_dir=%s" % (tmp_path / "gpt"),
                       "--output_dir=%s" % out)
    assert "model_type 'gpt2' (architectures []) is not supported" in unsupported
    assert not out.exists()


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="torch is importable here, so pytorch_model.bin can be read")
def test_pytorch_bin_without_torch_says_what_to_do(tmp_path):
    (tmp_path / "pt").mkdir()
    (tmp_path / "pt" / "config.json").write_text(json.dumps({"model_type": "bert",
                                                             "vocab_size": 50}))
    (tmp_path / "pt" / "pytorch_model.bin").write_bytes(b"not read")
    message = _cli("pretrain.interop.import_hf", "--model_dir=%s" % (tmp_path / "pt"),
                   "--output_dir=%s" % (tmp_path / "out"))
    assert "pytorch_model.bin is a PyTorch file and reading it needs torch" in message
    assert "save_pretrained(DIR, safe_serialization=True)" in message
    assert not (tmp_path / "out").exists()


def test_export_cli_fails_cleanly(exported, tmp_path):
    pre_ln = tiny_config(tmp_path / "pre.json", layer_norm_position="pre")
    checkpoint = exported[0].parent / "model.ckpt"
    message = _cli("pretrain.interop.export_hf", "--init_checkpoint=%s" % checkpoint,
                   "--bert_config_file=%s" % pre_ln, "--output_dir=%s" % (tmp_path / "out"))
    assert "layer_norm_position \"pre\" (pre-LN) cannot be exported" in message
    message = _cli("pretrain.interop.export_hf", "--init_checkpoint=%s" % (tmp_path / "none"),
                   "--output_dir=%s" % (tmp_path / "out"))
    assert "--init_checkpoint=%s: no checkpoint found" % (tmp_path / "none") in message
    assert not (tmp_path / "out").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    message = _cli("pretrain.interop.import_hf", "--model_dir=%s" % exported[0],
                   "--output_dir=%s" % busy)
    assert "--output_dir %s exists and is not empty; pass --overwrite" % busy in message
    assert os.listdir(busy) == ["keep.txt"]
