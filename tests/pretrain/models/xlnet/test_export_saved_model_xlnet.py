"""An XLNet checkpoint as a TF Serving SavedModel: the content stream as sequence_output (the
transformers fixture's numbers), pooled_output only with a sequence summary, assets."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.hf_interop import dense_scale, interop_ulps, worst_case_ulps
from pretrain.checkpoints import checkpoint_io
from pretrain.interop import export_saved_model
from pretrain.interop.import_hf import import_model
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, magnitude, summation_ulps
from tests.testutil.xlnet_hf_bounds import fixture_copy, load_fixture_arrays, xlnet_chain, xlnet_outputs

SEQ = 10  # the fixture's inputs are [2, 10]


def _serve(directory, arrays):
    """(output names, {name: value}, saved variable names) of the SavedModel on the fixture's
    inputs (input_mask = attention_mask, segment_ids = token_type_ids)."""
    with tf.Graph().as_default(), tf.Session() as session:
        meta = tf.saved_model.loader.load(session, ["serve"], str(directory))
        signature = meta.signature_def["serving_default"]
        feeds = {signature.inputs[name].name: arrays[key] for name, key in (
            ("input_ids", "input_ids"), ("input_mask", "attention_mask"),
            ("segment_ids", "token_type_ids"))}
        names = sorted(signature.outputs)
        values = session.run({name: signature.outputs[name].name for name in names}, feeds)
        return names, values, {v.op.name for v in tf.global_variables()}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("xlnet_saved")
    return import_model(fixture_copy(root / "src", vocab="spiece.model"), root / "out",
                        log_fn=None)


def test_a_pretraining_checkpoint_serves_the_content_stream_only(imported, tmp_path, capsys):
    """Kernel-path sensitive: the served content stream against transformers', to the bound
    of two libraries' float32 evaluations (hf_interop.interop_ulps)."""
    out = tmp_path / "saved"
    export_saved_model.export_saved_model(imported.output_dir, output_dir=str(out))
    assert "has no pooler (model/sequnece_summary/*)" in capsys.readouterr().out
    arrays = load_fixture_arrays()
    names, values, saved = _serve(out, arrays)
    assert names == ["sequence_output"]
    real = arrays["attention_mask"].astype(bool)
    assert values["sequence_output"].shape == (2, 10, 16)
    assert_close(values["sequence_output"][real], arrays["sequence_output"][real],
                 interop_ulps(xlnet_chain(imported.config, SEQ, "sequence_output")),
                 err_msg="sequence_output")
    assert "model/transformer/mask_emb/mask_emb" not in saved  # the query stream is not served
    assert sorted(os.listdir(out / "assets.extra")) == ["spiece.model"]


def test_a_checkpoint_with_a_summary_serves_pooled_output_and_its_classifier(imported, tmp_path):
    """Kernel-path sensitive: the SavedModel's graph against xlnet_outputs' (another graph),
    and against transformers' content stream through NumPy's summary."""
    tensors = checkpoint_io.read_checkpoint(imported.checkpoint)
    rng = np.random.RandomState(1)
    tensors.update({"model/sequnece_summary/summary/kernel": rng.normal(size=[16, 16]),
                    "model/sequnece_summary/summary/bias": rng.normal(size=[16]),
                    "classifier/output_weights": rng.normal(size=[3, 16]),
                    "classifier/output_bias": rng.normal(size=[3])})
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "bert_config.json").write_text(imported.config.to_json_string())
    checkpoint_io.write_checkpoint({name: np.asarray(value, np.float32)
                                    for name, value in tensors.items()},
                                   str(tmp_path / "ckpt" / "model.ckpt"), write_state=True)
    export_saved_model.export_saved_model(str(tmp_path / "ckpt"),
                                          output_dir=str(tmp_path / "saved"))
    arrays = load_fixture_arrays()
    names, values, _ = _serve(tmp_path / "saved", arrays)
    assert names == ["pooled_output", "probabilities", "sequence_output"]
    ours = xlnet_outputs(imported.config, str(tmp_path / "ckpt" / "model.ckpt"), arrays,
                         num_labels=3)
    # The summary and the classifier have N(0, 1) weights, 16 wide: they multiply the
    # magnitudes (and errors) of their inputs by ~13, past the tanh and softmax that bound
    # their outputs by 1. Each bound refers to the sum of |terms| of that layer (dense_scale).
    kernel, bias = (tensors["model/sequnece_summary/summary/" + name] for name in ("kernel",
                                                                                   "bias"))
    summary = dense_scale(magnitude(values["sequence_output"]), kernel, bias)
    logits = dense_scale(summary, tensors["classifier/output_weights"].T,
                         tensors["classifier/output_bias"])
    # two TF graphs (case 2, at its worst)
    assert_close(values["pooled_output"], ours["pooled_output"],
                 worst_case_ulps(xlnet_chain(imported.config, SEQ, "pooled_output")),
                 scale=summary, err_msg="pooled")
    probabilities = np.exp(ours["classifier_logits"])
    probabilities /= probabilities.sum(-1, keepdims=True)
    # compared as their logs, which move as the logits do (a near-saturated probability
    # keeps its relative precision); NumPy's exp, sum of 3, division and log add theirs
    assert_close(np.log(values["probabilities"]), np.log(probabilities),
                 worst_case_ulps(xlnet_chain(imported.config, SEQ, "classifier_logits"))
                 + summation_ulps(3) + 1 + 2 * ELEMENTWISE_ULPS, scale=logits,
                 err_msg="log-probabilities")
    # the summary reads the last real token: row 1 is padded from position 8 on. Against
    # transformers' state there: its bound (interop) times the kernel's gain, and NumPy's
    # float32 summary (17 terms and tanh) on the way
    last = np.tanh(arrays["sequence_output"][1, 7] @ kernel + bias)
    assert_close(values["pooled_output"][1], last,
                 interop_ulps(xlnet_chain(imported.config, SEQ, "sequence_output"))
                 + summation_ulps(kernel.shape[0] + 1) + ELEMENTWISE_ULPS, scale=summary,
                 err_msg="summary at the last real token")
