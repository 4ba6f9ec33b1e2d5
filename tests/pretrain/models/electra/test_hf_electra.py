"""ELECTRA <-> transformers without torch: transformers' own fixture (tests/fixtures/hf_electra,
written by make_fixtures.py there) imported and reproduced, exported back, name tables checked
against transformers' load_tf_weights_in_electra, clean refusals, the SavedModel."""
import json
import os
import shutil

import numpy as np
import pytest
from tests.testutil import hf_interop
from safetensors.numpy import load_file, save_file

from tests.testutil.electra_hf_bounds import (FIXTURES, electra_bound, electra_outputs, load_fixture_arrays,
                                 random_electra_tensors)
from pretrain import run_pretraining
from pretrain.checkpoints import checkpoint_io
from pretrain.interop import export_saved_model, import_hf
from pretrain.models.electra import hf as hf_electra
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from pretrain.models.electra.config import ElectraConfig
from tests.testutil.pretrain_data import make_examples, write_records
from tests.testutil.pretrain_data import electra_config as upstream_case_config
from tests.testutil.float32_bounds import assert_close

DISC, GEN = FIXTURES / "discriminator", FIXTURES / "generator"
MAPPING = json.loads((FIXTURES / "loader_mapping.json").read_text(encoding="utf-8"))
UPSTREAM = json.loads((FIXTURES.parent / "electra" / "upstream_variables.json").read_text(
    encoding="utf-8"))["cases"]
TOKENIZER_FILES = ["config.json", "model.safetensors", "special_tokens_map.json",
                   "tokenizer_config.json", "vocab.txt"]
TRAINING_STATE = {"global_step": np.array(9, np.int64),
                  "electra/embeddings/word_embeddings/adam_m": np.zeros([115, 16], np.float32)}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fixture pair imported once: ImportReport."""
    return import_model(DISC, tmp_path_factory.mktemp("imported") / "out",
                        generator_model_dir=GEN, log_fn=None)


def _inputs(arrays):
    return arrays["input_ids"], arrays["attention_mask"], arrays["token_type_ids"]


def assert_matches_transformers(config, ours, arrays, key, values=None):
    """ours[key] (or `values`) against the fixture's arrays[key] at the real positions, to
    the bound of our graph against transformers' (hf_interop.interop_ulps; kernel-path
    sensitive). A tanh GELU in place of the erf GELU moves these 7x-17x the bound."""
    real = arrays["attention_mask"].astype(bool)
    got = ours[key] if values is None else values
    assert got.shape == arrays[key].shape, key
    ulps, scale = electra_bound(config, ours, key, arrays[key][real], real)
    assert_close(got[real], arrays[key][real], ulps, scale=scale, err_msg=key)


def test_imported_pair_reproduces_transformers_outputs(imported):
    """Kernel-path sensitive (assert_matches_transformers)."""
    config = imported.config
    assert (config.hidden_size, config.embedding_width, config.hidden_act) == (32, 16, "gelu_exact")
    generator = config.generator_config()
    assert (generator.hidden_size, generator.num_hidden_layers, generator.num_attention_heads,
            generator.intermediate_size) == (8, 2, 1, 32)
    assert not config.untied_generator_embeddings
    arrays = load_fixture_arrays()
    ours = electra_outputs(config, imported.checkpoint, *_inputs(arrays))
    for key in ("disc_logits", "disc_sequence_output", "gen_mlm_log_probs",
                "gen_sequence_output"):
        assert_matches_transformers(config, ours, arrays, key)
    assert np.abs(ours["disc_logits"]).max() > 0.5  # real numbers, not a zero model
    names = checkpoint_io.read_checkpoint(imported.checkpoint)
    assert not any(name.startswith("generator/embeddings/") for name in names)  # shared


def test_export_of_the_import_is_the_fixture_bit_for_bit(imported, tmp_path):
    out = tmp_path / "hf"
    lines = []
    export_model(imported.output_dir, output_dir=out, log_fn=lines.append)
    assert sorted(os.listdir(out)) == ["discriminator", "generator"]
    for network, source in (("discriminator", DISC), ("generator", GEN)):
        assert sorted(os.listdir(out / network)) == TOKENIZER_FILES
        ours, theirs = load_file(str(out / network / "model.safetensors")), load_file(
            str(source / "model.safetensors"))
        assert sorted(ours) == sorted(theirs), network
        for key, value in theirs.items():
            assert np.array_equal(ours[key], value), (network, key)  # copies: bit for bit
        exported = json.loads((out / network / "config.json").read_text())
        fixture = json.loads((source / "config.json").read_text())
        for field in ("architectures", "model_type", "vocab_size", "embedding_size",
                      "hidden_size", "num_hidden_layers", "num_attention_heads",
                      "intermediate_size", "hidden_act", "max_position_embeddings",
                      "type_vocab_size", "initializer_range", "layer_norm_eps",
                      "hidden_dropout_prob", "attention_probs_dropout_prob", "pad_token_id"):
            assert exported[field] == fixture[field], (network, field)
        assert (out / network / "vocab.txt").read_bytes() == (source / "vocab.txt").read_bytes()
    assert not any(line.startswith("WARNING") for line in lines)  # gelu_exact: no caveat


def _our_mapping(config, network):
    return {entry.ours: (hf_electra.PREFIX + entry.hf if entry.group == "encoder" else entry.hf)
            for entry in hf_electra.mapping_entries(config, network)}


@pytest.mark.parametrize("index", range(len(UPSTREAM)), ids=[c["name"] for c in UPSTREAM])
def test_our_names_are_the_ones_transformers_tf_loader_maps(index):
    case, recorded = UPSTREAM[index], MAPPING["cases"][index]
    assert recorded["name"] == case["name"]
    config = upstream_case_config(case["hparams"])
    ours = hf_electra.variable_shapes(config)
    assert {name: list(shape) for name, shape in ours.items()} == case["variables"]
    covered = set()
    for network in hf_electra.NETWORKS:
        theirs = {name: key for name, key in recorded["mapping"][network].items()
                  if key and not key.startswith("error")}
        # transformers' loader and our table send every name to the same parameter
        assert _our_mapping(config, network) == theirs, network
        covered |= set(theirs)
    assert covered == set(ours)  # none of our variables is skipped by both loads
    errors = sorted(name for network in hf_electra.NETWORKS
                    for name, key in recorded["mapping"][network].items()
                    if key and key.startswith("error"))
    # transformers' loader feeds the discriminator's tables to an untied generator too and
    # fails on their width; our export writes the generator's own tables instead.
    assert errors == (sorted(n for n in ours if n.startswith("electra/embeddings/"))
                      if config.untied_generator_embeddings else [])


@pytest.mark.parametrize("fields", [
    dict(embedding_size=16),                                        # both projected
    dict(embedding_size=16, untied_generator_embeddings=True, hidden_act="gelu"),
    dict(generator_hidden_size=0.5, num_hidden_layers=1),           # E = H, Hg = 16
], ids=["tied", "untied", "embedding_is_hidden"])
def test_checkpoint_round_trip_through_the_pair_is_bit_identical(tmp_path, fields):
    config = ElectraConfig(**dict(dict(
        model_type="electra", vocab_size=115, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
        type_vocab_size=2), **fields))
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "bert_config.json").write_text(config.to_json_string())
    shutil.copyfile(DISC / "vocab.txt", tmp_path / "ckpt" / "vocab.txt")
    tensors = random_electra_tensors(config, seed=3)
    checkpoint_io.write_checkpoint(dict(tensors, **TRAINING_STATE),
                                   str(tmp_path / "ckpt" / "model.ckpt-9"), write_state=True)
    lines = []
    export_model(str(tmp_path / "ckpt"), output_dir=tmp_path / "hf", log_fn=lines.append)
    generator = json.loads((tmp_path / "hf" / "generator" / "config.json").read_text())
    assert (generator["hidden_size"], generator["embedding_size"]) == (
        config.generator_config().hidden_size,
        hf_electra.embedding_scope_and_width(config, "generator")[1])
    assert "generator_lm_head.weight" not in load_file(
        str(tmp_path / "hf" / "generator" / "model.safetensors"))  # tied, not stored
    assert any("ElectraGeneratorPredictions applies the erf GELU" in line for line in lines) \
        == (config.hidden_act != "gelu_exact")
    report = import_model(tmp_path / "hf" / "discriminator", tmp_path / "back", log_fn=None,
                          generator_model_dir=tmp_path / "hf" / "generator")
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    assert sorted(back) == sorted(tensors)
    for name, value in tensors.items():  # copied both ways: bit for bit
        assert np.array_equal(back[name], value), name
    assert report.config.to_dict() == config.to_dict()


def test_discriminator_alone_imports_with_a_fresh_generator_and_exports_alone(tmp_path, capsys):
    """Kernel-path sensitive (assert_matches_transformers)."""
    report = import_model(DISC, tmp_path / "disc", log_fn=print)
    printed = capsys.readouterr().out
    assert "starts fresh: generator (generator/*, generator_predictions/*; no " \
           "--generator_model_dir): one of the configured size starts fresh, hidden_size 8, " \
           "2 layer(s), 1 head(s)" in printed
    names = checkpoint_io.read_checkpoint(report.checkpoint)
    assert not any(name.startswith(("generator", "global_step")) for name in names)
    assert len(names) == 43 and report.config.generator_config().hidden_size == 8
    arrays = load_fixture_arrays()
    ours = electra_outputs(report.config, report.checkpoint, *_inputs(arrays),
                           with_generator=False)
    assert_matches_transformers(report.config, ours, arrays, "disc_logits")
    lines = []
    export_model(str(tmp_path / "disc"), output_dir=tmp_path / "hf", log_fn=lines.append)
    assert os.listdir(tmp_path / "hf") == ["discriminator"]
    assert any("holds no generator (generator/*)" in line for line in lines)


def _main(*args):
    """(exit code, stderr) of `python -m pretrain.interop.import_hf ARGS`, run in this process."""
    return hf_interop.run_main(import_hf, *args)


def _variant(tmp_path, name, source, config=None, state=None):
    """A copy of a fixture directory with config.json fields and state-dict tensors changed."""
    target = tmp_path / name
    shutil.copytree(source, target)
    return hf_interop.edit_model_dir(target, config, state)


def test_bad_input_is_one_clear_message(tmp_path):
    out = tmp_path / "out"
    cases = [  # (args, message)
        (["--model_dir=%s" % GEN], "is an ELECTRA generator (ElectraForMaskedLM): pass the "
                                   "discriminator (ElectraForPreTraining) as --model_dir and "
                                   "this directory as --generator_model_dir"),
        (["--model_dir=%s" % DISC, "--generator_model_dir=%s" % DISC],
         "--generator_model_dir: %s is not an ELECTRA generator" % (DISC / "config.json")),
        (["--model_dir=%s" % DISC, "--generator_model_dir=%s" % (tmp_path / "nope")],
         "--generator_model_dir %s does not exist" % (tmp_path / "nope")),
        (["--model_dir=%s" % (FIXTURES.parent / "hf" / "bert_mlm"),
          "--generator_model_dir=%s" % GEN], "--generator_model_dir is not read for a bert "
                                             "model"),
        (["--model_dir=%s" % DISC, "--generator_model_dir=%s" % _variant(
            tmp_path, "heads", GEN, {"num_attention_heads": 2, "hidden_size": 8})],
         "num_attention_heads=2, but ELECTRA sizes a generator of hidden_size 8 as 2 layers, "
         "1 head(s)"),
        (["--model_dir=%s" % DISC, "--generator_model_dir=%s" % _variant(
            tmp_path, "vocab", GEN, {"vocab_size": 120})],
         "has vocab_size=120 but the discriminator's %s has 115" % (DISC / "config.json")),
        (["--model_dir=%s" % DISC, "--generator_model_dir=%s" % _variant(
            tmp_path, "other", GEN, state=lambda w: {
                "electra.embeddings.position_embeddings.weight":
                    w["electra.embeddings.position_embeddings.weight"] + 1})],
         "embeddings (e.g. electra/embeddings/position_embeddings) differ from the "
         "discriminator's"),
    ]
    for args, message in cases:
        code, stderr = _main(*args, "--output_dir=%s" % out)
        assert code == 2 and "Traceback" not in stderr, (args, stderr)
        assert stderr.startswith("error: ") and message in stderr, (args, stderr)
        assert not out.exists()


def test_a_generator_with_its_own_embeddings_imports_as_untied(tmp_path):
    wide = _variant(tmp_path, "wide", GEN, {"embedding_size": 8}, state=lambda w: {
        "electra.embeddings.word_embeddings.weight":
            w["electra.embeddings.word_embeddings.weight"][:, :8].copy(),
        "electra.embeddings.position_embeddings.weight":
            w["electra.embeddings.position_embeddings.weight"][:, :8].copy(),
        "electra.embeddings.token_type_embeddings.weight":
            w["electra.embeddings.token_type_embeddings.weight"][:, :8].copy(),
        "electra.embeddings.LayerNorm.weight": w["electra.embeddings.LayerNorm.weight"][:8].copy(),
        "electra.embeddings.LayerNorm.bias": w["electra.embeddings.LayerNorm.bias"][:8].copy()})
    state = load_file(str(wide / "model.safetensors"))
    del state["electra.embeddings_project.weight"], state["electra.embeddings_project.bias"]
    state["generator_predictions.dense.weight"] = np.eye(8, dtype=np.float32)
    for key in ("generator_predictions.dense.bias", "generator_predictions.LayerNorm.weight",
                "generator_predictions.LayerNorm.bias"):
        state[key] = state[key][:8].copy()
    save_file(state, str(wide / "model.safetensors"), metadata={"format": "pt"})
    report = import_model(DISC, tmp_path / "out", generator_model_dir=wide, log_fn=None)
    assert report.config.untied_generator_embeddings
    names = checkpoint_io.read_checkpoint(report.checkpoint)
    assert names["generator/embeddings/word_embeddings"].shape == (115, 8)
    assert np.array_equal(names["generator/embeddings/word_embeddings"],
                          state["electra.embeddings.word_embeddings.weight"])
    assert "generator/embeddings_project/kernel" not in names


def test_saved_model_serves_the_discriminator_and_the_cls_state(imported, tmp_path):
    """Kernel-path sensitive: the served sequence output against transformers'
    (assert_matches_transformers)."""
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    out = tmp_path / "saved"
    export_saved_model.export_saved_model(imported.output_dir, output_dir=str(out))
    arrays = load_fixture_arrays()
    with tf.Graph().as_default(), tf.Session() as session:
        meta = tf.saved_model.loader.load(session, ["serve"], str(out))
        signature = meta.signature_def["serving_default"]
        assert sorted(signature.outputs) == ["pooled_output", "sequence_output"]
        feeds = {signature.inputs[name].name: arrays[key] for name, key in (
            ("input_ids", "input_ids"), ("input_mask", "attention_mask"),
            ("segment_ids", "token_type_ids"))}
        pooled, sequence = session.run([signature.outputs["pooled_output"].name,
                                        signature.outputs["sequence_output"].name], feeds)
        saved = {v.op.name for v in tf.global_variables()}
    assert_matches_transformers(imported.config, {}, arrays, "disc_sequence_output", sequence)
    assert np.array_equal(pooled, sequence[:, 0])  # the same tensor, sliced: bit for bit
    assert saved and all(name.startswith("electra/") for name in saved)


def test_the_imported_pair_continues_pretraining_from_every_tensor(imported, tmp_path):
    data = write_records(tmp_path / "data.tfrecord", make_examples(8, sentence_task="none",
                                                                   seed=3),
                         mode="roberta", vocab_size=115)
    result = run_pretraining.run(dict(
        init_checkpoint=imported.output_dir, input_file=data, output_dir=str(tmp_path / "run"),
        do_train=True, max_seq_length=16, max_predictions_per_seq=4, train_batch_size=8,
        learning_rate=1e-30, num_train_steps=1, num_warmup_steps=0,
        save_checkpoints_steps=1000, random_seed=1, shuffle_buffer=0))
    assert result["global_step"] == 1
    before = checkpoint_io.read_checkpoint(imported.checkpoint)
    after = checkpoint_io.read_checkpoint(str(tmp_path / "run" / "model.ckpt-1"))
    assert len(before) == 82
    # A step of 1e-30 (at most 3.2e-30 from AdamW's m / sqrt(v) <= 3.16 at step 1, plus
    # the decay's 1e-32 |w|) is below half an ulp of any weight above 1e-22 in magnitude
    # (these are N(0, 0.2)), so it rounds away and every loaded weight stays bit for bit; one
    # not loaded would be a fresh init.
    for name, value in before.items():
        assert np.array_equal(after[name], value), name


def test_a_pair_whose_activation_transformers_ignores_in_the_generator_head_is_flagged(tmp_path):
    lines = []
    tanh = {"hidden_act": "gelu_new"}
    report = import_model(_variant(tmp_path, "d", DISC, tanh), tmp_path / "out",
                          generator_model_dir=_variant(tmp_path, "g", GEN, tanh),
                          log_fn=lines.append)
    assert report.config.hidden_act == "gelu"
    assert lines[-1] == ("WARNING: transformers' ElectraGeneratorPredictions applies the erf "
                         "GELU whatever hidden_act says, our generator head applies hidden_act "
                         "'gelu': the two generators' MLM outputs differ slightly (the "
                         "discriminators agree)")
