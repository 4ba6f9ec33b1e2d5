"""XLNet's config and relative attention against a NumPy reference that indexes every
(query, key) distance directly, without the relative shift."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models.config import ConfigError
from pretrain.models.xlnet import relative_attention as rel
from pretrain.models.xlnet.config import XLNetConfig
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, summation_ulps

# The encoding's angle d * f in float32: the exponent's division, the pow, the reciprocal
# and the product: 3 roundings and an elementwise function, relative to the angle.
ANGLE_ULPS = 3 + ELEMENTWISE_ULPS

UPSTREAM = {"d_head": 3, "d_inner": 16, "d_model": 8, "ff_activation": "gelu", "n_head": 2,
            "n_layer": 2, "n_token": 40, "untie_r": True}


def test_reads_upstreams_file_and_names_what_is_wrong(tmp_path):
    path = tmp_path / "xlnet_config.json"
    path.write_text(json.dumps(UPSTREAM))  # upstream's file: no model_type
    config = XLNetConfig.from_json_file(str(path))
    assert (config.d_model, config.n_head, config.d_head, config.untie_r) == (8, 2, 3, True)
    assert (config.dropout, config.dropatt, config.clamp_len) == (0.1, 0.1, -1)
    assert config.to_dict() == dict(UPSTREAM, model_type="xlnet")
    assert XLNetConfig.from_dict(config.to_dict()).to_dict() == config.to_dict()
    assert config.max_sequence_length is None
    for change, message in (({"n_head": 0}, "'n_head' = 0: must be a positive integer"),
                            ({"ff_activation": "tanh"}, "choose one of relu, gelu"),
                            ({"untie_r": 1}, "'untie_r' = 1: must be true or false"),
                            ({"d_model": 7}, "must be even"),
                            ({"model_type": "bert"}, "needs \"xlnet\""),
                            ({"hidden_size": 8}, "hidden_size are not XLNet fields")):
        path.write_text(json.dumps(dict(UPSTREAM, **change)))
        with pytest.raises(ConfigError, match=str(path)) as raised:
            XLNetConfig.from_json_file(str(path))
        assert message in str(raised.value)
    with pytest.raises(ConfigError, match="lacks field.*d_inner"):
        XLNetConfig.from_dict({k: v for k, v in UPSTREAM.items() if k != "d_inner"})


def _encoding(distances, d_model):
    frequency = 1.0 / 10000 ** (np.arange(0, d_model, 2.0) / d_model)
    angles = np.asarray(distances, np.float64)[..., None] * frequency
    return np.concatenate([np.sin(angles), np.cos(angles)], -1)


@pytest.mark.parametrize("query_length,key_length", [(4, 4), (3, 6)])
def test_rel_shift_puts_each_distance_at_its_key(query_length, key_length):
    """The shift only moves values: bit for bit. The encoding against float64 NumPy to the
    bound of its angle's roundings and sin/cos: elementwise, no sums, so not kernel-path
    sensitive."""
    rng = np.random.RandomState(0)
    scores = rng.randn(2, 3, query_length, key_length + query_length).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        shifted = session.run(rel.rel_shift(tf.constant(scores), key_length))
        encoding = session.run(rel.relative_position_encoding(query_length, key_length, 6))
        clamped = session.run(rel.relative_position_encoding(query_length, key_length, 6,
                                                             clamp_len=2))
    memory = key_length - query_length
    for i in range(query_length):
        for j in range(key_length):
            distance = memory + i - j  # query i sits at position memory + i
            row = key_length - distance  # the encoding's row of that distance
            np.testing.assert_array_equal(shifted[:, :, i, j], scores[:, :, i, row])
    # sin/cos move by at most the angle's error (their derivatives are within 1), then round
    # as elementwise functions of values within 1: ulps of the largest angle, |d| (f <= 1)
    ulps = ANGLE_ULPS + ELEMENTWISE_ULPS
    distances = np.arange(key_length, -query_length, -1)
    assert_close(encoding, _encoding(distances, 6), ulps, scale=np.abs(distances).max(),
                 err_msg="encoding")
    assert_close(clamped, _encoding(np.clip(distances, -2, 2), 6), ulps, scale=2.0,
                 err_msg="clamped")


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    variance = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12) * gamma + beta


def _reference(h, weights, biases, segments, blocked, config):
    """The layer, one (query, key) pair at a time."""
    batch, length, _ = h.shape
    q, k, v = (np.einsum("bsh,hnd->bsnd", h, weights[name]) for name in "qkv")
    scores = np.zeros((batch, config.n_head, length, length))
    for i in range(length):
        for j in range(length):
            r_head = np.einsum("h,hnd->nd", _encoding(i - j, config.d_model), weights["r"])
            for b in range(batch):
                s = int(segments[b, i] != segments[b, j])
                scores[b, :, i, j] = (
                    np.einsum("nd,nd->n", q[b, i] + biases["r_w_bias"], k[b, j])
                    + np.einsum("nd,nd->n", q[b, i] + biases["r_r_bias"], r_head)
                    + np.einsum("nd,nd->n", q[b, i] + biases["r_s_bias"],
                                biases["seg_embed"][s]))
    scores = scores / np.sqrt(config.d_head) - 1e30 * blocked[:, None]
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    vector = np.einsum("bnij,bjnd->bind", probabilities, v)
    output = np.einsum("bind,hnd->bih", vector, weights["o"]) + h
    return _layer_norm(output, weights["gamma"], weights["beta"])


def test_content_stream_attention_matches_the_reference():
    """Kernel-path sensitive: the float32 graph against float64 NumPy, to the bound of its
    chain's sums."""
    config = XLNetConfig.from_dict(UPSTREAM)
    rng = np.random.RandomState(1)
    batch, length = 2, 5
    h = rng.randn(batch, length, config.d_model).astype(np.float32)
    segments = np.array([[0, 0, 0, 1, 1], [0, 0, 1, 1, 1]])
    blocked = np.zeros((batch, length, length), np.float32)
    blocked[1, :, 4] = 1.0  # the second example's last token is padding
    projection = (config.d_model, config.n_head, config.d_head)
    weights = {name: rng.randn(*projection).astype(np.float32) * 0.3 for name in "qkvro"}
    weights["gamma"] = rng.uniform(0.5, 1.5, config.d_model).astype(np.float32)
    weights["beta"] = rng.randn(config.d_model).astype(np.float32) * 0.1
    biases = {name: rng.randn(config.n_head, config.d_head).astype(np.float32) * 0.5
              for name in ("r_w_bias", "r_r_bias", "r_s_bias")}
    biases["seg_embed"] = rng.randn(2, config.n_head, config.d_head).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        with tf.variable_scope("layer_0/rel_attn"):
            output = rel.relative_attention(
                tf.constant(h), rel.relative_position_encoding(length, length, config.d_model),
                config, {name: tf.constant(value) for name, value in biases.items()},
                other_segment=tf.constant(
                    (segments[:, :, None] != segments[:, None, :]).astype(np.int32)),
                blocked_h=tf.constant(blocked))
        variables = {v.op.name: v for v in tf.global_variables()}
        names = {"layer_0/rel_attn/%s/kernel" % name: name for name in "qkvro"}
        names.update({"layer_0/rel_attn/LayerNorm/gamma": "gamma",
                      "layer_0/rel_attn/LayerNorm/beta": "beta"})
        assert sorted(variables) == sorted(names)  # upstream's names, nothing else
        for name, key in names.items():
            variables[name].load(weights[key], session)
        got = session.run(output)
    expected = _reference(h.astype(np.float64), weights, biases, segments, blocked, config)
    # float32 graph against float64 NumPy (case 2): the q, k, v and r projections (d_model),
    # the three scores (d_head each) and their sum (3), the softmax's sum and the context
    # (length each), the output projection (n_head * d_head), the residual (2), LayerNorm's
    # mean and variance (d_model); the scaling and the encoding's angle; exp, rsqrt, sin/cos
    d_model, d_head = config.d_model, config.d_head
    ulps = summation_ulps(d_model, d_head, d_head, d_head, 3, length, length,
                          config.n_head * d_head, 2, d_model, d_model) + 1 + ANGLE_ULPS \
        + 3 * ELEMENTWISE_ULPS
    assert_close(got, expected, ulps, err_msg="content stream")
