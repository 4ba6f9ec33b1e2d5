"""pretrain.models.layers.dense stands in for `tf.compat.v1.layers.dense`, which Keras 3
(TensorFlow >= 2.16) no longer has: with a Glorot uniform kernel it makes the variables that
layer made (names, shapes, dtypes; a kernel drawn from the same Glorot uniform distribution, a
zero bias) and, on the same values, computes its outputs bit for bit, so a checkpoint written
through either loads into the other unchanged.

The comparison with Keras's layer runs where it exists (the TensorFlow 2.15 runtime). Keras 2.15
draws its kernel with a stateless op and its own seed, so the two draws are alike in law, not in
value. Ours, drawn from a graph seed, is pinned and the same on every runtime.
"""
import hashlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import layers

SEED = 7
# sha256 of the float32 bytes of each variable's initial value under graph seed 7, recorded on
# TensorFlow 2.15 and 2.21 alike.
PINNED = {
    "mix/kernel": "47088f54889ac0b6880124410ce2929aed4dde1bcd58e822d45c1f160a7e71e1",
    "mix/bias": "de47c9b27eb8d300dbb5f2c353e632c393262cf06340c4fa7f1b40c4cbd36f90",
}
INPUTS = np.linspace(-2.0, 2.0, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def _keras_dense():
    """tf.compat.v1.layers.dense, or None where Keras 3 left it out."""
    try:
        return tf.layers.dense
    except (AttributeError, ImportError):
        return None


def ours(inputs):
    return layers.dense(inputs, 5, "mix", activation=tf.tanh,
                        kernel_initializer=tf.glorot_uniform_initializer())


def _initializer_ops(variable):
    """Sorted op types of the subgraph computing the variable's initial value."""
    seen, todo = set(), [variable.initial_value.op]
    while todo:
        op = todo.pop()
        if op not in seen:
            seen.add(op)
            todo.extend(tensor.op for tensor in op.inputs)
    return sorted(op.type for op in seen)


def _build(make_layer, checkpoint=None, save_to=None):
    """({name: (shape, dtype, initializer op types, value)}, output on INPUTS) of a graph with
    one layer under scope `toy`, initialised from graph seed SEED or restored from `checkpoint`."""
    with tf.Graph().as_default():
        tf.set_random_seed(SEED)
        with tf.variable_scope("toy"):
            output = make_layer(tf.constant(INPUTS))
        saver = tf.train.Saver()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            if checkpoint:
                saver.restore(session, checkpoint)
            if save_to:
                saver.save(session, save_to)
            variables = {variable.op.name: (variable.shape.as_list(), variable.dtype.base_dtype,
                                            _initializer_ops(variable), session.run(variable))
                         for variable in tf.global_variables()}
            return variables, session.run(output)


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float32).tobytes()).hexdigest()


def test_same_variables_and_checkpoints_as_keras_dense(tmp_path):
    keras_dense = _keras_dense()
    if keras_dense is None:
        pytest.skip(f"tf.compat.v1.layers.dense is not in TensorFlow {tf.__version__} (Keras 3);"
                    " compared on the TensorFlow 2.15 runtime")
    keras_layer = lambda inputs: keras_dense(inputs, 5, tf.tanh, name="mix")  # noqa: E731
    theirs, theirs_output = _build(keras_layer, save_to=str(tmp_path / "keras.ckpt"))
    mine, my_output = _build(ours, save_to=str(tmp_path / "ours.ckpt"))
    assert list(mine) == list(theirs) == ["toy/mix/kernel", "toy/mix/bias"]
    for name in theirs:
        assert mine[name][:2] == theirs[name][:2]  # shape, dtype
    np.testing.assert_array_equal(mine["toy/mix/bias"][3], theirs["toy/mix/bias"][3])
    # each loads the other's checkpoint and then computes the other's outputs, bit for bit
    restored, output = _build(ours, checkpoint=str(tmp_path / "keras.ckpt"))
    np.testing.assert_array_equal(restored["toy/mix/kernel"][3], theirs["toy/mix/kernel"][3])
    np.testing.assert_array_equal(output, theirs_output)
    restored, output = _build(keras_layer, checkpoint=str(tmp_path / "ours.ckpt"))
    np.testing.assert_array_equal(restored["toy/mix/kernel"][3], mine["toy/mix/kernel"][3])
    np.testing.assert_array_equal(output, my_output)


def test_the_kernels_initial_law_is_keras_glorot_uniform():
    keras_dense = _keras_dense()
    if keras_dense is None:
        pytest.skip(f"tf.compat.v1.layers.dense is not in TensorFlow {tf.__version__} (Keras 3);"
                    " compared on the TensorFlow 2.15 runtime")
    limit = np.sqrt(6.0 / (256 + 512))
    kernels = {}
    for name, make in (("keras", lambda inputs: keras_dense(inputs, 512, name="wide")),
                       ("ours", lambda inputs: layers.dense(
                           inputs, 512, "wide", kernel_initializer=tf.glorot_uniform_initializer()))):
        with tf.Graph().as_default():
            make(tf.zeros([1, 256]))
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                kernels[name] = session.run(tf.global_variables()[0])
    for kernel in kernels.values():  # U(-limit, limit): 131072 draws
        assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.999 * limit
        assert abs(kernel.mean()) < 0.01 * limit
        assert abs(kernel.std() / (limit / np.sqrt(3)) - 1) < 0.01


def test_glorot_uniform_kernel_zero_bias_and_the_dense_tanh_on_this_runtime():
    variables, output = _build(ours)
    assert {name: (shape, dtype) for name, (shape, dtype, _, _) in variables.items()} == {
        "toy/mix/kernel": ([4, 5], tf.float32), "toy/mix/bias": ([5], tf.float32)}
    kernel, bias = variables["toy/mix/kernel"][3], variables["toy/mix/bias"][3]
    limit = np.sqrt(6.0 / (4 + 5))  # Glorot uniform: U(-limit, limit)
    assert np.all(np.abs(kernel) <= limit) and kernel.std() > limit / 4
    np.testing.assert_array_equal(bias, np.zeros(5, np.float32))
    assert {"mix/kernel": _digest(kernel), "mix/bias": _digest(bias)} == PINNED
    assert output.shape == (2, 3, 5)
    np.testing.assert_allclose(output, np.tanh(INPUTS @ kernel), rtol=0, atol=1e-6)


def test_default_kernel_is_google_berts_truncated_normal():
    with tf.Graph().as_default():
        layers.dense(tf.zeros([2, 4]), 3, "plain", initializer_range=0.5)
        kernel, bias = tf.global_variables()
        assert (kernel.op.name, bias.op.name) == ("plain/kernel", "plain/bias")
        assert "TruncatedNormal" in _initializer_ops(kernel)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            values = session.run(kernel)
        assert np.all(np.abs(values) <= 2 * 0.5)  # truncated at two standard deviations
