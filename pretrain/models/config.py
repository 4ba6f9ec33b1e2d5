"""What every family's config shares: `ConfigError`, reading a config file with errors
that name it (`from_json_file`) and `KeywordConfig` (from_dict / from_json_file of a
config class built as cls(**fields)). Each family's own config class sits in its folder
(`pretrain.models.bert.config.BertConfig`, ...); `pretrain.models.registry` picks one by
a file's `model_type`.
"""
import json
import os

from common.model_configs import missing_hint


class ConfigError(ValueError):
    """A model config that cannot describe a valid model."""


def require_json_object(json_object):
    """Raises ConfigError unless a parsed config is a JSON object (every family's from_dict)."""
    if not isinstance(json_object, dict):
        raise ConfigError("config must be a JSON object (dict), got %r"
                          % type(json_object).__name__)


def pop_model_type(values, model_type, class_name):
    """Removes `model_type` from the dict `values` (absent: model_type); ConfigError when it
    names another family than `model_type`, which `class_name` reads."""
    found = values.pop("model_type", model_type)
    if not isinstance(found, str) or found.lower() != model_type:
        raise ConfigError("config field 'model_type' = %r: an %s needs \"%s\""
                          % (found, class_name, model_type))


def from_json_file(from_dict, json_file):
    """from_dict(the JSON object in json_file); every ConfigError (unreadable, not JSON, a
    field refused) names the file."""
    if os.path.isdir(json_file):
        ours = os.path.join(json_file, "bert_config.json")
        if os.path.isfile(ours):
            advice = "; pass the file inside it, %s" % ours
        elif os.path.isfile(os.path.join(json_file, "config.json")):
            advice = ("; it holds a transformers config.json: import the model with python -m "
                      "pretrain.interop.import_hf --model_dir=%s, which writes a bert_config.json"
                      % json_file)
        else:
            advice = "; pass the model's bert_config.json (it lies beside its checkpoint)"
        raise ConfigError("model config %s is a folder, not a file%s" % (json_file, advice))
    try:
        with open(json_file, "r", encoding="utf-8") as reader:
            data = json.load(reader)
    except OSError as err:
        raise ConfigError("cannot read model config %s: %s; %s"
                          % (json_file, err.strerror or err, missing_hint())) from None
    except json.JSONDecodeError as err:
        raise ConfigError("model config %s is not valid JSON (line %d: %s)"
                          % (json_file, err.lineno, err.msg)) from None
    try:
        return from_dict(data)
    except ConfigError as err:
        message = str(err)
        raise ConfigError(message if str(json_file) in message
                          else "%s: %s" % (json_file, message)) from None


class KeywordConfig(object):
    """from_dict / from_json_file for a family's config class built as cls(**fields)."""

    @classmethod
    def from_dict(cls, json_object):
        require_json_object(json_object)
        return cls(**json_object)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads the config file; errors name the file."""
        return from_json_file(cls.from_dict, json_file)
