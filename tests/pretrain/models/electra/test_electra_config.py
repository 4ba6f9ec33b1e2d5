"""ElectraConfig: upstream's hyperparameter names and defaults, the generator sized as
google-research/electra's get_generator_config sizes it, and clear refusals."""
import json

import pytest

from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError
from pretrain.models.electra.config import ELECTRA_DEFAULTS, ElectraConfig

# HFL's chinese-electra-180g-small-discriminator shape (ELECTRA-Small).
SMALL = {"model_type": "electra", "vocab_size": 21128, "hidden_size": 256,
         "num_hidden_layers": 12, "num_attention_heads": 4, "intermediate_size": 1024,
         "embedding_size": 128, "max_position_embeddings": 512, "type_vocab_size": 2}


def test_defaults_are_upstreams_and_the_dict_round_trips():
    config = ElectraConfig.from_dict(SMALL)
    assert ELECTRA_DEFAULTS == {"embedding_size": None, "generator_hidden_size": 0.25,
                                "generator_layers": 1.0, "untied_generator_embeddings": False,
                                "gen_weight": 1.0, "disc_weight": 50.0, "temperature": 1.0}
    written = config.to_dict()
    assert written["model_type"] == "electra" and written["embedding_size"] == 128
    assert written["disc_weight"] == 50.0 and written["temperature"] == 1.0
    assert not {"sharing", "albert_layout", "num_hidden_groups", "inner_group_num"} & set(written)
    again = ElectraConfig.from_dict(json.loads(config.to_json_string()))
    assert again.to_dict() == written
    assert (config.hidden_size, config.embedding_width, config.max_sequence_length) == (256, 128,
                                                                                       512)
    assert ElectraConfig.from_dict(dict(SMALL, embedding_size=None)).embedding_width == 256


@pytest.mark.parametrize("overrides, width, layers, heads", [
    ({}, 64, 12, 1),  # ELECTRA-Small: 256 x 0.25
    ({"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072,
      "generator_hidden_size": 1 / 3}, 256, 12, 4),  # ELECTRA-Base's generator
    ({"generator_layers": 0.5, "generator_hidden_size": 1.0}, 256, 6, 4),
])
def test_generator_is_sized_as_upstream_sizes_it(overrides, width, layers, heads):
    config = ElectraConfig.from_dict(dict(SMALL, **overrides))
    generator = config.generator_config()
    assert isinstance(generator, BertConfig) and generator.model_type == "bert"
    assert (generator.hidden_size, generator.num_hidden_layers,
            generator.num_attention_heads, generator.intermediate_size) == (
                width, layers, heads, 4 * width)
    assert generator.vocab_size == 21128 and generator.max_position_embeddings == 512
    discriminator = config.discriminator_config()
    assert (discriminator.hidden_size, discriminator.num_hidden_layers) == (
        config.hidden_size, config.num_hidden_layers)
    assert discriminator.embedding_size is None  # the projection is ELECTRA's, not ALBERT's


@pytest.mark.parametrize("overrides, message", [
    ({"model_type": "bert"}, "'model_type' = 'bert': an ElectraConfig needs \"electra\""),
    ({"sharing": "all"}, "'sharing' = 'all': ELECTRA's encoders are not shared"),
    ({"disc_weight": -1}, "'disc_weight' = -1: must be a number >= 0"),
    ({"temperature": 0}, "'temperature' = 0: must be a positive number"),
    ({"untied_generator_embeddings": "yes"}, "'untied_generator_embeddings' = 'yes': must be"),
    ({"embedding_size": 0}, "'embedding_size' = 0: must be a positive integer"),
    ({"generator_layers": 0.01}, "the generator .*'num_hidden_layers' = 0"),
    ({"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072,
      "generator_hidden_size": 0.33},  # 253 wide with 3 heads: upstream fails too
     r"the generator \(generator_hidden_size=0.33.*'hidden_size' = 253: must be divisible"),
    ({"num_hiden_layers": 3}, "'num_hiden_layers': did you mean 'num_hidden_layers'"),
])
def test_bad_fields_are_named(overrides, message):
    with pytest.raises(ConfigError, match=message):
        ElectraConfig.from_dict(dict(SMALL, **overrides))


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "electra_config.json"
    path.write_text(json.dumps(dict(SMALL, temperature=-2)), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"electra_config.json: config field 'temperature'"):
        ElectraConfig.from_json_file(str(path))
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="electra_config.json is not valid JSON"):
        ElectraConfig.from_json_file(str(path))
