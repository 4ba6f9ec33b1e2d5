"""SpanBERT's span boundary objective (pretrain.models.bert.span_boundary, --span_boundary_objective):
the head's variables, a NumPy reference, its loss falling on toy data, eval/log output,
the TPU build, checkpoints without the head, and the refusal of data without boundaries."""
import collections
import glob
import logging
import os
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.tpu import tpu as tpu_lib

from tests.testutil.cli_runs import module_command, run_parallel
from pretrain import run_pretraining
from pretrain.checkpoints import checkpoint_loading
from pretrain.models.bert import modeling, span_boundary
from pretrain.training import data_checks, input_pipeline, pretraining_model_fn
from pretrain.training.model_spec import ModeKeys
from tests.testutil.pretrain_data import make_examples, make_span_examples, tiny_config, write_records
from tests.testutil import tiny_models
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, magnitude, summation_ulps, tolerance
from tests.testutil.numpy_bert import assert_weighted_prediction_loss, span_boundary_log_probs

SEQ, PREDS = 16, 4
SBO = "cls/span_boundary/"
LAYOUTS = {"bert": {},
           "albert_google": dict(model_type="albert", albert_layout="google", embedding_size=8),
           "albert_brightmart": dict(model_type="albert", albert_layout="brightmart",
                                     embedding_size=8)}


def _features(batch, seq, preds, span_boundaries=True):
    """Zero-valued features of the given shapes (graph building only)."""
    feats = {k: tf.zeros([batch, seq], tf.int32) for k in ("input_ids", "input_mask",
                                                           "segment_ids")}
    names = ["masked_lm_positions", "masked_lm_ids"]
    names += ["masked_lm_span_left", "masked_lm_span_right"] if span_boundaries else []
    feats.update({k: tf.zeros([batch, preds], tf.int32) for k in names})
    feats.update(masked_lm_weights=tf.ones([batch, preds]),
                 next_sentence_labels=tf.zeros([batch, 1], tf.int32))
    return feats


def _variable_shapes(config, sbo, preds=3):
    with tf.Graph().as_default():
        outputs = pretraining_model_fn.pretraining_losses(
            config, _features(2, 8, preds, sbo), True, True, span_boundary_objective=sbo)
        return outputs, {v.op.name: v.shape.as_list() for v in tf.global_variables()}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_head_variable_names_and_shapes(layout):
    config = modeling.BertConfig.from_dict(tiny_models.tiny_config(**LAYOUTS[layout]))
    h, v = 16, 50
    e = 8 if layout.startswith("albert") else h
    outputs, shapes = _variable_shapes(config, sbo=True)
    _, without = _variable_shapes(config, sbo=False)
    assert {n: s for n, s in shapes.items() if n.startswith(SBO)} == {
        SBO + "position_embeddings": [span_boundary.DEFAULT_MAX_SPAN_POSITIONS, h],
        SBO + "transform/dense/kernel": [3 * h, h], SBO + "transform/dense/bias": [h],
        SBO + "transform/LayerNorm/gamma": [h], SBO + "transform/LayerNorm/beta": [h],
        SBO + "transform/dense_1/kernel": [h, e], SBO + "transform/dense_1/bias": [e],
        SBO + "transform/LayerNorm_1/gamma": [e], SBO + "transform/LayerNorm_1/beta": [e],
        SBO + "output_bias": [v]}
    # every other variable keeps its (Google) name and shape
    assert {n: s for n, s in shapes.items() if not n.startswith(SBO)} == without
    assert shapes["bert/embeddings/word_embeddings"] == [v, e]  # the tied decoder
    assert outputs["span_boundary_log_probs"].shape.as_list() == [2 * 3, v]
    # the table size does not follow max_predictions_per_seq
    assert _variable_shapes(config, sbo=True, preds=5)[1] == shapes


@pytest.mark.parametrize("layout", ["bert", "albert_google"])
def test_head_matches_numpy_reference(layout):
    config = modeling.BertConfig.from_dict(tiny_models.tiny_config(**LAYOUTS[layout]))
    e = 8 if layout.startswith("albert") else 16
    rng = np.random.RandomState(5)
    sequence = rng.normal(size=(2, 9, 16)).astype(np.float32)
    table = rng.normal(size=(50, e)).astype(np.float32)
    # row 0: spans [1, 2] and [4..7] (offset 3 is clipped to the 3-row table's last row);
    # row 1: one span [6, 7] and a padding prediction (weight 0, all positions 0).
    positions = np.array([[1, 2, 4, 7], [6, 7, 0, 0]], np.int32)
    left = np.array([[0, 0, 3, 3], [5, 5, 0, 0]], np.int32)
    right = np.array([[3, 3, 8, 8], [8, 8, 0, 0]], np.int32)
    labels = np.array([[7, 9, 11, 3], [40, 2, 0, 0]], np.int32)
    weights = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        loss, per_example, log_probs = span_boundary.get_span_boundary_output(
            config, tf.constant(sequence), tf.constant(table), tf.constant(positions),
            tf.constant(left), tf.constant(right), tf.constant(labels), tf.constant(weights),
            max_span_positions=3)
        values = {}
        for var in tf.global_variables():  # random values everywhere (also LayerNorm, biases)
            values[var.op.name] = rng.normal(size=var.shape.as_list()).astype(np.float32)
            var.load(values[var.op.name], session)
        got_loss, got_per_example, got_log_probs = session.run([loss, per_example, log_probs])
    assert values[SBO + "position_embeddings"].shape == (3, 16)
    ref_log_probs = span_boundary_log_probs(values, sequence, table, positions, left, right)
    assert ref_log_probs.shape == (8, 50)
    # the MLP's sums (3h in, h, LayerNorm's two; h to e, LayerNorm's two), its two GELUs,
    # the tied decoder (e) and the log-softmax over 50 (tests/testutil/float32_bounds.py case 2)
    ulps = summation_ulps(3 * 16, 16, 16, 16, 16, e, e, e, 50) + 4 * ELEMENTWISE_ULPS
    assert_weighted_prediction_loss((got_loss, got_per_example, got_log_probs), ref_log_probs,
                                    labels, weights, ulps)
    # the clipped offset and the right boundary matter: change them, the output changes by
    # far more than the bound above
    moved = span_boundary_log_probs(values, sequence, table, positions, left,
                                    np.where(right == 8, 7, right))
    assert np.abs(moved - ref_log_probs)[2:4].max() > 100 * tolerance(ulps, magnitude(ref_log_probs))


def test_input_pipeline_parses_the_boundaries_only_with_sbo(tmp_path):
    path = write_records(tmp_path / "s.tfrecord", make_span_examples(4, seed=2), mode="roberta",
                         masking="span", has_span_boundaries=True)
    assert "masked_lm_span_left" not in input_pipeline.feature_spec(SEQ, PREDS)
    for sbo in (False, True):
        with tf.Graph().as_default():
            dataset = input_pipeline.input_fn_builder(path, SEQ, PREDS, False, batch_size=4,
                                                      span_boundaries=sbo)({})
            batch = tf.data.make_one_shot_iterator(dataset).get_next()
            with tf.Session() as session:
                batch = session.run(batch)
        assert ("masked_lm_span_right" in batch) is sbo
    assert batch["masked_lm_span_left"].dtype == np.int32
    expected = np.array([e["masked_lm_span_left"] for e in make_span_examples(4, seed=2)])
    np.testing.assert_array_equal(batch["masked_lm_span_left"], expected)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny BERT trained 40 steps with the SBO head on toy span data, with its eval."""
    root = tmp_path_factory.mktemp("sbo_train")
    cfg = tiny_config(root / "cfg.json")
    data = write_records(root / "span.tfrecord", make_span_examples(64, seed=1), mode="roberta",
                         masking="span", has_span_boundaries=True)
    out = root / "out"
    handler = _Collect()
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.addHandler(handler)
    absl_logger.setLevel(logging.INFO)
    try:
        result = run_pretraining.run(dict(
            bert_config_file=cfg, input_file=data, output_dir=str(out), do_train=True,
            do_eval=True, span_boundary_objective=True, train_batch_size=16, eval_batch_size=16,
            learning_rate=1e-2, num_train_steps=40, num_warmup_steps=0, log_every_n_steps=10,
            random_seed=1, shuffle_buffer=64, max_eval_steps=4, save_checkpoints_steps=1000))
    finally:
        absl_logger.removeHandler(handler)
        absl_logger.setLevel(level)
    return {"root": root, "cfg": cfg, "data": data, "out": out, "result": result,
            "log": handler.lines}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _summary_values(output_dir, tag):
    values = []
    for path in sorted(glob.glob(os.path.join(str(output_dir), "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            values += [(event.step, v.simple_value) for v in event.summary.value if v.tag == tag]
    return sorted(values)


def test_sbo_loss_falls_on_toy_corpus_and_is_reported(trained):
    assert trained["result"]["global_step"] == 40
    assert trained["result"]["span_boundary_objective"] is True
    written = dict(line.split(" = ") for line in
                   (trained["out"] / "eval_results.txt").read_text().splitlines())
    for key in ("masked_lm_loss", "masked_lm_accuracy", "span_boundary_loss",
                "span_boundary_accuracy"):
        assert key in written, written
    steps = [line for line in trained["log"] if line.startswith("step ")]
    assert steps and all(" sbo_loss=" in line for line in steps), trained["log"][-5:]
    initial = float(re.search(r"sbo_loss=([0-9.]+)", steps[0]).group(1))  # the step-0 batch
    # not rounding: at initialisation (weights of std 0.02) the head's logits are nearly
    # equal, so its loss is within 5% of the uniform distribution's ln 50
    assert steps[0].startswith("step 0:") and initial == pytest.approx(np.log(50), rel=0.05)
    final = float(written["span_boundary_loss"])
    assert final < 0.5 * initial
    assert float(written["span_boundary_accuracy"]) > 0.3  # chance: 1 in 20 tokens
    summaries = _summary_values(trained["out"], "train/span_boundary_loss")
    assert len(summaries) >= 4 and summaries[-1][1] < 0.5 * summaries[0][1]
    names = tf.train.load_checkpoint(str(trained["out"])).get_variable_to_shape_map()
    assert SBO + "output_bias" in names and SBO + "output_bias/adam_m" in names


def test_checkpoints_with_and_without_the_head_load_both_ways(trained, tmp_path):
    config = modeling.BertConfig.from_json_file(trained["cfg"])
    with tf.Graph().as_default():  # a model without the head (fine-tuning, other tools)
        pretraining_model_fn.pretraining_losses(config, _features(2, 8, 3, False), False, False)
        report = checkpoint_loading.init_from_checkpoint(str(trained["out"]), log_fn=None)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(session, str(tmp_path / "plain.ckpt"))
    assert sorted(report.unused_in_checkpoint) == sorted(
        n for n in tf.train.load_checkpoint(str(trained["out"])).get_variable_to_shape_map()
        if n.startswith(SBO) and not n.endswith(("adam_m", "adam_v")))
    assert not report.missing_in_checkpoint
    with tf.Graph().as_default():  # the head on a checkpoint without it: it starts fresh
        pretraining_model_fn.pretraining_losses(config, _features(2, 8, 3), True, False,
                                                span_boundary_objective=True)
        report = checkpoint_loading.init_from_checkpoint(prefix, log_fn=None)
    assert report.missing_in_checkpoint and all(
        n.startswith(SBO) for n in report.missing_in_checkpoint)


def test_export_hf_leaves_the_head_out_and_says_so(trained, tmp_path):
    from pretrain.interop import export_hf
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                               + [f"t{i}" for i in range(45)]) + "\n")
    lines = []
    out = export_hf.export_model(str(trained["out"]), str(trained["cfg"]),
                                 str(tmp_path / "hf"), vocab_file=str(vocab), log_fn=lines.append)
    report = "\n".join(lines)
    assert os.path.isfile(os.path.join(out, "model.safetensors"))
    assert "cls/span_boundary/output_bias" in report and "span boundary head" in report


def test_tpu_model_fn_builds_inside_tensorflows_tpu_shard():
    """The SBO head under TensorFlow's TPU rewrite (graph only), as the MLM head."""
    config = modeling.BertConfig.from_dict(tiny_models.tiny_config())
    model_fn = pretraining_model_fn.model_fn_builder(config, num_train_steps=10,
                                                     use_sentence_head=False,
                                                     span_boundary_objective=True)

    def computation():
        spec = model_fn(_features(2, 8, 3), None, ModeKeys.TRAIN,
                        {"strategy": "tpu", "use_tpu": True, "batch_size": 2})
        with tf.control_dependencies([spec.train_op]):
            return tf.identity(spec.loss)

    with tf.Graph().as_default() as graph:
        tpu_lib.shard(computation, num_shards=2)
        op_types = collections.Counter(op.type for op in graph.get_operations())
        assert any(v.op.name.startswith(SBO) for v in tf.trainable_variables())
        assert op_types["CrossReplicaSum"] == len(tf.trainable_variables()) + 1


def _span_gap_data(root):
    """Files that cannot feed the SBO head, each one way."""
    plain = make_examples(4, seed=1, sentence_task="none")
    return {
        "false": write_records(root / "wwm.tfrecord", plain, mode="roberta", masking="wwm",
                               has_span_boundaries=False),
        "old": write_records(root / "old.tfrecord", plain, mode="roberta"),
        "bare": write_records(root / "bare.tfrecord", plain, mode="roberta", sidecar=False),
        "span": write_records(root / "span.tfrecord", make_span_examples(4, seed=1),
                              mode="roberta", masking="span", has_span_boundaries=True),
        "span_bare": write_records(root / "span_bare.tfrecord", make_span_examples(4, seed=1),
                                   sidecar=False),
    }


def test_data_checks_refuse_data_without_boundaries(tmp_path):
    files = _span_gap_data(tmp_path)
    config = modeling.BertConfig.from_dict(tiny_models.tiny_config(max_position_embeddings=32))

    def check(path, sbo=True, preds=PREDS):
        return data_checks.check_input_data(path, SEQ, preds, config, use_sentence_head=False,
                                            span_boundary_objective=sbo)

    expected = {
        "false": f"{files['false']}.meta.json says has_span_boundaries=false (masking=wwm)",
        "old": f"{files['old']}.meta.json has no has_span_boundaries field",
        "bare": f"{files['bare']}: first record has no masked_lm_span_left / "
                "masked_lm_span_right feature",
    }
    for key, text in expected.items():
        check(files[key], sbo=False)  # fine without the head
        with pytest.raises(data_checks.DataCheckError) as err:
            check(files[key])
        message = str(err.value)
        assert "\n" not in message and message.startswith(
            "--span_boundary_objective needs span boundaries in the data, but ")
        assert text in message
        assert "python -m data_gen.create_pretraining_data --masking=span" in message
    check(files["span"])
    check(files["span_bare"])
    with pytest.raises(data_checks.DataCheckError) as err:  # several files: the first, counted
        check(f"{files['false']},{files['old']},{files['span']}")
    assert "(and 1 more file(s))" in str(err.value)
    with pytest.raises(data_checks.DataCheckError) as err:  # with other problems: listed first
        check(files["false"], preds=5)
    lines = str(err.value).splitlines()
    assert "--span_boundary_objective" in lines[1] and "max_predictions_per_seq=4" in lines[2]


def test_cli_refuses_sbo_on_data_without_boundaries(tmp_path):
    files = _span_gap_data(tmp_path)
    tiny_config(tmp_path / "cfg.json")
    common = ["--bert_config_file=cfg.json", "--do_train", "--num_train_steps=2",
              f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDS}",
              "--train_batch_size=4", "--span_boundary_objective"]
    results = run_parallel([
        (key, module_command("pretrain.run_pretraining", f"--input_file={files[key]}",
                             f"--output_dir=out_{key}", *common)) for key in ("false", "bare")],
        tmp_path)
    for key, (code, out, err, _) in results.items():
        assert "Traceback" not in out + err, err[-3000:]
        errors = [line for line in err.splitlines() if line.startswith("error: ")]
        assert code == 2 and len(errors) == 1, f"{key}: exit {code}\n{err[-3000:]}"
        assert os.path.basename(files[key]) in errors[0]
        assert "make the data with python -m data_gen.create_pretraining_data --masking=span" \
            in errors[0]
        assert not (tmp_path / f"out_{key}").exists()  # stopped before any output
