"""Every layout creates exactly the variables (names and shapes) of the issue."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import heads, registry
from pretrain.models.bert import modeling

from tests.testutil.tiny_models import expected_variables, tiny_config

LAYOUTS = {
    "bert": tiny_config(model_type="bert"),
    "google": tiny_config(model_type="albert", albert_layout="google", embedding_size=8),
    "google_groups": tiny_config(model_type="albert", albert_layout="google", embedding_size=8,
                                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "google_e_equals_h": tiny_config(model_type="albert", albert_layout="google",
                                     embedding_size=16),
    "brightmart": tiny_config(model_type="albert", albert_layout="brightmart", embedding_size=8),
    "brightmart_attention": tiny_config(model_type="albert", albert_layout="brightmart",
                                        embedding_size=8, sharing="attention"),
    "brightmart_ffn": tiny_config(model_type="albert", albert_layout="brightmart",
                                  embedding_size=8, sharing="ffn"),
    "brightmart_none_preln": tiny_config(model_type="albert", albert_layout="brightmart",
                                         embedding_size=8, sharing="none",
                                         layer_norm_position="pre"),
}


def build_pretraining_graph(config_dict, compute_type=tf.float32):
    config = modeling.BertConfig.from_dict(config_dict)
    ids = tf.constant([[1, 2, 3, 4]])
    model = registry.create_encoder(config, True, ids, compute_type=compute_type)
    heads.get_masked_lm_output(config, model.get_sequence_output(),
                               model.get_embedding_table(), tf.constant([[1, 2]]),
                               tf.constant([[5, 6]]), tf.constant([[1.0, 1.0]]),
                               output_projection=model.get_embedding_projection())
    heads.get_sentence_output(config, model.get_pooled_output(), tf.constant([1]))
    return model


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_trainable_variables_equal_the_released_layout(layout):
    with tf.Graph().as_default():
        build_pretraining_graph(LAYOUTS[layout])
        got = {v.op.name: v.shape.as_list() for v in tf.trainable_variables()}
        assert len(got) == len(tf.trainable_variables())
    expected = dict(expected_variables(LAYOUTS[layout]))
    assert sorted(got) == sorted(expected)
    assert got == expected


def test_bf16_stores_float32_variables_and_keeps_names():
    with tf.Graph().as_default():
        model = build_pretraining_graph(LAYOUTS["brightmart"], compute_type=tf.bfloat16)
        variables = tf.trainable_variables()
        assert {v.dtype.base_dtype for v in variables} == {tf.float32}
        assert {v.op.name for v in variables} == {n for n, _ in
                                                  expected_variables(LAYOUTS["brightmart"])}
        assert model.get_sequence_output().dtype == tf.float32
        matmul_types = {op.get_attr("T") for op in tf.get_default_graph().get_operations()
                        if op.type in ("MatMul", "BatchMatMulV2")
                        and op.name.startswith("bert/encoder")}
        assert matmul_types == {tf.bfloat16}


def test_model_refuses_sequence_longer_than_positions_and_wrong_config():
    config = modeling.BertConfig.from_dict(tiny_config())
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="max_position_embeddings=16"):
            modeling.BertModel(config, False, tf.zeros([1, 17], tf.int32))
        with pytest.raises(ValueError, match="AlbertModel needs an ALBERT config"):
            modeling.AlbertModel(config, False, tf.zeros([1, 4], tf.int32))
        with pytest.raises(ValueError, match="attention_mode"):
            modeling.BertModel(config, False, tf.zeros([1, 4], tf.int32), attention_mode="x")
    assert np.isfinite(config.initializer_range)
