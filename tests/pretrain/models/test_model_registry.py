"""The model registry (pretrain.models.registry): one place chooses a family's config class,
encoder, pretraining objective and transformers name, and the rest follows it."""
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain.interop import hf_config, hf_weights
from pretrain.models.electra import hf as hf_electra
from pretrain.models import registry
from pretrain.models.bert import modeling, pretraining as masked_lm_pretraining
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.electra.modeling import ElectraDiscriminator
from pretrain.models.electra.pretraining import electra_pretraining_losses
from pretrain.training import pretraining_model_fn
from tests.testutil.pretrain_data import tiny_config
from conftest import REPO_ROOT
from common.model_configs import shipped_path

FIXTURE_CONFIGS = REPO_ROOT / "tests" / "fixtures" / "configs"


def test_the_registered_families_and_what_each_entry_resolves_to():
    assert registry.model_types() == ("bert", "albert", "electra", "xlnet")
    for model_type in ("bert", "albert"):
        family = registry.family(model_type)
        assert family.model_type == model_type and family.sentence_and_span_heads
        assert issubclass(family.encoder_class, modeling.BertModel)
        assert family.pretraining_losses is masked_lm_pretraining.masked_lm_pretraining_losses
    assert registry.family("albert").encoder_class is modeling.AlbertModel
    electra = registry.family("electra")
    assert electra.config_class is ElectraConfig and not electra.sentence_and_span_heads
    assert electra.encoder_class is ElectraDiscriminator
    assert electra.pretraining_losses is electra_pretraining_losses
    assert registry.family("RoBERTa") is registry.family("bert")  # alias, any case


@pytest.mark.parametrize("name, model_type, layout", [
    (str(FIXTURE_CONFIGS / "test_tiny_bert.json"), "bert", None),
    (str(FIXTURE_CONFIGS / "test_tiny_albert.json"), "albert", "google"),
    (shipped_path("albert_zh_tiny_brightmart"), "albert", "brightmart"),
    (shipped_path("roberta_zh_base"), "bert", None),
])
def test_read_config_gives_the_family_of_each_shipped_config(name, model_type, layout):
    config = registry.read_config(name)
    assert isinstance(config, BertConfig)
    assert registry.family_of(config).model_type == model_type
    assert config.albert_layout == layout
    assert config.to_dict() == BertConfig.from_json_file(name).to_dict()


def test_a_config_without_model_type_is_told_apart_by_embedding_size(tmp_path):
    bert = registry.read_config(tiny_config(tmp_path / "bert.json"))
    albert = registry.read_config(tiny_config(tmp_path / "albert.json", embedding_size=16))
    aliased = registry.read_config(tiny_config(tmp_path / "roberta.json", model_type="roberta"))
    assert [registry.family_of(c).model_type for c in (bert, albert, aliased)] == [
        "bert", "albert", "bert"]


def test_the_shipped_electra_config_is_electra_small():
    config = registry.read_config(shipped_path("electra_zh_small"))
    generator = config.generator_config()
    assert (config.hidden_size, config.embedding_width, config.num_hidden_layers) == (256, 128, 12)
    assert (generator.hidden_size, generator.num_attention_heads, generator.intermediate_size) == (
        64, 1, 256)  # hfl/chinese-electra-180g-small-generator's shape
    shipped = json.loads(open(shipped_path("electra_zh_small"), encoding="utf-8").read())
    assert config.to_dict() == dict(shipped, layer_norm_position="post")  # BertConfig's default


def test_an_electra_config_is_read_by_its_class(tmp_path):
    config = registry.read_config(tiny_config(tmp_path / "e.json", model_type="ELECTRA",
                                              embedding_size=16))
    assert isinstance(config, ElectraConfig) and config.embedding_width == 16
    assert registry.family_of(config).model_type == "electra"
    assert hf_config.exported_model_type(config) == "electra"
    assert sorted(hf_electra.TABLES) == ["discriminator", "generator"]  # its name tables
    assert [c["architectures"] for c in hf_electra.hf_configs(config).values()] == [
        ["ElectraForPreTraining"], ["ElectraForMaskedLM"]]
    with pytest.raises(UserError, match="electra model exports as its own transformers model"):
        hf_config.hf_config_from_bert(config)
    with tf.Graph().as_default():
        model = registry.create_encoder(config, False, tf.zeros([2, 5], tf.int32))
        names = {v.op.name for v in tf.global_variables()}
    assert type(model) is ElectraDiscriminator
    assert {"electra/embeddings/word_embeddings", "electra/embeddings_project/kernel",
            "electra/encoder/layer_0/output/dense/kernel"} <= names
    assert not any(name.startswith(("bert/", "generator")) for name in names)


def test_bad_config_files_are_named_with_what_is_wrong(tmp_path):
    unknown = tiny_config(tmp_path / "gpt.json", model_type="gpt2")
    with pytest.raises(ConfigError) as err:
        registry.read_config(unknown)
    assert str(err.value).startswith(unknown)
    assert "'gpt2' is not a registered model family" in str(err.value)
    assert "albert, bert, electra, roberta, xlnet" in str(err.value)

    broken = tmp_path / "broken.json"
    broken.write_text('{"vocab_size": 10,\n "hidden_size": }', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken.json is not valid JSON \(line 2"):
        registry.read_config(str(broken))
    with pytest.raises(ConfigError, match="cannot read model config .*missing.json"):
        registry.read_config(str(tmp_path / "missing.json"))
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"list.json must be a JSON object \(dict\), got 'list'"):
        registry.read_config(str(listed))
    typo = tiny_config(tmp_path / "typo.json", num_hiden_layers=3)
    with pytest.raises(ConfigError, match=r"typo.json: .*'num_hiden_layers'.*num_hidden_layers"):
        registry.read_config(typo)


@pytest.mark.parametrize("extra, encoder_class, first_layer", [
    ({}, modeling.BertModel, "bert/encoder/layer_0/attention/self/query/kernel"),
    ({"embedding_size": 16}, modeling.AlbertModel,
     "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"),
])
def test_create_encoder_builds_the_family_encoder(tmp_path, extra, encoder_class, first_layer):
    config = registry.read_config(tiny_config(tmp_path / "c.json", **extra))
    with tf.Graph().as_default():
        model = registry.create_encoder(config, False, tf.zeros([2, 5], tf.int32))
        names = {v.op.name for v in tf.global_variables()}
        assert type(model) is encoder_class
        assert model.get_sequence_output().shape.as_list() == [2, 5, 32]
        assert first_layer in names


def test_pretraining_losses_is_the_family_objective_unchanged(tmp_path):
    """The training room's entry point builds exactly the graph the family's objective does."""
    config = registry.read_config(tiny_config(tmp_path / "c.json", embedding_size=16))
    rng = np.random.RandomState(0)
    features = {"input_ids": rng.randint(1, 50, [2, 8]), "input_mask": np.ones([2, 8]),
                "segment_ids": np.zeros([2, 8]), "masked_lm_positions": [[1, 2], [3, 4]],
                "masked_lm_ids": [[5, 6], [7, 8]], "masked_lm_weights": np.ones([2, 2]),
                "next_sentence_labels": [[0], [1]]}
    losses = []
    for build in (pretraining_model_fn.pretraining_losses,
                  masked_lm_pretraining.masked_lm_pretraining_losses):
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            feats = {k: tf.constant(np.asarray(v), tf.float32 if k.endswith(("mask", "weights"))
                                    else tf.int32) for k, v in features.items()}
            feats["input_mask"] = tf.cast(feats["input_mask"], tf.int32)
            feats["segment_ids"] = tf.cast(feats["segment_ids"], tf.int32)
            outputs = build(config, feats, False, True)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses.append(sess.run([outputs["loss"], outputs["sentence_loss"]]))
                names = sorted(v.op.name for v in tf.global_variables())
    # the same graph, seed, shapes and kernels in this process: bit-identical losses
    np.testing.assert_array_equal(losses[0], losses[1])
    assert np.isfinite(losses[0]).all() and losses[0][1] > 0
    assert "cls/seq_relationship/output_weights" in names


@pytest.mark.parametrize("extra", [{}, {"embedding_size": 16},
                                   {"embedding_size": 16, "ln_type": "postln"}])
def test_every_name_a_family_exports_as_has_its_transformers_tables(tmp_path, extra):
    config = registry.read_config(tiny_config(tmp_path / "c.json", **extra))
    hf_type = registry.family_of(config).hf_model_type(config)
    assert hf_config.exported_model_type(config) == hf_type
    assert hf_type in hf_weights.ARCHITECTURES
    for task in ("pretraining",) + hf_config.CLASSIFIER_TASKS:
        assert (hf_type, task) in hf_config.ARCHITECTURES
    exported = hf_config.hf_config_from_bert(config)
    assert exported["model_type"] == hf_type
    assert hf_config.hf_model_type(exported) == hf_type  # and it reads back as the same


def test_reading_a_config_does_not_load_tensorflow(tmp_path):
    path = tiny_config(tmp_path / "c.json", embedding_size=16)
    code = ("import sys; from pretrain.models import registry; "
            f"c = registry.read_config({json.dumps(path)}); "
            "print(registry.family_of(c).model_type, 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(REPO_ROOT))
    assert out.stdout.split() == ["albert", "False"]


def test_the_data_side_registry_lists_the_same_families():
    """common.model_families (what data_gen and common know of a family: its length rule) is
    linked to this registry by model_type."""
    from common import model_families  # pylint: disable=import-outside-toplevel
    assert set(model_families.LENGTH_RULES) == set(registry.model_types())
    for name in registry.model_types():
        relative = model_families.length_rule(name) == model_families.RELATIVE_POSITIONS
        config_class = registry.family(name).config_class
        assert relative == (name == "xlnet"), (name, config_class)
