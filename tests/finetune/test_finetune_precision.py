"""Fine-tuning in mixed precision (finetune.model_fn, --precision): the encoder computes in
bf16 or fp16, its variables, the head and the loss stay float32, fp16 trains with dynamic
loss scaling, and the predictions stay within the compute type's rounding of fp32's."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from finetune import tasks
from finetune.model_fn import model_fn_builder
from tests.testutil.finetune_task import TINY_CONFIG
from pretrain.models import registry
from pretrain.training.model_spec import ModeKeys

BATCH = {"input_ids": np.array([[2, 7, 9, 3, 11, 12, 3, 0], [2, 8, 3, 10, 3, 0, 0, 0]], np.int32),
         "input_mask": np.array([[1] * 7 + [0], [1] * 5 + [0] * 3], np.int32),
         "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 0, 0, 0]], np.int32)}
LABELS = np.array([1, 0], np.int32)


def train_then_predict(precision, folder, steps=20):
    """(the graph's float dtypes of MatMul outputs, variable dtypes, training losses,
    probabilities [2, 2] after the steps, from a second, PREDICT graph)."""
    config = registry.config_from_dict(dict(TINY_CONFIG, vocab_size=16))
    model_fn = model_fn_builder(tasks.get_task("pair"), config, 2, None, 3e-3, steps, 1,
                                precision=precision)
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(1)
        tf.train.get_or_create_global_step()
        features = {name: tf.constant(value) for name, value in BATCH.items()}
        train = model_fn(features, tf.constant(LABELS), ModeKeys.TRAIN)
        matmuls = {op.outputs[0].dtype.name for op in graph.get_operations()
                   if op.type in ("MatMul", "BatchMatMulV2")}
        variables = {variable.op.name: variable.dtype.base_dtype.name
                     for variable in tf.global_variables()}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            losses = [session.run([train.train_op, train.loss])[1] for _ in range(steps)]
            checkpoint = tf.train.Saver().save(session, str(folder / precision / "model.ckpt"))
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        features = {name: tf.constant(value) for name, value in BATCH.items()}
        predict = model_fn(features, None, ModeKeys.PREDICT)
        with tf.Session() as session:
            tf.train.Saver().restore(session, checkpoint)
            probabilities = session.run(predict.predictions["probabilities"])
    return matmuls, variables, losses, probabilities


@pytest.fixture(scope="module")
def fp32(tmp_path_factory):
    return train_then_predict("fp32", tmp_path_factory.mktemp("precision"))


@pytest.mark.parametrize("precision, compute, tolerance", [("bf16", "bfloat16", 5e-2),
                                                            ("fp16", "float16", 5e-2)])
def test_mixed_precision_fine_tuning(fp32, tmp_path, precision, compute, tolerance):
    matmuls, variables, losses, probabilities = train_then_predict(precision, tmp_path)
    assert compute in matmuls and "float32" in matmuls  # encoder in `compute`, head float32
    assert fp32[0] == {"float32"}
    encoder = {name: dtype for name, dtype in variables.items() if name.startswith("bert/")}
    assert encoder and set(encoder.values()) == {"float32"}
    scaled = [name for name in variables if name.startswith("loss_scale/")]
    assert bool(scaled) == (precision == "fp16")
    assert all(np.isfinite(losses)) and losses[-1] < 0.1 < 0.69 < losses[0], losses  # learnt
    # The same initial weights (seeded) and recipe: the losses and predictions follow fp32's
    # within the compute type's rounding (measured: 0.02 apart at most, bf16 and fp16).
    np.testing.assert_allclose(losses, fp32[2], atol=tolerance, rtol=0)
    np.testing.assert_allclose(probabilities, fp32[3], atol=tolerance, rtol=0)


def test_an_unknown_precision_is_refused_by_name():
    config = registry.config_from_dict(dict(TINY_CONFIG, vocab_size=16))
    with pytest.raises(Exception, match="--precision='fp8' is not supported"):
        model_fn_builder(tasks.get_task("pair"), config, 2, None, 1e-3, 10, 1, precision="fp8")


def test_a_float32_run_on_a_cpu_with_native_bf16_is_told_so(tmp_path):
    from pretrain.training import mixed_precision
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile\n"
                       "processor\t: 1\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile\n")
    flags = mixed_precision.native_bf16_flags(str(cpuinfo))
    assert flags == ["avx512_bf16"]
    assert "avx512_bf16" in mixed_precision.bf16_hint("fp32", flags)
    assert "--precision=bf16" in mixed_precision.bf16_hint("fp32", flags)
    assert mixed_precision.bf16_hint("bf16", flags) is None
    assert mixed_precision.bf16_hint("fp32", []) is None
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    assert mixed_precision.native_bf16_flags(str(cpuinfo)) == []
    assert mixed_precision.native_bf16_flags(str(tmp_path / "absent")) == []
