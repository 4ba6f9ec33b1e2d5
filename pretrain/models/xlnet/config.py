"""`XLNetConfig`: zihangdai/xlnet's `xlnet_config.json` fields, plus this toolkit's own.

    {"model_type": "xlnet", "n_token": 32000, "d_model": 768, "n_layer": 12, "n_head": 12,
     "d_head": 64, "d_inner": 3072, "ff_activation": "gelu", "untie_r": true}

Upstream's file has no `model_type` (it is added on reading and writing) and keeps
dropout, initializer and clamp length as run flags; here they are optional fields
with upstream's flag defaults, so one file describes a model completely.
"""
import copy
import json

from pretrain.models import config as config_lib
from pretrain.models.config import ConfigError

# zihangdai/xlnet's xlnet_config.json fields (all required there).
XLNET_FIELDS = ("n_token", "d_model", "n_layer", "n_head", "d_head", "d_inner",
                "ff_activation", "untie_r")
# Upstream's run flags (train.py / run_classifier.py), with their defaults.
XLNET_OPTIONS = {
    "dropout": 0.1,  # on embeddings, attention output and feed-forward
    "dropatt": 0.1,  # on attention probabilities
    "init_range": 0.1,  # init="normal" uses init_std; "uniform" uses init_range
    "init_std": 0.02,
    "init": "normal",
    "clamp_len": -1,  # > 0: relative distances beyond it are clamped
}
FF_ACTIVATIONS = ("relu", "gelu")
INITS = ("normal", "uniform")


class XLNetConfig(config_lib.KeywordConfig):
    """Configuration of an XLNet encoder (content and query streams) and its LM head.

    Read with from_json_file / from_dict (upstream's file, with or without model_type).
    """

    model_type = "xlnet"

    def __init__(self, **values):
        values = dict(values)
        config_lib.pop_model_type(values, "xlnet", "XLNetConfig")
        missing = [field for field in XLNET_FIELDS if field not in values]
        if missing:
            raise ConfigError("config lacks field(s) %s (zihangdai/xlnet's xlnet_config.json "
                              "has all of %s)" % (", ".join(missing), ", ".join(XLNET_FIELDS)))
        unknown = sorted(set(values) - set(XLNET_FIELDS) - set(XLNET_OPTIONS))
        if unknown:
            raise ConfigError("config field(s) %s are not XLNet fields; known: %s"
                              % (", ".join(unknown),
                                 ", ".join(XLNET_FIELDS + tuple(XLNET_OPTIONS))))
        for field in XLNET_FIELDS:
            setattr(self, field, values[field])
        for field, default in XLNET_OPTIONS.items():
            setattr(self, field, values.get(field, default))
        self._validate()

    def to_dict(self):
        """upstream's fields, `model_type`, and the options that differ from their default."""
        out = {field: copy.deepcopy(getattr(self, field)) for field in XLNET_FIELDS}
        out.update({field: getattr(self, field) for field, default in XLNET_OPTIONS.items()
                    if getattr(self, field) != default})
        out["model_type"] = "xlnet"
        return out

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def __repr__(self):
        return "XLNetConfig(%s)" % ", ".join("%s=%r" % item for item in sorted(
            self.to_dict().items()))

    # BERT's names for the fields the rest of the toolkit reads (checks, task heads).
    vocab_size = property(lambda self: self.n_token)
    hidden_size = property(lambda self: self.d_model)
    num_hidden_layers = property(lambda self: self.n_layer)
    num_attention_heads = property(lambda self: self.n_head)
    intermediate_size = property(lambda self: self.d_inner)
    initializer_range = property(lambda self: self.init_std)
    hidden_dropout_prob = property(lambda self: self.dropout)
    # Relative segment encoding only tells same from different: upstream's records use
    # 0 (reuse window and A), 1 (B) and 2 (<cls>).
    type_vocab_size = 3
    layer_norm_cond_size = None  # no conditional LayerNorm

    @property
    def max_sequence_length(self):
        """None: relative positions put no limit on the input length."""
        return None

    def _validate(self):
        def require(condition, field, message):
            if not condition:
                raise ConfigError("config field %r = %r: %s"
                                  % (field, getattr(self, field), message))

        def is_int(value):
            return isinstance(value, int) and not isinstance(value, bool)

        def is_number(value):
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        for field in ("n_token", "d_model", "n_layer", "n_head", "d_head", "d_inner"):
            require(is_int(getattr(self, field)) and getattr(self, field) > 0, field,
                    "must be a positive integer")
        require(self.d_model % 2 == 0, "d_model",
                "must be even (sinusoid positional encodings pair sin and cos)")
        require(self.ff_activation in FF_ACTIVATIONS, "ff_activation",
                "choose one of %s" % ", ".join(FF_ACTIVATIONS))
        require(isinstance(self.untie_r, bool), "untie_r", "must be true or false")
        for field in ("dropout", "dropatt"):
            value = getattr(self, field)
            require(is_number(value) and 0.0 <= value < 1.0, field, "must be in [0, 1)")
        for field in ("init_range", "init_std"):
            require(is_number(getattr(self, field)) and getattr(self, field) > 0, field,
                    "must be a positive number")
        require(self.init in INITS, "init", "choose one of %s" % ", ".join(INITS))
        require(is_int(self.clamp_len), "clamp_len", "must be an integer (-1: no clamping)")
