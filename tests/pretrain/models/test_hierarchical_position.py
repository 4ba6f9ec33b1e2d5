"""Hierarchical position embeddings (issue 15, point 2): values, models, default-off graph, limits.

With n trained positions P and alpha, u = (P - alpha*P[0]) / (1 - alpha) and
position k gets alpha*u[k // n] + (1 - alpha)*u[k % n]; positions below n are
P itself, bit for bit. Every stage refuses --max_seq_length > n unless the
option is on, and > n*n always.
"""
import json
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from conftest import REPO_ROOT
from data_gen.config import ConfigError, GenerationConfig
from finetune import run_finetune
from pretrain.models.bert import modeling
from pretrain.models import position_embeddings as positions
from pretrain.training import data_checks
from tests.testutil.pretrain_data import make_examples, write_records
from tests.testutil.float32_bounds import assert_close, encoder_ulps
from tests.testutil.tiny_models import ModelRunner, random_weights, tiny_config, write_checkpoint
from tests.testutil.numpy_bert import NumpyEncoder

ALPHA = 0.4
N, SEQ = 8, 20  # 8 trained positions, 20-token inputs
CONFIGS = {
    "bert": tiny_config(model_type="bert", max_position_embeddings=N),
    "google": tiny_config(model_type="albert", albert_layout="google", embedding_size=8,
                          max_position_embeddings=N),
}


def expected_positions(table, length, alpha):
    """The issue's formula in float64, for every position 0 .. length-1."""
    p = table.astype(np.float64)
    n = p.shape[0]
    u = (p - alpha * p[0]) / (1.0 - alpha)
    return np.stack([alpha * u[k // n] + (1.0 - alpha) * u[k % n] for k in range(length)])


def _table(n=N, width=6, seed=3):
    return np.random.RandomState(seed).normal(0.0, 0.5, size=[n, width]).astype(np.float32)


def _run_positions(table, lengths, alpha, dynamic):
    """{S: [S, W]} from position_embeddings() with a static or a fed (dynamic) S."""
    out = {}
    with tf.Graph().as_default(), tf.Session() as session:
        variable = tf.get_variable("position_embeddings", initializer=table)
        session.run(tf.global_variables_initializer())
        if dynamic:
            length = tf.placeholder(tf.int32, [])
            result = positions.position_embeddings(variable, length, alpha)
            for s in lengths:
                out[s] = session.run(result, {length: s})
        else:
            for s in lengths:
                result = positions.position_embeddings(variable, s, alpha)
                assert result.shape.as_list() == [s, table.shape[1]]  # static shape kept
                out[s] = session.run(result)
    return out


# -- (a) the values -------------------------------------------------------------------
@pytest.mark.parametrize("dynamic", [False, True], ids=["static_S", "dynamic_S"])
def test_positions_below_n_are_the_table_and_beyond_follow_the_formula(dynamic):
    table = _table()
    got = _run_positions(table, [3, N, SEQ, N * N], ALPHA, dynamic)
    for s, value in got.items():
        assert value.shape == (s, 6) and value.dtype == np.float32
        np.testing.assert_array_equal(value[:min(s, N)], table[:min(s, N)])  # bit for bit
    ref = expected_positions(table, N * N, ALPHA)
    # six roundings (alpha*P[0], the difference, the division, two products, their sum),
    # each within half an ulp of an intermediate up to 1 / (1 - alpha) = 1.7 times the
    # result: 5 ulps of the magnitude; 8
    assert_close(got[N * N][N:], ref[N:], 8)
    np.testing.assert_array_equal(got[SEQ], got[N * N][:SEQ])  # the same rows, sliced
    # in exact arithmetic the formula gives P below n too: the float64 reference of float32
    # inputs is within 1e-15 of them, far inside one float32 ulp
    assert_close(ref[:N], table, 1)
    # not a trivial repetition of the table
    assert np.abs(got[SEQ][N:2 * N] - table).max() > 0.05


def test_option_off_is_the_plain_slice():
    table = _table()
    for dynamic in (False, True):
        got = _run_positions(table, [1, 5, N], None, dynamic)
        for s, value in got.items():
            np.testing.assert_array_equal(value, table[:s])


# -- (d) too long -----------------------------------------------------------------------
def test_too_long_static_sequence_raises_with_the_limit():
    with tf.Graph().as_default():
        table = tf.zeros([4, 3])
        with pytest.raises(ValueError, match=r"the sequence length 17 exceeds the model's "
                           r"max_position_embeddings=4 .*even with \"hierarchical_position\": "
                           r"0\.4, which allows at most n\*n = 16 positions"):
            positions.position_embeddings(table, 17, ALPHA)
        with pytest.raises(ValueError, match=r"the sequence length 5 exceeds the model's "
                           r"max_position_embeddings=4 .*set \"hierarchical_position\": 0\.4 in "
                           r"the model config .* up to n\*n = 16 positions"):
            positions.position_embeddings(table, 5, None)
        assert positions.position_embeddings(table, 16, ALPHA).shape.as_list() == [16, 3]
        config = modeling.BertConfig.from_dict(dict(CONFIGS["bert"], hierarchical_position=ALPHA))
        with pytest.raises(ValueError, match="n\\*n = 64 positions"):
            modeling.BertModel(config, False, tf.zeros([1, N * N + 1], tf.int32))


# -- (b) models against the NumPy reference ---------------------------------------------------
def _batch(length, seed=0):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, 50, size=[2, length]).astype(np.int32)
    mask = np.ones([2, length], np.int32)
    mask[1, length - 6:] = 0
    kinds = np.zeros([2, length], np.int32)
    kinds[:, length // 2:] = 1
    return ids, mask, kinds


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("hierarchical")
    out = {}
    for name, config in CONFIGS.items():
        weights = random_weights(config, seed=11 + len(name), heads=False)
        out[name] = (write_checkpoint(root / name / "model.ckpt", weights), weights)
    return out


@pytest.mark.parametrize("shape", [(None, None), (2, SEQ)], ids=["dynamic", "static"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_long_inputs_match_the_numpy_reference_with_no_new_variables(name, shape, checkpoints):
    prefix, weights = checkpoints[name]
    config = dict(CONFIGS[name], hierarchical_position=ALPHA)
    model = ModelRunner(config, prefix, shape)
    batch = _batch(SEQ)
    got = model.run(*batch)[0]
    model.close()
    ref, _, _ = NumpyEncoder(config, weights).forward(*batch)
    assert got.shape == (2, SEQ, 16)
    # float32 graph against float64 NumPy: the encoder's chain of sums on SEQ tokens, the
    # ALBERT projection (8) and the position formula (8 ulps, as above)
    c = CONFIGS[name]
    assert_close(got, ref, encoder_ulps(16, c["intermediate_size"], SEQ, 2, 2, [8]) + 8)
    assert np.abs(got).max() > 0.1
    # the reference really used hierarchical positions: the plain table cannot reach SEQ
    assert weights["bert/embeddings/position_embeddings"].shape == (N, 16 if name == "bert" else 8)
    off = ModelRunner(CONFIGS[name])  # dynamic S: an option-off model cannot take SEQ statically
    off.close()
    assert model.variables == off.variables
    assert model.variables["bert/embeddings/position_embeddings"] == [N, 16 if name == "bert" else 8]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_inputs_up_to_n_give_the_option_off_outputs_bit_for_bit(name, checkpoints):
    prefix, _ = checkpoints[name]
    on = ModelRunner(dict(CONFIGS[name], hierarchical_position=ALPHA), prefix)  # dynamic S path
    off = ModelRunner(CONFIGS[name], prefix)
    for length in (N - 2, N):
        batch = _batch(length, seed=length)
        # the same position rows (the table itself) into the same ops on the same shapes
        np.testing.assert_array_equal(on.run(*batch)[0], off.run(*batch)[0])
    on.close()
    off.close()


# -- (c) the default-off graph -----------------------------------------------------------
def _todays_position_embeddings(table, seq_length, alpha):
    """The code embedding_postprocessor ran before the option existed."""
    assert alpha is None
    return tf.slice(table, [0, 0], [seq_length, -1])


@pytest.mark.parametrize("shape", [(None, None), (2, N)], ids=["dynamic", "static"])
def test_default_off_builds_todays_graph(shape, checkpoints, monkeypatch):
    prefix, _ = checkpoints["bert"]
    absent = ModelRunner(CONFIGS["bert"], prefix, shape)
    none = ModelRunner(dict(CONFIGS["bert"], hierarchical_position=None), prefix, shape)
    monkeypatch.setattr(positions, "position_embeddings", _todays_position_embeddings)
    today = ModelRunner(CONFIGS["bert"], prefix, shape)
    graph_defs = [m.graph.as_graph_def() for m in (absent, none, today)]
    assert graph_defs[0] == graph_defs[1]
    assert graph_defs[0] == graph_defs[2]
    assert not any("hierarchical" in node.name for node in graph_defs[0].node)
    batch = _batch(N)
    outputs = [m.run(*batch)[0] for m in (absent, none, today)]
    for model in (absent, none, today):
        model.close()
    # identical GraphDefs on the same inputs: the same kernels, bit for bit
    np.testing.assert_array_equal(outputs[0], outputs[2])
    np.testing.assert_array_equal(outputs[1], outputs[2])


# -- (e) the length checks of every stage ----------------------------------------------------
def _config_dict(n, alpha=None):
    config = dict(CONFIGS["bert"], max_position_embeddings=n)
    if alpha is not None:
        config["hierarchical_position"] = alpha
    return config


def test_bert_config_max_sequence_length():
    assert modeling.BertConfig.from_dict(_config_dict(8)).max_sequence_length == 8
    assert modeling.BertConfig.from_dict(_config_dict(8, ALPHA)).max_sequence_length == 64


def test_pretraining_data_checks_allow_long_data_only_with_the_option(tmp_path):
    path = write_records(tmp_path / "s.tfrecord", make_examples(3, max_seq_length=16))

    def check(n, alpha=None, config_file=None):
        return data_checks.check_input_data(
            path, 16, 4, modeling.BertConfig.from_dict(_config_dict(n, alpha)),
            use_sentence_head=True, bert_config_file=config_file)

    with pytest.raises(data_checks.DataCheckError,
                       match=r"--max_seq_length=16 exceeds the model's max_position_embeddings=8 "
                             r"\(--bert_config_file=cfg\.json\); lower --max_seq_length, or set "
                             r"\"hierarchical_position\": 0\.4 .* up to n\*n = 64 positions"):
        check(8, config_file="cfg.json")
    assert check(8, ALPHA)[0] == [path]
    assert check(4, ALPHA)[0] == [path]  # 16 = 4*4
    with pytest.raises(data_checks.DataCheckError,
                       match=r"--max_seq_length=16 exceeds .*max_position_embeddings=3 "
                             r"\(--bert_config_file\) even with \"hierarchical_position\": 0\.4, "
                             r"which allows at most n\*n = 9 positions"):
        check(3, ALPHA)


def test_finetune_settings_allow_long_inputs_only_with_the_option():
    tokenizer = types.SimpleNamespace(vocab={str(i): i for i in range(10)}, vocab_file="v.txt")
    assets = types.SimpleNamespace(config_file="cfg.json", config_source="flag",
                                   vocab_file="v.txt")

    def check(length, n, alpha=None):
        settings = dict(run_finetune.DEFAULTS, max_seq_length=length)
        run_finetune.check_settings(settings, modeling.BertConfig.from_dict(_config_dict(n, alpha)),
                                    tokenizer, assets)

    with pytest.raises(run_finetune.SettingsError,
                       match=r"--max_seq_length=32 exceeds the model's max_position_embeddings=8 "
                             r"\(--bert_config_file=cfg\.json\); .*\"hierarchical_position\""):
        check(32, 8)
    check(8, 8)
    check(32, 8, ALPHA)
    assets.config_source = "checkpoint"
    with pytest.raises(run_finetune.SettingsError,
                       match=r"\(cfg.json, beside --init_checkpoint\) even with "
                             r"\"hierarchical_position\": 0\.4, which allows at most n\*n = 64"):
        check(65, 8, ALPHA)


def _write_model_config(path, n, alpha=None):
    path.write_text(json.dumps(_config_dict(n, alpha)), encoding="utf-8")
    return str(path)


def test_data_gen_checks_max_seq_length_against_the_model_config(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")

    def validate(length, config_file):
        GenerationConfig(input_file="in.txt", output_file=str(tmp_path / "out.tfrecord"),
                         vocab_file=str(vocab), max_seq_length=length,
                         bert_config_file=config_file).validate()

    off = _write_model_config(tmp_path / "off.json", 8)
    on = _write_model_config(tmp_path / "on.json", 8, ALPHA)
    validate(64, "")  # no config, no check
    validate(8, off)
    with pytest.raises(ConfigError, match=r"--max_seq_length=32 exceeds the model's "
                       r"max_position_embeddings=8 \(--bert_config_file=.*off\.json\); lower "
                       r"--max_seq_length, or set \"hierarchical_position\": 0\.4"):
        validate(32, off)
    validate(32, on)
    validate(64, on)
    with pytest.raises(ConfigError, match=r"even with \"hierarchical_position\": 0\.4, which "
                       r"allows at most n\*n = 64 positions"):
        validate(65, on)
    with pytest.raises(ConfigError, match=r"--bert_config_file: cannot read model config "
                       r".*missing\.json"):
        validate(32, str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"max_position_embeddings": 8, "hierarchical_position": 1.5}),
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"hierarchical_position=1\.5 must be a number in"):
        validate(32, str(bad))


def test_data_gen_cli_fails_in_one_line_before_any_work(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    off = _write_model_config(tmp_path / "off.json", 8)
    out = tmp_path / "out.tfrecord"
    process = subprocess.run(
        [sys.executable, "-m", "data_gen.create_pretraining_data",
         f"--input_file={tmp_path}/nothing*.txt", f"--output_file={out}",
         f"--vocab_file={vocab}", "--max_seq_length=32", f"--bert_config_file={off}"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert process.returncode == 2
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --max_seq_length=32 exceeds"), \
        process.stderr
    assert "hierarchical_position" in lines[0] and "off.json" in lines[0]
    assert not out.exists()  # refused before the (missing) input was even looked at
