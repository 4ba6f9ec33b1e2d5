"""Live XLNet interop against transformers' own code; every test skips without
torch/transformers (tests/pretrain/models/xlnet/test_hf_xlnet.py covers the same ground from the fixture).

Our side (pretrain.interop, our TF graph through xlnet_hf_bounds) and transformers' side
(eval mode, float32) run in one process; outputs must agree to the bound of two libraries'
float32 evaluations of each output's longest chain (hf_interop.interop_ulps with
xlnet_hf_bounds.xlnet_chain; kernel-path sensitive). With the throwaway env of
tests/fixtures/hf_xlnet/README.md (nothing enters .venv):

    PYTHONPATH=.:tests:$PWD/.venv/lib/python3.11/site-packages USE_TF=0 \
        /tmp/hfenv/bin/python -m pytest -q tests/pretrain/models/xlnet/test_hf_xlnet_live.py

The sentencepiece test also needs sentencepiece there (`/tmp/hfenv/bin/pip install
sentencepiece`) and skips without it.
"""
import json

import numpy as np
import pytest

from data_gen.text.tokenization import FullTokenizer
from tests.testutil.hf_interop import interop_ulps
from pretrain.checkpoints import checkpoint_io
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from pretrain.models.xlnet.config import XLNetConfig
from tests.testutil.hf_interop import hf  # noqa: F401  the fixture: torch and transformers, or a skip
from tests.testutil.float32_bounds import assert_close
from tests.testutil.xlnet_hf_bounds import (WORDPIECE_VOCAB, fixture_copy, load_fixture_arrays,
                               random_xlnet_tensors, xlnet_chain, xlnet_outputs)

TEXT = ("我是中国人", "你在这里")


def _torch_outputs(hf, model, arrays, permuted=True):
    """transformers' outputs named as xlnet_outputs names ours (float32 numpy)."""
    model.eval()
    base = {key: hf.torch.from_numpy(arrays[key]).long()
            for key in ("input_ids", "attention_mask", "token_type_ids")}
    out = {}
    with hf.torch.no_grad():
        plain = model(**base, output_hidden_states=True)
        out["sequence_output"] = plain.hidden_states[-1].numpy()
        if hasattr(plain, "logits"):
            out["lm_logits"] = plain.logits.numpy()
        if permuted:
            perm = model(**base, perm_mask=hf.torch.from_numpy(arrays["perm_mask"]),
                         target_mapping=hf.torch.from_numpy(arrays["target_mapping"]),
                         output_hidden_states=True)
            out.update(perm_sequence_output=perm.hidden_states[-2].numpy(),
                       perm_query_output=perm.hidden_states[-1].numpy(),
                       plm_logits=perm.logits.numpy())
    return out


def _compare(config, theirs, ours, mask):
    """transformers' outputs against ours (at the real positions where they have one per
    position), each to the bound of its chain (interop_ulps of xlnet_chain)."""
    real = np.asarray(mask).astype(bool)
    for key, value in theirs.items():
        got, want = (ours[key][real], value[real]) if value.shape[:2] == real.shape else (
            ours[key], value)
        assert_close(got, want, interop_ulps(xlnet_chain(config, real.shape[1], key)),
                     err_msg=key)


def test_exported_import_loads_with_the_auto_classes_and_our_numbers(hf, tmp_path):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (_compare)."""
    report = import_model(fixture_copy(tmp_path / "src"), tmp_path / "ours", log_fn=None)
    export_model(report.output_dir, output_dir=tmp_path / "hf", log_fn=None)
    arrays = load_fixture_arrays()
    ours = xlnet_outputs(report.config, report.checkpoint, arrays)
    for auto in (hf.T.AutoModelForCausalLM, hf.T.XLNetLMHeadModel):
        model, info = auto.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
        assert type(model).__name__ == "XLNetLMHeadModel"
        assert not info["missing_keys"] and not info["unexpected_keys"], info
        assert model.lm_loss.weight.data_ptr() == model.transformer.word_embedding.weight.data_ptr()
        _compare(report.config, _torch_outputs(hf, model, arrays), ours,
                 arrays["attention_mask"])
    base = hf.T.AutoModel.from_pretrained(str(tmp_path / "hf"))
    assert type(base).__name__ == "XLNetModel"
    _compare(report.config, _torch_outputs(hf, base, arrays, permuted=False), ours,
             arrays["attention_mask"])
    tokenizer = hf.T.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    ours_tokenizer = FullTokenizer(str(WORDPIECE_VOCAB), do_lower_case=True)
    ids = [ours_tokenizer.convert_tokens_to_ids(ours_tokenizer.tokenize(text)) for text in TEXT]
    cls, sep = ours_tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    assert tokenizer(*TEXT)["input_ids"] == [cls] + ids[0] + [sep] + ids[1] + [sep]  # BERT's


def test_our_tied_relu_clamped_checkpoint_exports_with_our_numbers(hf, tmp_path):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (_compare)."""
    config = XLNetConfig(n_token=115, d_model=16, n_layer=3, n_head=2, d_head=8, d_inner=24,
                         ff_activation="relu", untie_r=False, clamp_len=3)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "bert_config.json").write_text(config.to_json_string())
    (tmp_path / "ckpt" / "vocab.txt").write_bytes(WORDPIECE_VOCAB.read_bytes())
    prefix = str(tmp_path / "ckpt" / "model.ckpt-3")
    checkpoint_io.write_checkpoint(random_xlnet_tensors(config, seed=5), prefix, write_state=True)
    export_model(str(tmp_path / "ckpt"), output_dir=tmp_path / "hf", log_fn=None)
    model, info = hf.T.XLNetLMHeadModel.from_pretrained(str(tmp_path / "hf"),
                                                        output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    arrays = load_fixture_arrays()
    _compare(config, _torch_outputs(hf, model, arrays), xlnet_outputs(config, prefix, arrays),
             arrays["attention_mask"])


def test_a_transformers_classifier_imports_with_its_logits(hf, tmp_path):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (_compare)."""
    raw = json.loads(fixture_copy(tmp_path / "lm").joinpath("config.json").read_text())
    raw = {key: value for key, value in raw.items() if key not in ("architectures",
                                                                   "transformers_version")}
    hf.torch.manual_seed(0)
    model = hf.T.XLNetForSequenceClassification(hf.T.XLNetConfig(**dict(raw, num_labels=3)))
    with hf.torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(hf.torch.randn_like(parameter) * 0.1)
    model.save_pretrained(str(tmp_path / "src"))
    (tmp_path / "src" / "vocab.txt").write_bytes(WORDPIECE_VOCAB.read_bytes())
    report = import_model(tmp_path / "src", tmp_path / "out", log_fn=None)
    assert report.task["labels"] == ["LABEL_0", "LABEL_1", "LABEL_2"]
    arrays = load_fixture_arrays()
    ours = xlnet_outputs(report.config, report.checkpoint, arrays, num_labels=3)
    # transformers summarises the last position: pad on the left there (XLNetTokenizer's
    # side), on the right here
    left = {key: np.stack([np.roll(row, int((1 - mask).sum())) for row, mask in zip(
        arrays[key], arrays["attention_mask"])]) for key in ("input_ids", "attention_mask",
                                                              "token_type_ids")}
    model.eval()
    with hf.torch.no_grad():
        logits = model(**{key: hf.torch.from_numpy(value).long()
                          for key, value in left.items()}).logits.numpy()
    assert_close(ours["classifier_logits"], logits, interop_ulps(xlnet_chain(
        report.config, left["input_ids"].shape[1], "classifier_logits")), err_msg="logits")
    assert np.abs(logits).max() > 0.1


@pytest.mark.parametrize("use_fast", [False, True], ids=["slow", "fast"])
def test_the_sentencepiece_tokenizer_exports_as_xlnets(hf, tmp_path, use_fast):
    spm = pytest.importorskip("sentencepiece", reason="the tokenizer test needs sentencepiece")
    lines = ["我是中国人", "你在这里", "hello world", "中文 xlnet 模型", "abc abd abe"] * 20
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(tmp_path / "spiece"), vocab_size=60,
        model_type="unigram", hard_vocab_limit=False, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"],
        minloglevel=2)
    source = fixture_copy(tmp_path / "src", vocab=None)
    (source / "spiece.model").write_bytes((tmp_path / "spiece.model").read_bytes())
    report = import_model(source, tmp_path / "out", log_fn=None)
    export_model(report.output_dir, output_dir=tmp_path / "hf", log_fn=None)
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "spiece.model"))
    sep, cls = processor.piece_to_id("<sep>"), processor.piece_to_id("<cls>")
    pieces = [processor.encode(text) for text in TEXT]
    try:
        tokenizer = hf.T.AutoTokenizer.from_pretrained(str(tmp_path / "hf"), use_fast=use_fast)
    except ImportError as err:  # e.g. TensorFlow's protobuf older than sentencepiece's pb2
        pytest.skip("transformers cannot convert the sentencepiece model here: %s" % err)
    assert type(tokenizer).__name__ == "XLNetTokenizer" + ("Fast" if use_fast else "")
    encoded = tokenizer(*TEXT)
    assert encoded["input_ids"] == pieces[0] + [sep] + pieces[1] + [sep, cls]  # XLNet's layout
    assert encoded["token_type_ids"][-1] == 2 and tokenizer.padding_side == "left"
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["pad_token_id"] == processor.piece_to_id("<pad>")
