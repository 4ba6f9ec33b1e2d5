"""pretrain.interop.export_saved_model: the SavedModel computes what the training loop predicts.

Checkpoints are written here with random weights (scaled up so the outputs
vary), plus the training state a real run leaves (global_step, Adam slots, an
MLM head), which the export must leave out. The export and the training loop build
their own graphs (`tf.Graph().as_default()`); the SavedModel is loaded back
with TF2's eager `tf.saved_model.load` in the (eager) test process.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from pretrain.models import registry, task_heads
from pretrain.models.bert.config import BertConfig
from common.cli_options import UserError
from pretrain.interop.export_saved_model import export_saved_model
from pretrain.training.model_spec import ModelSpec
from pretrain.training.strategy import RunSettings
from pretrain.training.training_loop import TrainingLoop

from tests.testutil.cli_runs import run_main_in_process
from tests.testutil.hf_interop import bert_chain, dense_scale, interop_ulps, worst_case_ulps
from tests.conftest import REPO_ROOT
from tests.testutil.float32_bounds import assert_close, magnitude, summation_ulps

SEQ_LENGTH = 12
TINY_BERT = REPO_ROOT / "tests" / "fixtures" / "configs" / "test_tiny_bert.json"
TINY_ALBERT = REPO_ROOT / "tests" / "fixtures" / "configs" / "test_tiny_albert.json"
ENCODER_OUTPUTS = ("pooled_output", "sequence_output")


def write_checkpoint(folder, config_file, num_labels=0, seed=0):
    """A checkpoint directory at step 7 holding the model and training state."""
    config = BertConfig.from_json_file(config_file)
    rng = np.random.default_rng(seed)
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [None, None])
        model = registry.create_encoder(config, False, ids)
        if num_labels:  # a fine-tuned sequence classifier
            task_heads.get_classifier_output(config, model.get_pooled_output(), num_labels,
                                             is_training=False)
        with tf.variable_scope("cls/predictions"):  # not part of the serving graph
            tf.get_variable("output_bias", [config.vocab_size])
        for variable in list(tf.global_variables()):
            for slot in ("adam_m", "adam_v"):
                tf.get_variable(variable.op.name + "/" + slot, variable.shape)
        global_step = tf.train.get_or_create_global_step()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for variable in tf.global_variables():
                if variable is not global_step:
                    shape = variable.shape.as_list()
                    variable.load(rng.normal(0.0, 0.3, shape).astype(np.float32), session)
            global_step.load(7, session)
            return tf.train.Saver().save(session, str(folder / "model.ckpt"),
                                         global_step=global_step)


def make_inputs(batch, length, seed=1):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 21128, size=(batch, length)).astype(np.int32)
    mask = np.ones((batch, length), np.int32)
    mask[0, length - 2:] = 0  # padding in the first example
    segments = np.zeros((batch, length), np.int32)
    segments[:, length // 2:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def loop_predict(model_fn, model_dir, inputs):
    """{output: [B, ...]} from the training loop's PREDICT mode (pretrain.training), in
    batches of 2, on an empty model_dir: the model function's init_from_checkpoint loads."""
    loop = TrainingLoop(model_fn, RunSettings(model_dir=str(model_dir)))
    rows = list(loop.predict(lambda: tf.data.Dataset.from_tensor_slices(inputs).batch(2)))
    return {key: np.stack([row[key] for row in rows]) for key in rows[0]}


def encoder_model_fn(encoder_config, checkpoint):
    def model_fn(features, labels, mode, params, config=None):  # pylint: disable=unused-argument
        model = registry.create_encoder(encoder_config, False, features["input_ids"],
                                        input_mask=features["input_mask"],
                                        token_type_ids=features["segment_ids"])
        tf.train.init_from_checkpoint(checkpoint, {"bert/": "bert/"})
        return ModelSpec(mode, predictions={
            "pooled_output": model.get_pooled_output(),
            "sequence_output": model.get_sequence_output()})
    return model_fn


def classifier_model_fn(encoder_config, checkpoint, num_labels):
    """PREDICT of the fine-tuned classifier (encoder + pretrain.models.task_heads) from
    `checkpoint`."""
    def model_fn(features, labels, mode, params, config=None):  # pylint: disable=unused-argument
        model = registry.create_encoder(encoder_config, False, features["input_ids"],
                                        input_mask=features["input_mask"],
                                        token_type_ids=features["segment_ids"])
        _, probabilities = task_heads.get_classifier_output(encoder_config,
                                                            model.get_pooled_output(),
                                                            num_labels, is_training=False)
        tf.train.init_from_checkpoint(checkpoint, {"bert/": "bert/", "classifier/": "classifier/"})
        return ModelSpec(mode, predictions={"probabilities": probabilities})
    return model_fn


def serve(export_dir, inputs):
    """Runs serving_default eagerly; returns {output: ndarray}."""
    assert tf2.executing_eagerly()
    signature = tf2.saved_model.load(str(export_dir)).signatures["serving_default"]
    outputs = signature(**{name: tf2.constant(value) for name, value in inputs.items()})
    return {name: value.numpy() for name, value in outputs.items()}


def output_bounds(config_file, checkpoint, length, served):
    """{output: (ulps, scale)}: the bound of two TF evaluations (float32_bounds case 2, at
    its worst) of each served output on [B, length] inputs, and the magnitude it refers to:
    the sequence output's own; for pooled_output the pooler's sum (hf_interop.dense_scale:
    its weights, N(0, 0.3) 32 wide, multiply errors by ~8); for probabilities, compared as
    their logs (log-probs move as the logits do: a near-saturated probability keeps its
    relative precision), the classifier's sum, whose input errors the pooler's bound holds."""
    weights = tf.train.load_checkpoint(checkpoint)
    sequence = magnitude(served["sequence_output"])
    pooled = dense_scale(sequence, weights.get_tensor("bert/pooler/dense/kernel"),
                         weights.get_tensor("bert/pooler/dense/bias"))
    bounds = {"sequence_output": (worst_case_ulps(bert_chain(config_file, length)), sequence),
              "pooled_output": (worst_case_ulps(bert_chain(config_file, length, "pooled")),
                                pooled)}
    if "probabilities" in served:
        num_labels = served["probabilities"].shape[-1]
        chain = bert_chain(config_file, length, "classifier", num_labels)
        bounds["probabilities"] = (worst_case_ulps(chain), dense_scale(
            pooled, weights.get_tensor("classifier/output_weights").T,
            weights.get_tensor("classifier/output_bias")))
    return bounds


def assert_same_outputs(export_dir, model_fn, model_dir, batch, length, config_file,
                        checkpoint):
    """The SavedModel on one batch of [batch, length] against the training loop, which
    predicts in batches of 2: kernel-path sensitive, as other batch shapes take other
    blockings."""
    inputs = make_inputs(batch, length)
    expected = loop_predict(model_fn, model_dir, inputs)
    served = serve(export_dir, inputs)
    bounds = output_bounds(config_file, checkpoint, length, served)
    for name, value in expected.items():
        assert served[name].dtype == np.float32
        assert served[name].shape == value.shape, name
        ulps, scale = bounds[name]
        assert_close(served[name], value, ulps, scale=scale, err_msg=name)
    return served


@pytest.fixture(scope="module")
def bert_export(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    (folder / "ckpt").mkdir()
    prefix = write_checkpoint(folder / "ckpt", TINY_BERT)
    export_dir = export_saved_model(str(folder / "ckpt"), str(TINY_BERT), str(folder / "export"))
    return prefix, pathlib.Path(export_dir)


@pytest.fixture(scope="module")
def classifier_export(tmp_path_factory):
    folder = tmp_path_factory.mktemp("classifier")
    (folder / "ckpt").mkdir()
    prefix = write_checkpoint(folder / "ckpt", TINY_BERT, num_labels=3, seed=5)
    export_dir = export_saved_model(prefix, str(TINY_BERT), str(folder / "export"))
    return prefix, pathlib.Path(export_dir)


def test_saved_model_cli_lists_the_serving_signature(classifier_export):
    _, export_dir = classifier_export
    shown = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--all",
         "--dir", str(export_dir)], capture_output=True, text=True, timeout=300, check=True)
    text = shown.stdout
    assert "signature_def['serving_default']" in text
    assert "tensorflow/serving/predict" in text
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert ("inputs['%s'] tensor_info:\n        dtype: DT_INT32\n        shape: (-1, -1)"
                % name) in text
    for name, shape in (("pooled_output", "(-1, 32)"), ("sequence_output", "(-1, -1, 32)"),
                        ("probabilities", "(-1, 3)")):
        assert ("outputs['%s'] tensor_info:\n        dtype: DT_FLOAT\n        shape: %s"
                % (name, shape)) in text
    # Only the model is saved: no optimizer slots, step or MLM head.
    saved = dict(tf.train.list_variables(str(export_dir / "variables" / "variables")))
    assert saved["classifier/output_weights"] == [3, 32]
    assert not [name for name in saved if "adam" in name or name.startswith("cls/")
                or name == "global_step"]


def test_bert_export_equals_the_training_loops_predictions(bert_export, tmp_path):
    """Kernel-path sensitive: the loop predicts in batches of 2 (assert_same_outputs)."""
    prefix, export_dir = bert_export
    model_fn = encoder_model_fn(BertConfig.from_json_file(TINY_BERT), prefix)
    served = assert_same_outputs(export_dir, model_fn, tmp_path / "loop", 3, SEQ_LENGTH,
                                 TINY_BERT, prefix)
    assert sorted(served) == sorted(ENCODER_OUTPUTS)
    assert served["sequence_output"].std() > 0.1  # the random weights were loaded
    # A shorter sequence and a single example, through the same signature.
    assert_same_outputs(export_dir, model_fn, tmp_path / "loop_short", 1, 5, TINY_BERT, prefix)


def test_google_albert_export_equals_the_training_loops_predictions(tmp_path):
    """Kernel-path sensitive: the loop predicts in batches of 2 (assert_same_outputs)."""
    prefix = write_checkpoint(tmp_path, TINY_ALBERT, seed=3)
    export_dir = export_saved_model(prefix, str(TINY_ALBERT), str(tmp_path / "export"))
    saved = dict(tf.train.list_variables(os.path.join(export_dir, "variables", "variables")))
    assert saved["bert/encoder/embedding_hidden_mapping_in/kernel"] == [16, 32]
    model_fn = encoder_model_fn(BertConfig.from_json_file(TINY_ALBERT), prefix)
    assert_same_outputs(export_dir, model_fn, tmp_path / "loop", 3, 7, TINY_ALBERT, prefix)


def test_model_without_pooler_serves_the_sequence_output_of_transformers(tmp_path, capsys):
    """An import of transformers' BertForMaskedLM fixture (no pooler) exports without
    pooled_output, and its sequence_output is the one transformers computed: kernel-path
    sensitive, to the bound of two libraries' float32 evaluations (hf_interop.interop_ulps),
    which a tanh GELU in place of the erf one exceeds 16x (tests/fixtures/hf/README.md)."""
    from pretrain.interop.import_hf import import_model
    fixture = REPO_ROOT / "tests" / "fixtures" / "hf"
    imported = import_model(str(fixture / "bert_mlm"), str(tmp_path / "imported"), log_fn=None)
    export_dir = export_saved_model(str(tmp_path / "imported"),
                                    str(tmp_path / "imported" / "bert_config.json"),
                                    str(tmp_path / "export"))
    assert "leaves pooled_output out" in capsys.readouterr().out
    expected = np.load(fixture / "expected_outputs.npz")
    signature = tf2.saved_model.load(export_dir).signatures["serving_default"]
    served = signature(input_ids=tf2.constant(expected["bert_input_ids"]),
                       input_mask=tf2.constant(expected["bert_attention_mask"]),
                       segment_ids=tf2.constant(expected["bert_token_type_ids"]))
    assert sorted(served) == ["sequence_output"]
    real = expected["bert_attention_mask"] == 1
    assert_close(served["sequence_output"].numpy()[real], expected["bert_sequence_output"][real],
                 interop_ulps(bert_chain(imported.config, real.shape[1])),
                 err_msg="sequence_output")
    assert imported.config.hidden_act == "gelu_exact"


def test_classifier_export_returns_the_training_loops_probabilities(classifier_export,
                                                                    tmp_path):
    """Kernel-path sensitive: the loop predicts in batches of 2 (assert_same_outputs)."""
    prefix, export_dir = classifier_export
    model_fn = classifier_model_fn(BertConfig.from_json_file(TINY_BERT), prefix, 3)
    for batch, length in ((3, SEQ_LENGTH), (1, 6)):
        inputs = make_inputs(batch, length, seed=batch)
        expected = loop_predict(model_fn, tmp_path / ("loop%d" % batch), inputs)
        served = serve(export_dir, inputs)
        assert sorted(served) == sorted(ENCODER_OUTPUTS + ("probabilities",))
        assert served["probabilities"].shape == (batch, 3)
        ulps, scale = output_bounds(TINY_BERT, prefix, length, served)["probabilities"]
        assert_close(np.log(served["probabilities"]), np.log(expected["probabilities"]), ulps,
                     scale=scale, err_msg="log-probabilities")
        assert served["sequence_output"].shape == (batch, length, 32)
    # softmax multiplies each exp by the reciprocal of their sum (3 terms), NumPy sums the 3
    # products: two sums of 3, the reciprocal and the product, in ulps of 1 (the exps' own
    # error cancels in the ratio)
    assert_close(served["probabilities"].sum(axis=-1), 1.0, summation_ulps(3, 3) + 2,
                 err_msg="sum of probabilities")


def test_unwritable_or_self_destructive_output_is_refused(bert_export, tmp_path):
    prefix, _ = bert_export
    (tmp_path / "a_file").write_text("")
    with pytest.raises(UserError, match="cannot write --output_dir .*a_file/export"):
        export_saved_model(prefix, str(TINY_BERT), str(tmp_path / "a_file" / "export"))
    holder = os.path.dirname(os.path.dirname(prefix))  # would be deleted by the rename
    with pytest.raises(UserError, match="holds the checkpoint"):
        export_saved_model(prefix, str(TINY_BERT), holder, overwrite=True)
    assert os.path.exists(prefix + ".index")
    assert os.listdir(tmp_path) == ["a_file"]


def run_cli(*flags):
    """The tool as a user runs it: a subprocess."""
    return subprocess.run([sys.executable, "-m", "pretrain.interop.export_saved_model", *flags],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def refusal(*flags):
    """A refusal that comes before any export: main() called in this process as the console
    script calls it (no TensorFlow start-up per case); returncode and stderr as run_cli's."""
    code, stdout, stderr, _ = run_main_in_process("pretrain.interop.export_saved_model",
                                                  list(flags), REPO_ROOT)
    return subprocess.CompletedProcess([], code, stdout, stderr)


def assert_clean_failure(result, *phrases):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    for phrase in phrases:
        assert phrase in errors[0]


def test_cli_fails_cleanly_on_missing_checkpoint(tmp_path):
    result = refusal("--init_checkpoint=%s" % (tmp_path / "nothing" / "model.ckpt"),
                     "--bert_config_file=%s" % TINY_BERT,
                     "--output_dir=%s" % (tmp_path / "export"))
    assert_clean_failure(result, "--init_checkpoint", "no checkpoint found")
    assert os.listdir(tmp_path) == []


def test_cli_fails_cleanly_when_config_does_not_fit(bert_export, tmp_path):
    prefix, _ = bert_export
    wider = json.loads(TINY_BERT.read_text())
    wider["hidden_size"] = 64
    config_file = tmp_path / "wide.json"
    config_file.write_text(json.dumps(wider))
    result = refusal("--init_checkpoint=%s" % prefix, "--bert_config_file=%s" % config_file,
                     "--output_dir=%s" % (tmp_path / "export"))
    assert_clean_failure(result, "does not fit checkpoint",
                         "bert/embeddings/LayerNorm/beta: config [64], checkpoint [32]")
    assert os.listdir(tmp_path) == ["wide.json"]  # no export, no temporary left


def test_cli_refuses_a_non_empty_output_dir_unless_overwrite(bert_export, tmp_path):
    prefix, reference = bert_export
    output_dir = tmp_path / "export"
    output_dir.mkdir()
    (output_dir / "keep.txt").write_text("old")
    flags = ("--init_checkpoint=%s" % prefix, "--bert_config_file=%s" % TINY_BERT,
             "--output_dir=%s" % output_dir)
    assert_clean_failure(refusal(*flags), "not empty", "--overwrite")
    assert os.listdir(tmp_path) == ["export"]
    assert os.listdir(output_dir) == ["keep.txt"]

    result = run_cli(*flags, "--overwrite")
    assert result.returncode == 0, result.stderr
    assert os.listdir(tmp_path) == ["export"]  # replaced in place, no temporaries left
    assert sorted(os.listdir(output_dir)) == ["saved_model.pb", "variables"]
    inputs = make_inputs(3, SEQ_LENGTH)
    for name, value in serve(reference, inputs).items():
        # the same export of the same checkpoint, run on the same inputs in this process:
        # the same graph, shapes and kernels, so bit for bit
        np.testing.assert_array_equal(serve(output_dir, inputs)[name], value)
