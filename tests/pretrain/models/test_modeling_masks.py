"""Attention masks: bidirectional, causal (left-to-right LM) and UniLM seq2seq."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import attention
from pretrain.models.bert import modeling

from tests.testutil.tiny_models import tiny_config


def mask_values(input_mask, token_type_ids, mode):
    with tf.Graph().as_default(), tf.Session() as session:
        return session.run(attention.create_attention_mask(
            tf.constant(input_mask), tf.constant(token_type_ids), mode))


def test_bidirectional_mask_blocks_only_padding():
    got = mask_values([[1, 1, 1, 0]], [[0, 0, 1, 0]], "bidirectional")
    assert got.shape == (1, 4, 4)
    np.testing.assert_array_equal(got[0], [[1, 1, 1, 0]] * 4)


def test_causal_mask_is_lower_triangular_within_real_tokens():
    got = mask_values([[1, 1, 1, 1, 0]], [[0] * 5], "causal")
    expected = np.tril(np.ones((5, 5)))
    expected[:, 4] = 0  # padding column never visible
    np.testing.assert_array_equal(got[0], expected)


def test_unilm_mask_source_bidirectional_target_causal():
    # source = positions 0..2 (segment 0), target = 3..5 (segment 1), 6 = padding
    got = mask_values([[1, 1, 1, 1, 1, 1, 0]], [[0, 0, 0, 1, 1, 1, 0]], "unilm")[0]
    expected = np.zeros((7, 7))
    expected[:, 0:3] = 1              # everyone sees the whole source
    for i in range(3, 7):             # target token i sees targets 3..i
        expected[i, 3:i + 1] = 1
    expected[:, 6] = 0                # padding column never visible
    np.testing.assert_array_equal(got, expected)
    assert got[0:3, 3:6].sum() == 0   # source never sees the target


def test_unknown_mode_and_unilm_without_segments_fail_clearly():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="attention_mode 'sideways' is unknown"):
            attention.create_attention_mask(tf.ones([1, 3], tf.int32), None, "sideways")
        with pytest.raises(ValueError, match="needs token_type_ids"):
            attention.create_attention_mask(tf.ones([1, 3], tf.int32), None, "unilm")


@pytest.fixture(scope="module")
def mode_runner():
    """One graph holding causal and UniLM models that share the same weights."""
    graph = tf.Graph()
    with graph.as_default():
        config = modeling.BertConfig.from_dict(tiny_config())
        ids = tf.placeholder(tf.int32, [1, 6])
        types = tf.constant([[0, 0, 0, 1, 1, 1]])
        outputs = {}
        for index, mode in enumerate(("causal", "unilm")):
            with tf.variable_scope(tf.get_variable_scope(), reuse=index > 0):
                model = modeling.BertModel(config, False, ids, token_type_ids=types,
                                           attention_mode=mode)
            outputs[mode] = model.get_sequence_output()
        session = tf.Session()
        session.run(tf.global_variables_initializer())
    yield lambda mode, value: session.run(outputs[mode], {ids: value})
    session.close()


def changed_positions(run, mode, position):
    base = np.array([[5, 6, 7, 8, 9, 10]])
    edited = base.copy()
    edited[0, position] = 33
    diff = np.abs(run(mode, base) - run(mode, edited)).max(axis=-1)[0]
    # same graph, same shapes: a masked key's softmax weight underflows to exactly 0, so a
    # position that cannot see the edit is bit-identical, and any difference is a change
    return [int(i) for i in np.nonzero(diff > 0)[0]]


def test_causal_model_outputs_depend_only_on_the_past(mode_runner):
    assert changed_positions(mode_runner, "causal", 2) == [2, 3, 4, 5]
    assert changed_positions(mode_runner, "causal", 5) == [5]


def test_unilm_model_source_ignores_target_and_target_is_causal(mode_runner):
    assert changed_positions(mode_runner, "unilm", 4) == [4, 5]
    assert changed_positions(mode_runner, "unilm", 1) == [0, 1, 2, 3, 4, 5]
