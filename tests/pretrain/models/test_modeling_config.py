"""BertConfig: parsing, inference, validation messages, shipped configs."""
import json

import pytest

from common.model_configs import shipped_path
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError

from tests.conftest import REPO_ROOT
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close
from tests.testutil.tiny_models import tiny_config


def test_round_trip_keeps_fields_and_released_extras(tmp_path):
    d = tiny_config(directionality="bidi", pooler_type="first_token_transform")
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(d))
    config = BertConfig.from_json_file(str(path))
    assert config.hidden_size == 16 and config.model_type == "bert"
    assert config.sharing == "none"
    again = BertConfig.from_dict(json.loads(config.to_json_string()))
    assert again.to_dict() == config.to_dict()
    assert again.extra == {"directionality": "bidi", "pooler_type": "first_token_transform"}


def test_albert_inferred_from_embedding_size_and_layout_from_ln_type():
    google = BertConfig.from_dict(tiny_config(embedding_size=8))
    assert (google.model_type, google.albert_layout, google.sharing) == ("albert", "google", "all")
    brightmart = BertConfig.from_dict(tiny_config(embedding_size=8, ln_type="preln"))
    assert brightmart.albert_layout == "brightmart"
    assert brightmart.layer_norm_position == "pre"
    assert BertConfig.from_dict(tiny_config(model_type="roberta")).model_type == "bert"


@pytest.mark.parametrize("overrides, field", [
    (dict(hidden_size=30, num_attention_heads=4), "hidden_size"),
    (dict(hidden_act="gelu_fast"), "hidden_act"),
    (dict(hidden_act="gelu", transformers_version="4.57.6"), "hidden_act"),
    (dict(embedding_size=8, sharing="layers"), "sharing"),
    (dict(embedding_size=8, albert_layout="huggingface"), "albert_layout"),
    (dict(embedding_size=8, num_hidden_layers=3, num_hidden_groups=2), "num_hidden_groups"),
    (dict(layer_norm_position="middle"), "layer_norm_position"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(vocab_size=None), "vocab_size"),
    (dict(model_type="gpt"), "model_type"),
    (dict(sharing="all"), "sharing"),
    (dict(embedding_size=8, albert_layout="google", sharing="ffn"), "sharing"),
    (dict(embedding_size=8, albert_layout="brightmart", num_hidden_groups=2), "num_hidden_groups"),
])
def test_contradicting_config_is_refused_naming_the_field(overrides, field):
    with pytest.raises(ConfigError) as info:
        BertConfig.from_dict(tiny_config(**overrides))
    assert "'%s'" % field in str(info.value)


def test_misspelt_known_field_is_refused_but_unknown_keys_pass():
    with pytest.raises(ConfigError, match="did you mean 'num_hidden_layers'"):
        BertConfig.from_dict(tiny_config(num_hiden_layers=3))
    config = BertConfig.from_dict(tiny_config(some_custom_note="x", net_structure_type=0))
    assert config.extra["some_custom_note"] == "x"


def test_bad_json_file_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n "vocab_size": 10,\n "hidden_size": }\n')
    with pytest.raises(ConfigError) as info:
        BertConfig.from_json_file(str(path))
    assert "broken.json" in str(info.value) and "line 3" in str(info.value)
    bad = tmp_path / "bad_heads.json"
    bad.write_text(json.dumps(tiny_config(num_attention_heads=3)))
    with pytest.raises(ConfigError, match="bad_heads.json.*hidden_size"):
        BertConfig.from_json_file(str(bad))


SHIPPED = {
    # name: (model_type, layout, layers, hidden, heads, intermediate, E, vocab)
    "roberta_zh_base": ("bert", None, 12, 768, 12, 3072, 768, 21128),
    "albert_zh_tiny_google": ("albert", "google", 4, 312, 12, 1248, 128, 21128),
    "albert_zh_tiny_brightmart": ("albert", "brightmart", 4, 312, 12, 1248, 128, 21128),
    "albert_zh_small_google": ("albert", "google", 6, 384, 12, 1536, 128, 21128),
    "albert_zh_small_brightmart": ("albert", "brightmart", 6, 384, 12, 1536, 128, 21128),
    "albert_zh_base_google": ("albert", "google", 12, 768, 12, 3072, 128, 21128),
    "albert_zh_base_brightmart": ("albert", "brightmart", 12, 768, 12, 3072, 128, 21128),
    "demo_tiny_bert": ("bert", None, 2, 64, 4, 256, 64, 5000),
    "demo_tiny_albert": ("albert", "google", 2, 64, 4, 256, 32, 5000),
    "test_tiny_bert": ("bert", None, 2, 32, 2, 64, 32, 21128),
    "test_tiny_albert": ("albert", "google", 2, 32, 2, 64, 16, 21128),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_configs_have_the_documented_sizes(name):
    path = (REPO_ROOT / "tests" / "fixtures" / "configs" / (name + ".json")
            if name.startswith("test_") else shipped_path(name))
    config = BertConfig.from_json_file(str(path))
    got = (config.model_type, config.albert_layout, config.num_hidden_layers,
           config.hidden_size, config.num_attention_heads, config.intermediate_size,
           config.word_embedding_width, config.vocab_size)
    assert got == SHIPPED[name]
    assert config.type_vocab_size == 2
    if name.startswith(("demo", )):
        assert config.max_position_embeddings == 128
    if name.startswith("test"):
        assert config.max_position_embeddings == 64


@pytest.mark.parametrize("name, expected", [
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at x = 1 and x = -2
    ("gelu", (0.8411920, -0.0454023)), ("gelu_new", (0.8411920, -0.0454023)),
    ("gelu_pytorch_tanh", (0.8411920, -0.0454023)),
    # 0.5 x (1 + erf(x / sqrt 2)) at x = 1 and x = -2
    ("gelu_exact", (0.8413447, -0.0455003)),
])
def test_gelu_names_keep_googles_meaning_and_accept_transformers_names(name, expected):
    import tensorflow.compat.v1 as tf
    from pretrain.models import layers
    config = BertConfig.from_dict(tiny_config(hidden_act=name))
    with tf.Graph().as_default(), tf.Session() as sess:
        values = sess.run(layers.get_activation(config.hidden_act)(tf.constant([1.0, -2.0])))
    # one tanh or erf (ELEMENTWISE_ULPS) and the formula's 4 roundings, plus 1 ulp for the
    # literals' 7 decimals; gelu and gelu_exact differ by 1.5e-4 at x = 1, 1500 ulps
    assert_close(values, expected, ELEMENTWISE_ULPS + 4 + 1)


def test_a_folder_given_as_the_config_names_the_file_inside_it(tmp_path):
    with pytest.raises(ConfigError, match=f"model config {tmp_path} is a folder, not a file; "
                       "pass the model's bert_config.json"):
        BertConfig.from_json_file(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="transformers config.json: import the model with "
                       f"python -m pretrain.interop.import_hf --model_dir={tmp_path}"):
        BertConfig.from_json_file(str(tmp_path))
    (tmp_path / "bert_config.json").write_text(json.dumps(tiny_config()))
    with pytest.raises(ConfigError, match=f"pass the file inside it, {tmp_path}/bert_config.json"):
        BertConfig.from_json_file(str(tmp_path))
