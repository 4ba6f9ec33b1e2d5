"""Our XLNet encoder and LM head against transformers' XLNetLMHeadModel on the same weights.

The fixture (tests/fixtures/hf_xlnet, written by transformers; make_fixtures.py regenerates
it) holds a tiny perturbed model and its eval-mode outputs without and with a permutation:
the content stream, the query stream at the targets, and the LM logits of each.
"""
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from safetensors.numpy import load_file

from conftest import REPO_ROOT
from tests.testutil.hf_interop import interop_ulps
from pretrain.models.xlnet import hf as hf_xlnet
from pretrain.models.xlnet.config import XLNetConfig
from pretrain.models.xlnet.modeling import XLNetModel, lm_logits
from tests.testutil.float32_bounds import assert_close
from tests.testutil.xlnet_hf_bounds import xlnet_chain

FIXTURE = os.path.join(REPO_ROOT, "tests", "fixtures", "hf_xlnet")
CONFIG = XLNetConfig(n_token=115, d_model=16, n_layer=2, n_head=2, d_head=8, d_inner=24,
                     ff_activation="gelu", untie_r=True, dropout=0.0, dropatt=0.0)


def _our_weights(hf):
    """transformers' tensors under zihangdai/xlnet's names (pretrain.models.xlnet.hf's table:
    untie_r's per-layer biases stacked, ff kernels transposed)."""
    return hf_xlnet.hf_to_ours(hf, CONFIG)[0]


@pytest.fixture(scope="module")
def results():
    expected = dict(np.load(os.path.join(FIXTURE, "expected_outputs.npz")))
    weights = _our_weights(load_file(os.path.join(FIXTURE, "lm_head", "model.safetensors")))
    outputs = {}
    with tf.Graph().as_default(), tf.Session() as session:
        features = {key: tf.constant(expected[key]) for key in (
            "input_ids", "attention_mask", "token_type_ids", "perm_mask", "target_mapping")}
        permuted = XLNetModel(CONFIG, False, features["input_ids"], features["attention_mask"],
                              features["token_type_ids"], perm_mask=features["perm_mask"],
                              target_mapping=features["target_mapping"])
        tensors = {"perm_sequence_output": permuted.get_sequence_output(),
                   "perm_query_output": permuted.get_query_output(),
                   "plm_logits": lm_logits(permuted.get_query_output(),
                                           permuted.get_embedding_table(), CONFIG)}
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):  # the same variables
            plain = XLNetModel(CONFIG, False, features["input_ids"],
                               features["attention_mask"], features["token_type_ids"])
            tensors["sequence_output"] = plain.get_sequence_output()
            tensors["lm_logits"] = lm_logits(plain.get_sequence_output(),
                                             plain.get_embedding_table(), CONFIG)
        variables = {v.op.name: v for v in tf.global_variables()}
        outputs["names"] = (sorted(variables), sorted(weights))
        for name, variable in variables.items():
            variable.load(weights[name], session)
        outputs.update(session.run(tensors))
    return expected, outputs


def test_every_variable_has_upstreams_name_and_a_transformers_tensor(results):
    ours, theirs = results[1]["names"]
    assert ours == theirs


@pytest.mark.parametrize("key", ["sequence_output", "lm_logits", "perm_sequence_output",
                                 "perm_query_output", "plm_logits"])
def test_outputs_match_transformers(results, key):
    """Kernel-path sensitive: our graph against transformers' numbers, to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps); an erf GELU in place of the
    tanh one moves them 5.7x-11x that bound (tests/fixtures/hf_xlnet/README.md)."""
    expected, got = results
    real = expected["attention_mask"].astype(bool)
    ulps = interop_ulps(xlnet_chain(CONFIG, expected["input_ids"].shape[1], key))
    if key in ("sequence_output", "lm_logits", "perm_sequence_output"):
        assert_close(got[key][real], expected[key][real], ulps, err_msg=key)
    else:
        assert_close(got[key], expected[key], ulps, err_msg=key)


def test_transformers_loader_finds_every_name_it_maps_in_our_graph(results):
    """load_tf_weights_in_xlnet skips a mapped name that a checkpoint lacks, silently: every
    name its map lists for this model must be one of our variables, with its shape."""
    with open(os.path.join(FIXTURE, "loader_names.json"), encoding="utf-8") as handle:
        mapped = json.load(handle)["names"]
    weights = _our_weights(load_file(os.path.join(FIXTURE, "lm_head", "model.safetensors")))
    ours = {name: list(value.shape) for name, value in weights.items()}
    assert set(mapped) <= set(results[1]["names"][0])  # names of the graph's variables
    assert {name: ours[name] for name in mapped} == mapped
