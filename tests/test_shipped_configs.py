"""Model configs ship in the package and every --bert_config_file takes their names."""
import json
import os

import pytest

from common import model_configs, model_limits
from common.model_configs import resolve_config_file, shipped_names, shipped_path
from data_gen.config import ConfigError as DataConfigError, GenerationConfig
from pretrain.checkpoints import checkpoint_assets
from pretrain.models import registry
from pretrain.models.config import ConfigError


def test_a_name_resolves_to_the_file_beside_the_module():
    assert {"roberta_zh_base", "demo_tiny_bert", "lcqmc_small_bert"} <= set(shipped_names())
    path = shipped_path("roberta_zh_base")
    assert path == os.path.join(os.path.dirname(model_configs.__file__), "roberta_zh_base.json")
    assert resolve_config_file("roberta_zh_base") == path
    assert resolve_config_file("roberta_zh_base.json") == path
    assert json.load(open(path, encoding="utf-8"))["hidden_size"] == 768


def test_a_path_that_exists_wins_over_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo_tiny_bert").write_text("{}", encoding="utf-8")
    assert resolve_config_file("demo_tiny_bert") == "demo_tiny_bert"
    for value in ("gs://bucket/bert_config.json", "my/own.json", "nope", "", None):
        assert resolve_config_file(value) == value


def test_an_unknown_config_is_refused_with_the_shipped_names():
    with pytest.raises(ConfigError) as error:
        registry.read_config(resolve_config_file("configs/roberta_zh_base.json"))
    message = str(error.value)
    assert message.startswith("cannot read model config configs/roberta_zh_base.json: No such")
    assert "one of the shipped configs: " + ", ".join(shipped_names()) in message
    with pytest.raises(ValueError, match="cannot read model config nope: .*roberta_zh_base"):
        model_limits.read_config("nope")


def test_pretraining_and_data_gen_read_a_config_by_name(tmp_path):
    assets = checkpoint_assets.resolve(None, None, "lcqmc_small_bert")
    assert assets.config_file == shipped_path("lcqmc_small_bert")
    assert registry.read_config(assets.config_file).num_hidden_layers == 4
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    limit = json.load(open(shipped_path("demo_tiny_bert")))["max_position_embeddings"]
    with pytest.raises(DataConfigError, match=f"max_position_embeddings={limit}"):
        GenerationConfig(input_file=str(vocab), output_file=str(tmp_path / "out.tfrecord"),
                         vocab_file=str(vocab), bert_config_file="demo_tiny_bert",
                         max_seq_length=limit + 1).validate()
