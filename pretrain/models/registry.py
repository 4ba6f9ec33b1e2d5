"""The model families, keyed by a config's `model_type`: the one list of families. Each
family declares what the toolkit needs to know about it (`pretrain.models.family.
ModelFamily`) in its own folder, `pretrain/models/<family>/family.py`; a new family is one
sub-package plus one line in FAMILY_MODULES (tests/pretrain/models/test_model_registry.py registers a toy
one).

    config = registry.read_config("bert_config.json")        # the family's config class
    model = registry.create_encoder(config, is_training, input_ids, input_mask, segment_ids)
    outputs = registry.family_of(config).pretraining_losses(config, features, ...)
"""
import importlib

from pretrain.models import config as config_lib
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError
from pretrain.models.family import ModelFamily

# Each module's FAMILIES, in registration order.
FAMILY_MODULES = ("pretrain.models.bert.family", "pretrain.models.electra.family",
                  "pretrain.models.xlnet.family")

_FAMILIES = {family.model_type: family for module in FAMILY_MODULES
             for family in importlib.import_module(module).FAMILIES}
_BY_NAME = {name: family for family in _FAMILIES.values()
            for name in (family.model_type,) + family.aliases}
# A config without model_type is google-research/bert's or albert's: BertConfig tells them
# apart (an embedding_size field means ALBERT).
_UNTYPED_CONFIG_CLASS = BertConfig


def register(family):
    """Adds a ModelFamily (a plug-in outside FAMILY_MODULES, or a test's toy family);
    ConfigError if its model_type or an alias is taken."""
    if not isinstance(family, ModelFamily):
        raise ConfigError("register() takes a ModelFamily, got %r" % type(family).__name__)
    taken = [name for name in (family.model_type,) + family.aliases if name in _BY_NAME]
    if taken:
        raise ConfigError("model_type %s is already registered" % ", ".join(taken))
    _FAMILIES[family.model_type] = family
    _BY_NAME.update({name: family for name in (family.model_type,) + family.aliases})


def unregister(model_type):
    """Removes a family added by register() (tests)."""
    family = _FAMILIES.pop(model_type)
    for name in (family.model_type,) + family.aliases:
        _BY_NAME.pop(name, None)


def declared(field):
    """Every registered family's values of a tuple field, in registration order, each once
    (e.g. declared("vocab_tables"): the word tables vocab surgery rewrites)."""
    values = []
    for family in _FAMILIES.values():
        values += [value for value in getattr(family, field) if value not in values]
    return tuple(values)


def model_types():
    """The registered model_type values (aliases left out), in registration order."""
    return tuple(_FAMILIES)


def family(model_type):
    """The ModelFamily registered under `model_type` (or one of its aliases); else
    ConfigError naming the registered ones."""
    key = model_type.lower() if isinstance(model_type, str) else model_type
    if key not in _BY_NAME:
        raise ConfigError("model_type %r is not a registered model family; use one of %s"
                          % (model_type, ", ".join(sorted(_BY_NAME))))
    return _BY_NAME[key]


def family_of(config):
    """The ModelFamily of a config object read by `read_config` (or its config class)."""
    return family(config.model_type)


def config_from_dict(values, source="config"):
    """A config object of the family `values["model_type"]` names (BERT/ALBERT without it)."""
    if not isinstance(values, dict):
        raise ConfigError("%s must be a JSON object (dict), got %r"
                          % (source, type(values).__name__))
    model_type = values.get("model_type")
    config_class = _UNTYPED_CONFIG_CLASS if model_type is None else family(model_type).config_class
    return config_class.from_dict(values)


def read_config(path):
    """Reads a model config file with its family's config class; ConfigError names the file
    (unreadable, not JSON, an unregistered model_type, or a field the class refuses)."""
    return config_lib.from_json_file(
        lambda values: config_from_dict(values, source="model config %s" % path), path)


def create_encoder(config, is_training, input_ids, input_mask=None, token_type_ids=None,
                   **kwargs):
    """Builds the encoder of the config's family: input_ids [B, S] -> a model object (see
    ModelFamily.encoder_class); keyword options as the family's encoder class takes them."""
    return family_of(config).encoder_class(config, is_training, input_ids,
                                           input_mask=input_mask,
                                           token_type_ids=token_type_ids, **kwargs)
