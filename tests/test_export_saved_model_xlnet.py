"""An XLNet checkpoint as a TF Serving SavedModel: the content stream as sequence_output (the
transformers fixture's numbers), pooled_output only with a sequence summary, assets."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.checkpoints import checkpoint_io
from pretrain.interop import export_saved_model
from pretrain.interop.import_hf import import_model
from xlnet_hf_testutil import fixture_copy, load_fixture_arrays, xlnet_outputs

TOL = 1e-4


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
    out = tmp_path / "saved"
    export_saved_model.export_saved_model(imported.output_dir, output_dir=str(out))
    assert "has no pooler (model/sequnece_summary/*)" in capsys.readouterr().out
    arrays = load_fixture_arrays()
    names, values, saved = _serve(out, arrays)
    assert names == ["sequence_output"]
    real = arrays["attention_mask"].astype(bool)
    assert values["sequence_output"].shape == (2, 10, 16)
    assert np.abs(values["sequence_output"] - arrays["sequence_output"])[real].max() < TOL
    assert "model/transformer/mask_emb/mask_emb" not in saved  # the query stream is not served
    assert sorted(os.listdir(out / "assets.extra")) == ["spiece.model"]


def test_a_checkpoint_with_a_summary_serves_pooled_output_and_its_classifier(imported, tmp_path):
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
    assert np.abs(values["pooled_output"] - ours["pooled_output"]).max() < 1e-5
    probabilities = np.exp(ours["classifier_logits"])
    probabilities /= probabilities.sum(-1, keepdims=True)
    assert np.abs(values["probabilities"] - probabilities).max() < 1e-5
    # the summary reads the last real token: row 1 is padded from position 8 on
    last = np.tanh(arrays["sequence_output"][1, 7] @ tensors[
        "model/sequnece_summary/summary/kernel"] + tensors["model/sequnece_summary/summary/bias"])
    assert np.abs(values["pooled_output"][1] - last).max() < 1e-3
