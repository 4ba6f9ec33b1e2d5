"""ELECTRA's two networks on today's encoder carry google-research/electra's variable names
and shapes: the spec is tests/fixtures/electra/upstream_variables.json, written by
upstream's own run_pretraining.PretrainingModel (make_upstream_variables.py)."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models.electra.modeling import ElectraEncoder
from tests.testutil.pretrain_data import CASES, electra_config  # noqa: F401

HEADS = ("generator_predictions/", "discriminator_predictions/")  # the objective's, not here


def build_both(config, batch=2, seq=8, is_training=False):
    ids = tf.constant(np.arange(batch * seq).reshape(batch, seq) % 40 + 5, tf.int32)
    untied = config.untied_generator_embeddings
    generator = ElectraEncoder(config.generator_config(), is_training, ids, scope="generator",
                               embedding_size=None if untied else config.embedding_width,
                               untied_embeddings=untied)
    discriminator = ElectraEncoder(config.discriminator_config(), is_training, ids,
                                   embedding_size=config.embedding_width)
    return generator, discriminator


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_variables_are_upstreams_names_and_shapes(case):
    config = electra_config(case["hparams"])
    expected = {name: shape for name, shape in case["variables"].items()
                if not name.startswith(HEADS)}
    with tf.Graph().as_default():
        generator, discriminator = build_both(config)
        ours = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
        assert ours == expected
        hidden = config.hidden_size
        assert discriminator.get_sequence_output().shape.as_list() == [2, 8, hidden]
        assert generator.get_sequence_output().shape.as_list() == [
            2, 8, config.generator_config().hidden_size]
        assert discriminator.get_pooled_output().shape.as_list() == [2, hidden]
        if not config.untied_generator_embeddings:  # one table, two readers
            assert generator.get_embedding_table() is discriminator.get_embedding_table()


def test_tied_networks_read_the_same_embeddings_and_the_pooled_output_is_the_first_token():
    config = electra_config(CASES[0]["hparams"])
    with tf.Graph().as_default():
        generator, discriminator = build_both(config)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            gen_emb, disc_emb, pooled, sequence = sess.run([
                generator.get_embedding_output(), discriminator.get_embedding_output(),
                discriminator.get_pooled_output(), discriminator.get_sequence_output()])
    assert gen_emb.shape == (2, 8, config.embedding_width)
    # same ids through the same ops on the same shared tables: bit-identical
    np.testing.assert_array_equal(gen_emb, disc_emb)
    np.testing.assert_array_equal(pooled, sequence[:, 0])  # a slice of the same tensor
    assert np.isfinite(sequence).all() and sequence.std() > 0.1


def test_an_albert_config_is_refused():
    from pretrain.models.bert.config import BertConfig
    albert = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=1, intermediate_size=64, embedding_size=16)
    with tf.Graph().as_default(), pytest.raises(TypeError, match="BERT-type BertConfig"):
        ElectraEncoder(albert, False, tf.zeros([1, 4], tf.int32))
