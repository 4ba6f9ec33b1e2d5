"""Building blocks: dense, LayerNorm, activations, dropout, mixed precision.

Variables are created with `tf.get_variable` under explicit variable scopes so
that their names are exactly google-research/bert's (`<scope>/kernel`,
`<scope>/bias`, `<scope>/LayerNorm/gamma`, ...).

Mixed precision: `mixed_precision_scope(compute_dtype)` installs a custom
getter that stores every variable in float32 and returns it cast to the
compute dtype when read. Code that must see the float32 variable itself
(LayerNorm parameters, embedding tables) reads it inside `float32_reads()`.
"""
import contextlib
import functools
import math
import threading

import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.models import random_draws

_STATE = threading.local()
# ALBERT's embedding projection (brightmart layout), which its MLM head reuses transposed.
EMBEDDING_PROJECTION_COLLECTION = "pretrain_embedding_projection"


def _float32_reads_active():
    return getattr(_STATE, "float32_reads", 0) > 0


@contextlib.contextmanager
def float32_reads():
    """Variables fetched inside this block are returned uncast (float32)."""
    _STATE.float32_reads = getattr(_STATE, "float32_reads", 0) + 1
    try:
        yield
    finally:
        _STATE.float32_reads -= 1


def make_mixed_precision_getter(compute_dtype):
    """Custom getter: float32 storage, `compute_dtype` on read."""
    compute_dtype = tf.as_dtype(compute_dtype)

    def mixed_precision_getter(getter, *args, **kwargs):
        requested = tf.as_dtype(kwargs.get("dtype") or tf.float32)
        if requested.is_floating:
            kwargs["dtype"] = tf.float32
        variable = getter(*args, **kwargs)
        if (requested.is_floating and compute_dtype != tf.float32
                and not _float32_reads_active()):
            return tf.cast(variable, compute_dtype)
        return variable

    return mixed_precision_getter


@contextlib.contextmanager
def mixed_precision_scope(scope_name, compute_dtype, default_name=None):
    """Variable scope `scope_name` whose float variables are read in compute_dtype."""
    compute_dtype = tf.as_dtype(compute_dtype)
    getter = None
    if compute_dtype != tf.float32:
        getter = make_mixed_precision_getter(compute_dtype)
    with tf.variable_scope(scope_name, default_name=default_name,
                           custom_getter=getter) as scope:
        yield scope


def create_initializer(initializer_range=0.02):
    """Truncated normal initializer, as google-research/bert uses."""
    return tf.truncated_normal_initializer(stddev=initializer_range)


def get_shape_list(tensor, expected_rank=None, name="tensor"):
    """Static dims as Python ints, dynamic ones as scalar tensors."""
    shape = tensor.shape.as_list()
    if expected_rank is not None:
        ranks = (expected_rank,) if isinstance(expected_rank, int) else expected_rank
        if len(shape) not in ranks:
            raise ValueError("%s must have rank %s, got shape %s"
                             % (name, " or ".join(map(str, ranks)), shape))
    dynamic = None
    for index, dim in enumerate(shape):
        if dim is None:
            if dynamic is None:
                dynamic = tf.shape(tensor)
            shape[index] = dynamic[index]
    return shape


def float32_math_for_bf16(activation):
    """`activation` computed in float32 for a bfloat16 input, its result cast back.

    TensorFlow's CPU kernels for bf16 elementwise ops are slower than their float32 ones (a
    GELU's forward and backward over [4096, 1024]: 27.0 ms in bf16, 14.1 in fp32, 19.9 with
    the casts), while bf16 pays in the matmuls; on an AMX Xeon the fine-tuning step in bf16 is
    8% faster at 20 tokens and 13% at 128 this way (docs/finetuning.md), and more accurate.
    """
    @functools.wraps(activation)
    def wrapped(x):
        if x.dtype.base_dtype == tf.bfloat16:
            return tf.cast(activation(tf.cast(x, tf.float32)), tf.bfloat16)
        return activation(x)

    return wrapped


@float32_math_for_bf16
def gelu(x):
    """GELU, tanh approximation, computed exactly as google-research/bert."""
    cdf = 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


@float32_math_for_bf16
def gelu_exact(x):
    """GELU with the exact erf formulation."""
    return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


@float32_math_for_bf16
def swish(x):
    return x * tf.sigmoid(x)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": gelu,
    "gelu_pytorch_tanh": gelu,
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "swish": swish,
    "tanh": tf.tanh,
    "linear": None,
}


def get_activation(name):
    """Maps an activation name (config.hidden_act) to a function or None."""
    if not isinstance(name, str):
        return name
    key = name.lower()
    if key not in _ACTIVATIONS:
        raise ValueError("unsupported activation %r; use one of %s"
                         % (name, ", ".join(sorted(_ACTIVATIONS))))
    return _ACTIVATIONS[key]


def dropout(input_tensor, dropout_prob):
    """Dropout with drop probability `dropout_prob` (no-op when 0 or None); its mask is a
    stateless draw keyed by seed, step, replica and draw (pretrain.models.random_draws)."""
    if not dropout_prob:
        return input_tensor
    return random_draws.dropout(input_tensor, dropout_prob)


def dense(input_tensor, units, name, activation=None, initializer_range=0.02,
          use_bias=True, reuse=None, kernel_initializer=None):
    """Fully connected layer on the last axis.

    The compat.v1 dense of every model here, with no Keras (TensorFlow >= 2.16 has Keras 3,
    where `tf.compat.v1.layers.dense` is gone). With
    `kernel_initializer=tf.glorot_uniform_initializer()` it is `tf.layers.dense`'s layer:
    the same variables, initial values and outputs (tests/pretrain/models/test_dense_layer.py).

    Args:
      input_tensor: [..., in_width] float tensor (float32/bf16/fp16).
      units: output width.
      name: variable scope; creates `<name>/kernel` [in_width, units] and
        `<name>/bias` [units] (zeros).
      activation: function or None.
      kernel_initializer: the kernel's initializer; default Google BERT's truncated normal
        of stddev `initializer_range`.
    Returns:
      [..., units] in the dtype of `input_tensor`.
    """
    in_width = input_tensor.shape[-1]
    if in_width is None:
        raise ValueError("dense %r needs a static last dimension, got %s"
                         % (name, input_tensor.shape))
    in_width = int(in_width)
    with tf.variable_scope(name, reuse=reuse):
        kernel = tf.get_variable("kernel", [in_width, units], initializer=(
            kernel_initializer or create_initializer(initializer_range)))
        bias = None
        if use_bias:
            bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
    dtype = input_tensor.dtype
    rank = input_tensor.shape.ndims
    flat = input_tensor if rank == 2 else tf.reshape(input_tensor, [-1, in_width])
    output = tf.matmul(flat, tf.cast(kernel, dtype))
    if bias is not None:
        output = tf.nn.bias_add(output, tf.cast(bias, dtype))
    if activation is not None:
        output = activation(output)
    if rank != 2:
        outer = get_shape_list(input_tensor)[:-1]
        output = tf.reshape(output, outer + [units])
    return output


def layer_norm(input_tensor, name="LayerNorm", epsilon=1e-12, reuse=None, condition=None):
    """LayerNorm over the last axis; statistics computed in float32.

    Creates `<name>/gamma` and `<name>/beta` (float32). Returns a tensor of the
    input's dtype. epsilon=1e-12 matches tf.contrib.layers.layer_norm, which
    Google's BERT and ALBERT checkpoints were trained with.

    Conditional LayerNorm: with `condition` [B, C'] float32, the input is
    [B*S, W] or [B, S, W], and the bias-free `<name>/gamma_dense/kernel` and
    `<name>/beta_dense/kernel` [C', W], zero-initialised, add condition @ kernel
    to gamma and beta, so a fresh condition leaves a loaded model's outputs
    exactly as they were.
    """
    width = int(input_tensor.shape[-1])
    with tf.variable_scope(name, reuse=reuse), float32_reads():
        gamma = tf.get_variable("gamma", [width], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [width], initializer=tf.zeros_initializer())
        shifts = None if condition is None else _condition_shifts(condition, width)
    x = tf.cast(input_tensor, tf.float32)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    normed = (x - mean) * tf.math.rsqrt(variance + epsilon)
    output = normed * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32)
    if shifts is not None:
        output = _add_condition_shifts(output, x, shifts, condition, epsilon)
    return tf.cast(output, input_tensor.dtype)


def _condition_shifts(condition, width):
    """(gamma shift, beta shift), each [B, W] = condition [B, C'] @ zero-initialised kernel."""
    shifts = []
    for name in ("gamma_dense", "beta_dense"):
        with tf.variable_scope(name):
            kernel = tf.get_variable("kernel", [int(condition.shape[-1]), width],
                                     initializer=tf.zeros_initializer())
        shifts.append(tf.matmul(tf.cast(condition, tf.float32), kernel))
    return shifts


def _normalize_apart(x, epsilon):
    """(x - mean) / std over the last axis, with ops of its own: reusing the plain
    LayerNorm's tensors would stop Grappler and oneDNN from rewriting and fusing it
    as they do without a condition, and its outputs would move by rounding."""
    width = float(int(x.shape[-1]))
    centered = x - tf.reduce_sum(x, axis=-1, keepdims=True) / width
    variance = tf.reduce_sum(tf.square(centered), axis=-1, keepdims=True) / width
    return centered / tf.sqrt(variance + epsilon)


def _add_condition_shifts(output, x, shifts, condition, epsilon):
    """output + normalised(x) * gamma_shift + beta_shift, per example, for [B*S, W] or
    [B, S, W] (x is the LayerNorm's float32 input).

    Added after the plain LayerNorm rather than folded into gamma/beta: oneDNN's
    fused LayerNorm kernel assumes [W] parameters (it crashes on [B, 1, W]), and
    zero shifts then add exactly 0, so a loaded model's outputs stay bit-identical
    (tests/pretrain/models/test_model_options.py checks it with Grappler's rewrites on).
    """
    width = int(output.shape[-1])
    gamma_shift, beta_shift = (shift[:, tf.newaxis, :] for shift in shifts)  # [B, 1, W]
    if output.shape.ndims == 2:  # [B*S, W]
        grouped = tf.reshape(x, [get_shape_list(condition)[0], -1, width])
        grouped = _normalize_apart(grouped, epsilon) * gamma_shift + beta_shift
        return output + tf.reshape(grouped, [-1, width])
    return output + _normalize_apart(x, epsilon) * gamma_shift + beta_shift
