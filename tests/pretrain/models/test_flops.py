"""pretrain.models.flops against counts made from the variables' own shapes: every
dense kernel [in, out] costs 2·in·out per token it is applied to, every layer's
attention 2·2·S·H per token, the tied output layer 2·E·V per prediction, and
training costs 3 x forward. ELECTRA's shapes are those upstream's own graph made
(tests/fixtures/electra), BERT's those our graph makes."""
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.pretrain_data import CASES, electra_config
from pretrain.models import flops, registry
from pretrain.models.electra import flops as electra_flops
from pretrain.models.bert.config import BertConfig
from pretrain.training.pretraining_model_fn import pretraining_losses

SEQ, PREDS = 8, 3
_LAYER = re.compile(r"^(\w+)/encoder/layer_\d+/")


def _count_from_shapes(variables, seq, preds, per_token, per_example, per_prediction,
                       output_table, unused=()):
    """3 x forward FLOPs from {name: shape}: kernels whose name starts with a prefix in
    `per_token` run on every token, `per_example` once, `per_prediction` at each masked
    position; `output_table` [V, E] is the tied output layer; attention per layer;
    `unused` prefixes are built but feed no loss, so they cost nothing in training."""
    forward = 0
    for name, shape in variables.items():
        if unused and name.startswith(unused):
            continue
        if not (name.endswith("/kernel") or name.endswith("/output_weights")) or len(shape) != 2:
            continue
        tokens = (seq if name.startswith(per_token) else 1 if name.startswith(per_example)
                  else preds if name.startswith(per_prediction) else None)
        assert tokens is not None, f"{name} is not placed"
        forward += 2 * shape[0] * shape[1] * tokens
    layers = {}
    for name, shape in variables.items():
        match = _LAYER.match(name)
        if match and name.endswith("attention/self/query/kernel"):
            layers[name] = shape[1]
    forward += sum(2 * 2 * seq * seq * width for width in layers.values())
    vocab, width = variables[output_table]
    return 3 * (forward + preds * 2 * vocab * width)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_electra_count_matches_upstreams_variable_shapes(case):
    config = electra_config(case["hparams"])
    variables = case["variables"]
    table = ("generator/embeddings/word_embeddings" if config.untied_generator_embeddings
             else "electra/embeddings/word_embeddings")
    expected = _count_from_shapes(
        variables, SEQ, PREDS, per_token=("electra/", "generator/", "discriminator_predictions/"),
        per_example=(), per_prediction=("generator_predictions/",), output_table=table)
    assert electra_flops.training_flops(config, SEQ, PREDS) == expected
    assert registry.family_of(config).training_flops_per_example(config, SEQ, PREDS) == expected


def _bert_variables(config, sentence_head, span_boundary):
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        features = {
            "input_ids": tf.constant(rng.randint(5, 40, (2, SEQ)), tf.int32),
            "input_mask": tf.ones((2, SEQ), tf.int32),
            "segment_ids": tf.zeros((2, SEQ), tf.int32),
            "masked_lm_positions": tf.constant([[1, 2, 3], [2, 3, 4]], tf.int32),
            "masked_lm_ids": tf.constant(rng.randint(5, 40, (2, PREDS)), tf.int32),
            "masked_lm_weights": tf.ones((2, PREDS), tf.float32),
            "next_sentence_labels": tf.zeros((2, 1), tf.int32),
            "masked_lm_span_left": tf.constant([[0, 1, 2], [1, 2, 3]], tf.int32),
            "masked_lm_span_right": tf.constant([[2, 3, 4], [3, 4, 5]], tf.int32),
        }
        pretraining_losses(config, features, False, sentence_head,
                           span_boundary_objective=span_boundary)
        return {v.op.name: v.shape.as_list() for v in tf.global_variables()}


@pytest.mark.parametrize("sentence_head,span_boundary", [(True, False), (False, True)])
def test_bert_count_matches_its_graphs_variable_shapes(sentence_head, span_boundary):
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=48,
                        max_position_embeddings=16, model_type="bert")
    variables = _bert_variables(config, sentence_head, span_boundary)
    expected = _count_from_shapes(
        variables, SEQ, PREDS, per_token=("bert/encoder/",),
        per_example=("bert/pooler/", "cls/seq_relationship/"),
        per_prediction=("cls/predictions/", "cls/span_boundary/"),
        output_table="bert/embeddings/word_embeddings",
        unused=() if sentence_head else ("bert/pooler/",))  # BertModel always builds it
    if span_boundary:  # the span boundary head has its own tied output layer
        expected += 3 * PREDS * 2 * 50 * 32
    assert flops.masked_lm_training_flops(config, SEQ, PREDS, sentence_head=sentence_head,
                                          span_boundary=span_boundary) == expected


def test_albert_sharing_saves_parameters_not_compute():
    """An ALBERT whose embedding width is its hidden width computes what the BERT of the
    same shape computes; a narrower embedding adds the projection and narrows the
    MLM output layer."""
    shape = dict(vocab_size=50, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                 intermediate_size=48, max_position_embeddings=16)
    bert = BertConfig(model_type="bert", **shape)
    same_width = BertConfig(model_type="albert", embedding_size=32, **shape)
    narrow = BertConfig(model_type="albert", embedding_size=8, **shape)
    assert flops.masked_lm_training_flops(same_width, SEQ, PREDS) == \
        flops.masked_lm_training_flops(bert, SEQ, PREDS)
    difference = (flops.masked_lm_training_flops(bert, SEQ, PREDS)
                  - flops.masked_lm_training_flops(narrow, SEQ, PREDS))
    projection = SEQ * 2 * 8 * 32
    head = PREDS * ((2 * 32 * 32 + 2 * 32 * 50) - (2 * 32 * 8 + 2 * 8 * 50))
    assert difference == 3 * (head - projection)
