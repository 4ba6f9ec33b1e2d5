"""bert4keras's model options (issue 15): RealFormer residual attention, per-head
query/key and value widths, conditional LayerNorm.

Each option is checked against the independent NumPy forward pass
(tests/testutil/numpy_bert.py), its variables are listed, and with every option off the
encoder builds exactly the graphs it built before the options existed.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import registry
from pretrain.models.bert import modeling
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError

from tests.testutil import graph_fingerprint
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, encoder_ulps
from tests.testutil.tiny_models import (ModelRunner as Runner, expected_variables, input_batch,
                                    random_weights, tiny_config, write_checkpoint)
from tests.testutil.numpy_bert import NumpyEncoder
from conftest import REPO_ROOT

REPO = REPO_ROOT
FIXTURES = REPO / "tests" / "fixtures"
GOOGLE = dict(model_type="albert", albert_layout="google", embedding_size=8)
GOOGLE_GROUPS = dict(GOOGLE, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
BRIGHTMART_PRELN = dict(model_type="albert", albert_layout="brightmart", embedding_size=8,
                        layer_norm_position="pre")
CONFIGS = {
    "bert_residual": tiny_config(model_type="bert", residual_attention=True),
    "google_groups_residual": tiny_config(residual_attention=True, **GOOGLE_GROUPS),
    "brightmart_preln_residual": tiny_config(residual_attention=True, **BRIGHTMART_PRELN),
    "bert_head_sizes": tiny_config(model_type="bert", attention_key_size=4, attention_head_size=6),
    "bert_three_heads": tiny_config(model_type="bert", num_attention_heads=3,
                                    attention_key_size=5, attention_head_size=7),
    "google_head_sizes": tiny_config(attention_key_size=3, attention_head_size=10, **GOOGLE),
    "bert_cond": tiny_config(model_type="bert", layer_norm_cond_size=3),
    "bert_cond_hidden": tiny_config(model_type="bert", layer_norm_cond_size=3,
                                    layer_norm_cond_hidden_size=5,
                                    layer_norm_cond_hidden_act="relu"),
    "google_groups_cond": tiny_config(layer_norm_cond_size=2, **GOOGLE_GROUPS),
    "brightmart_preln_cond": tiny_config(layer_norm_cond_size=3, layer_norm_cond_hidden_size=4,
                                         layer_norm_cond_hidden_act="gelu", **BRIGHTMART_PRELN),
    "bert_all": tiny_config(model_type="bert", residual_attention=True, attention_key_size=4,
                            attention_head_size=6, layer_norm_cond_size=3),
}
CONDITION = np.array([[1.0, 0.0, 0.0], [0.3, -1.2, 2.0]], np.float32)


def _ulps(config):
    """Bound on the float32 graph against float64 NumPy (tests/testutil/float32_bounds.py case 2): the
    encoder's chain of sums, with the per-head key width, the ALBERT projection, the pooler
    and its tanh; a conditional LayerNorm adds, at each of its 1 + 2L LayerNorms, the sums of
    its condition dense layers; RealFormer's residual scores add one rounding per layer."""
    layers = config["num_hidden_layers"]
    extra = [config["hidden_size"], config.get("embedding_size", 0),
             config.get("attention_key_size", 0), config.get("attention_head_size", 0)]
    if config.get("layer_norm_cond_size"):
        cond = [config["layer_norm_cond_size"], config.get("layer_norm_cond_hidden_size", 0)]
        extra += cond * (1 + 2 * layers)
    ulps = encoder_ulps(config["hidden_size"], config["intermediate_size"], 8,
                        config["num_attention_heads"], layers, extra) + ELEMENTWISE_ULPS
    return ulps + (layers if config.get("residual_attention") else 0)


def _condition_for(config):
    size = config.get("layer_norm_cond_size")
    return None if size is None else CONDITION[:, :size]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("options")
    out = {}
    for seed, (name, config) in enumerate(sorted(CONFIGS.items())):
        weights = random_weights(config, seed=seed, heads=False)
        out[name] = (write_checkpoint(root / name / "model.ckpt", weights), weights)
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_each_option_matches_the_numpy_forward_pass(name, checkpoints):
    config = CONFIGS[name]
    path, weights = checkpoints[name]
    runner = Runner(config, path)
    ids, mask, types = input_batch()
    sequence, pooled = runner.run(ids, mask, types, _condition_for(config))
    ref_sequence, ref_pooled, _ = NumpyEncoder(config, weights).forward(
        ids, mask, types, condition=_condition_for(config))
    assert_close(sequence, ref_sequence, _ulps(config), err_msg="sequence")
    assert_close(pooled, ref_pooled, _ulps(config), err_msg="pooled")
    assert np.abs(sequence).max() > 0.1
    assert runner.report.missing_in_checkpoint == [] and runner.report.shape_mismatches == []


def _numpy_mask(mode, mask, types):
    """[B, S, S] visibility, written from attention.py's docstring."""
    seq = mask.shape[1]
    visible = np.repeat(mask[:, None, :].astype(bool), seq, axis=1)
    later = np.triu(np.ones((seq, seq), bool), k=1)[None]  # j > i
    if mode == "causal":
        return visible & ~later
    is_target = types.astype(bool)
    return visible & (~is_target[:, None, :] | (is_target[:, :, None] & ~later))


@pytest.mark.parametrize("mode", ["causal", "unilm"])
@pytest.mark.parametrize("name", ["bert_residual", "google_groups_residual",
                                  "brightmart_preln_residual"])
def test_residual_attention_in_every_attention_mode(name, mode, checkpoints):
    config = CONFIGS[name]
    path, weights = checkpoints[name]
    ids, mask, types = input_batch()
    sequence, _ = Runner(config, path, attention_mode=mode).run(ids, mask, types)
    ref, _, _ = NumpyEncoder(config, weights).forward(ids, mask, types,
                                                      attn_mask=_numpy_mask(mode, mask, types))
    real = mask.astype(bool)  # padded rows attend by different rules and are never read
    assert_close(sequence[real], ref[real], _ulps(config))


@pytest.mark.parametrize("name", ["bert_residual", "google_groups_residual"])
def test_residual_attention_changes_outputs_and_adds_no_variables(name, checkpoints):
    """A plain checkpoint loads completely into the RealFormer model, whose outputs differ."""
    config = CONFIGS[name]
    plain = dict(config, residual_attention=False)
    path, _ = checkpoints[name]
    realformer, vanilla = Runner(config, path), Runner(plain, path)
    assert realformer.variables == vanilla.variables
    assert realformer.report.missing_in_checkpoint == []
    ids, mask, types = input_batch()
    # the option's effect is 1e-2 or more, tens of thousands of ulps: not rounding
    assert np.abs(realformer.run(ids, mask, types)[0] - vanilla.run(ids, mask, types)[0]).max() > 1e-2


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_variable_names_and_shapes_of_each_option(name):
    config = CONFIGS[name]
    with tf.Graph().as_default():
        size = config.get("layer_norm_cond_size")
        registry.create_encoder(BertConfig.from_dict(config), True, tf.zeros([2, 8], tf.int32),
                                condition=None if size is None else tf.zeros([2, size]))
        got = {v.name[:-2]: v.shape.as_list() for v in tf.global_variables()}
    assert got == dict(expected_variables(config, heads=False))
    if size:  # one gamma and one beta projection per LayerNorm
        norms = sum(n.endswith("/gamma") for n in got)
        assert sum(n.endswith("/gamma_dense/kernel") for n in got) == norms
        assert sum(n.endswith("/beta_dense/kernel") for n in got) == norms


COND_NAMES = ["bert_cond", "bert_cond_hidden", "brightmart_preln_cond", "google_groups_cond"]


def _conditioned_against_plain(name, directory):
    """(max |difference| over conditions, missing names): the conditional model loaded from a
    plain checkpoint against the plain model, for a unit and a large condition."""
    config = CONFIGS[name]
    plain = {k: v for k, v in config.items() if not k.startswith("layer_norm_cond")}
    path = write_checkpoint(pathlib.Path(directory) / (name + ".ckpt"),
                            random_weights(plain, seed=7, heads=False))
    ids, mask, types = input_batch()
    expected = Runner(plain, path).run(ids, mask, types)
    conditioned = Runner(config, path)
    worst = 0.0
    for condition in (_condition_for(config), 5.0 * _condition_for(config)):
        got = conditioned.run(ids, mask, types, condition)
        worst = max([worst] + [float(np.abs(g - e).max()) for g, e in zip(got, expected)])
    return worst, conditioned.report.missing_in_checkpoint


@pytest.fixture(scope="module")
def conditioned_against_plain(tmp_path_factory):
    """{name: (worst difference, missing names)} of every COND_NAMES config, computed in one
    subprocess with oneDNN's kernels off: with them (on in the entry points) the pre-LN
    layout's graph fuses one residual add differently, a last-bit change that would hide
    whether the zero-initialised projections change anything."""
    script = ("import json, sys; from tests.pretrain.models.test_model_options import COND_NAMES, "
              "_conditioned_against_plain as f; "
              "print(json.dumps({n: f(n, sys.argv[1]) for n in COND_NAMES}))")
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO)]))
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path_factory.mktemp("cond"))],
                         capture_output=True, text=True, cwd=REPO, env=env, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", COND_NAMES)
def test_conditional_layer_norm_starts_at_the_loaded_model(conditioned_against_plain, name):
    """Zero-initialised gamma/beta projections: a plain checkpoint gives the plain outputs
    bit for bit whatever the condition; only the new kernels (and the condition layer) are
    missing from it."""
    worst, missing = conditioned_against_plain[name]
    assert worst == 0.0
    assert missing and all("_dense/kernel" in n or n.startswith("bert/layer_norm_cond/")
                           for n in missing)


def test_condition_must_match_the_config():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="layer_norm_cond_size=3.*condition=\\[B, 3\\]"):
            modeling.BertModel(BertConfig.from_dict(CONFIGS["bert_cond"]), False,
                               tf.zeros([2, 8], tf.int32))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="no layer_norm_cond_size"):
            modeling.BertModel(BertConfig.from_dict(tiny_config()), False,
                               tf.zeros([2, 8], tf.int32), condition=tf.zeros([2, 3]))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="shape \\[B, 3\\]"):
            modeling.BertModel(BertConfig.from_dict(CONFIGS["bert_cond"]), False,
                               tf.zeros([2, 8], tf.int32), condition=tf.zeros([2, 4]))


def test_default_off_graphs_are_those_built_before_the_options():
    recorded = graph_fingerprint.recorded_fingerprints()  # this TensorFlow's own set
    found, portable = graph_fingerprint.fingerprint_sets(False, True)
    assert found == recorded
    # the same graphs on every runtime once the attributes each fills in by default are left out
    assert portable == graph_fingerprint.recorded_fingerprints(graph_fingerprint.PORTABLE)
    explicit_off = dict(graph_fingerprint.LAYOUTS["bert"], residual_attention=False,
                        hierarchical_position=None, attention_key_size=8, attention_head_size=8,
                        layer_norm_cond_size=None, layer_norm_cond_hidden_size=None)
    assert (graph_fingerprint.fingerprint(explicit_off, "bidirectional", True)
            == recorded["bert/bidirectional/train"])


def test_config_round_trip_and_validation():
    plain = BertConfig.from_dict(tiny_config())
    assert "residual_attention" not in plain.to_dict()
    config = BertConfig.from_dict(CONFIGS["bert_all"])
    assert BertConfig.from_dict(config.to_dict()).to_dict() == config.to_dict()
    assert (config.key_size_per_head, config.value_size_per_head) == (4, 6)
    assert (plain.key_size_per_head, plain.value_size_per_head) == (8, 8)
    with pytest.raises(ConfigError, match="num_attention_heads=3.*attention_key_size"):
        BertConfig.from_dict(tiny_config(num_attention_heads=3))
    with pytest.raises(ConfigError, match="'layer_norm_cond_hidden_size'.*layer_norm_cond_size"):
        BertConfig.from_dict(tiny_config(layer_norm_cond_hidden_size=4))
    with pytest.raises(ConfigError, match="'residual_attention'.*true or false"):
        BertConfig.from_dict(tiny_config(residual_attention="yes"))
    with pytest.raises(ConfigError, match="'attention_key_size'.*positive integer"):
        BertConfig.from_dict(tiny_config(attention_key_size=0))


@pytest.mark.parametrize("field,value,what", [
    ("residual_attention", True, "RealFormer residual attention"),
    ("attention_key_size", 4, "per-head query/key widths"),
    ("attention_head_size", 6, "per-head value widths"),
    ("layer_norm_cond_size", 3, "conditional LayerNorm"),
])
def test_export_to_transformers_refuses_what_it_cannot_compute(field, value, what):
    from common.cli_options import UserError  # pylint: disable=import-outside-toplevel
    from pretrain.interop import hf_config  # pylint: disable=import-outside-toplevel
    config = BertConfig.from_dict(tiny_config(**{field: value}))
    with pytest.raises(UserError, match="config field %s=%r cannot be exported.*no %s"
                       % (field, value, what)):
        hf_config.exported_model_type(config)
    hierarchical = BertConfig.from_dict(tiny_config(hierarchical_position=0.4))
    assert hf_config.exported_model_type(hierarchical) == "bert"
    assert "only the 16 trained positions" in hf_config.transformers_caveats(hierarchical)[0]


def test_saved_model_export_refuses_a_conditional_model(tmp_path):
    from common.cli_options import UserError  # pylint: disable=import-outside-toplevel
    from pretrain.interop import export_saved_model  # pylint: disable=import-outside-toplevel
    config_file = tmp_path / "cond.json"
    config_file.write_text(json.dumps(CONFIGS["bert_cond"]))
    prefix = write_checkpoint(tmp_path / "model.ckpt", {"x": np.zeros(1, np.float32)})
    with pytest.raises(UserError, match="layer_norm_cond_size.*no condition input"):
        export_saved_model.export_saved_model(prefix, str(config_file), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
