"""Model configuration: `BertConfig`, read from `bert_config.json`-style files.

One config class covers BERT/RoBERTa and both ALBERT variable layouts. All
validation lives in `BertConfig.validate()`, called by every constructor, so
a self-contradicting config is refused before any graph is built, with a
message naming the offending field.
"""
import copy
import difflib
import json

from common import model_limits
from pretrain.models.config import ConfigError, from_json_file, require_json_object

MODEL_TYPES = ("bert", "albert")
ALBERT_LAYOUTS = ("google", "brightmart")
SHARING_MODES = ("all", "attention", "ffn", "none")
LAYER_NORM_POSITIONS = ("post", "pre")
# "gelu" keeps google-research/bert's meaning, the tanh approximation, also
# accepted under transformers' names for it ("gelu_new", "gelu_pytorch_tanh");
# "gelu_exact" is the erf GELU, which transformers calls "gelu".
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_exact", "relu", "swish", "tanh",
               "linear")

# Fields with their defaults (google-research/bert defaults where they exist).
_DEFAULTS = {
    "vocab_size": None,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 16,
    "initializer_range": 0.02,
    # ALBERT
    "embedding_size": None,
    "num_hidden_groups": 1,
    "inner_group_num": 1,
    # variant selection
    "model_type": None,
    "albert_layout": None,
    "sharing": None,
    "layer_norm_position": "post",
}

# Model options (bert4keras's names), all off by default. A field at its
# default is left out of `to_dict()`, so configs written without options stay
# exactly as google-research/bert writes them.
_OPTION_DEFAULTS = {
    # RealFormer: each layer's pre-softmax scores add the running sum of the
    # earlier layers' scores (the mask is added afterwards, not carried).
    "residual_attention": False,
    # alpha of hierarchical position embeddings: with n trained positions,
    # inputs up to n * n positions run on the same table.
    "hierarchical_position": None,
    # Per-head width of queries/keys and of values (default hidden_size /
    # num_attention_heads).
    "attention_key_size": None,
    "attention_head_size": None,
    # Conditional LayerNorm: width C of the condition vector [B, C], an
    # optional dense layer mapping it, and that layer's activation.
    "layer_norm_cond_size": None,
    "layer_norm_cond_hidden_size": None,
    "layer_norm_cond_hidden_act": "linear",
}
_FIELDS = dict(_DEFAULTS, **_OPTION_DEFAULTS)

# Keys that released configs carry and that this toolkit does not use. They
# are kept (so to_dict round-trips) but have no effect.
_KNOWN_EXTRA_KEYS = frozenset({
    "directionality", "pooler_fc_size", "pooler_num_attention_heads",
    "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type",
    "net_structure_type", "gap_size", "num_memory_blocks", "down_scale_factor",
    "layers_to_keep", "ln_type", "architectures", "layer_norm_eps",
    "pad_token_id", "bos_token_id", "eos_token_id", "output_past",
    "classifier_dropout", "classifier_dropout_prob", "position_embedding_type",
    "use_cache", "transformers_version", "torch_dtype", "gradient_checkpointing",
    "share_type", "use_einsum",
})

_MODEL_TYPE_ALIASES = {"roberta": "bert", "bert": "bert", "albert": "albert"}


class BertConfig(object):
    """Configuration of a BERT/RoBERTa or ALBERT encoder.

    Fields are those of google-research/bert's `bert_config.json`, plus
    ALBERT's `embedding_size`, `num_hidden_groups`, `inner_group_num` and:
      model_type: "bert" | "albert"; inferred as "albert" when
        `embedding_size` is given and `model_type` is absent.
      albert_layout: "google" (bert/encoder/transformer/group_G/...) or
        "brightmart" (word_embeddings_2, bert/encoder/layer_shared/...).
        Inferred as "brightmart" when the dict carries brightmart's `ln_type`
        key, else "google".
      sharing: "all" | "attention" | "ffn" | "none" (brightmart layout; the
        Google layout shares by `num_hidden_groups` and needs "all"; BERT
        needs "none").
      layer_norm_position: "post" (BERT) or "pre" (LayerNorm before each
        sub-layer, with the same variable names).
    Unknown keys found in released configs are kept in `extra` and ignored.
    """

    def __init__(self, vocab_size=None, **kwargs):
        values = dict(_FIELDS)
        values["vocab_size"] = vocab_size
        self.extra = {}
        for key, value in kwargs.items():
            if key in _FIELDS:
                values[key] = value
            else:
                self._accept_extra_key(key, value)
        for key, value in values.items():
            setattr(self, key, value)
        self._fill_inferred_fields()
        self.validate()

    # -- construction -----------------------------------------------------
    @classmethod
    def from_dict(cls, json_object):
        """Builds a config from a dict such as a parsed bert_config.json."""
        require_json_object(json_object)
        kwargs = dict(json_object)
        vocab_size = kwargs.pop("vocab_size", None)
        return cls(vocab_size=vocab_size, **kwargs)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads a bert_config.json-style file; errors name the file."""
        return from_json_file(cls.from_dict, json_file)

    def to_dict(self):
        out = {key: copy.deepcopy(getattr(self, key)) for key in _DEFAULTS}
        out.update({key: copy.deepcopy(getattr(self, key)) for key, default
                    in _OPTION_DEFAULTS.items() if getattr(self, key) != default})
        out.update(copy.deepcopy(self.extra))
        return out

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def __repr__(self):
        return "BertConfig(%s)" % ", ".join(
            "%s=%r" % (k, getattr(self, k)) for k in _FIELDS)

    # -- derived properties -------------------------------------------------
    @property
    def is_albert(self):
        return self.model_type == "albert"

    @property
    def word_embedding_width(self):
        """Width E of the word-embedding table (H for BERT)."""
        return self.embedding_size if self.is_albert else self.hidden_size

    @property
    def key_size_per_head(self):
        """Per-head width of queries and keys."""
        return self.attention_key_size or self.hidden_size // self.num_attention_heads

    @property
    def value_size_per_head(self):
        """Per-head width of values (the attention context is N times this wide)."""
        return self.attention_head_size or self.hidden_size // self.num_attention_heads

    @property
    def max_sequence_length(self):
        """Longest input the position embeddings cover: n, or n * n with
        hierarchical positions."""
        return model_limits.longest_input({
            "max_position_embeddings": self.max_position_embeddings,
            "hierarchical_position": self.hierarchical_position})

    # -- inference and validation --------------------------------------------
    def _accept_extra_key(self, key, value):
        if key not in _KNOWN_EXTRA_KEYS:
            close = difflib.get_close_matches(key, list(_FIELDS), n=1, cutoff=0.85)
            if close:
                raise ConfigError("unknown config field %r: did you mean %r?"
                                  % (key, close[0]))
        self.extra[key] = value

    def _fill_inferred_fields(self):
        if self.model_type is None:
            self.model_type = "albert" if self.embedding_size is not None else "bert"
        elif isinstance(self.model_type, str):
            self.model_type = _MODEL_TYPE_ALIASES.get(self.model_type.lower(),
                                                      self.model_type)
        if self.model_type == "albert":
            if self.albert_layout is None:
                self.albert_layout = ("brightmart" if "ln_type" in self.extra
                                      else "google")
            if self.embedding_size is None:
                self.embedding_size = self.hidden_size
            if self.sharing is None:
                self.sharing = "all"
            ln_type = self.extra.get("ln_type")
            if ln_type in ("preln", "postln") and self.layer_norm_position == "post":
                self.layer_norm_position = ln_type[:-2]
        elif self.sharing is None:
            self.sharing = "none"

    def validate(self):
        """Raises ConfigError naming the first field that is inconsistent."""
        def require(condition, field, message):
            if not condition:
                raise ConfigError("config field %r = %r: %s"
                                  % (field, getattr(self, field), message))

        def positive_int(field):
            value = getattr(self, field)
            require(isinstance(value, int) and not isinstance(value, bool)
                    and value > 0, field, "must be a positive integer")

        require(self.vocab_size is not None, "vocab_size",
                "is required (the number of lines of the vocab file)")
        for field in ("vocab_size", "hidden_size", "num_hidden_layers",
                      "num_attention_heads", "intermediate_size",
                      "max_position_embeddings", "type_vocab_size",
                      "num_hidden_groups", "inner_group_num"):
            positive_int(field)
        require(self.hidden_size % self.num_attention_heads == 0
                or (self.attention_key_size and self.attention_head_size), "hidden_size",
                "must be divisible by num_attention_heads=%d (or set both "
                "attention_key_size and attention_head_size)" % self.num_attention_heads)
        self._validate_options(require, positive_int)
        require(isinstance(self.hidden_act, str)
                and self.hidden_act.lower() in ACTIVATIONS, "hidden_act",
                "unknown activation; use one of %s" % ", ".join(ACTIVATIONS))
        require(not ("transformers_version" in self.extra and self.hidden_act.lower() == "gelu"),
                "hidden_act", "this is a transformers config.json, where \"gelu\" means the "
                "exact erf GELU, but in bert_config.json it means Google's tanh approximation. "
                "Convert the model with `python -m pretrain.interop.import_hf`, or set "
                "hidden_act to \"gelu_exact\" (erf) or \"gelu_new\" (tanh)")
        for field in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, field)
            require(isinstance(value, (int, float)) and 0.0 <= value < 1.0,
                    field, "must be a probability in [0, 1)")
        require(isinstance(self.initializer_range, (int, float))
                and self.initializer_range > 0, "initializer_range",
                "must be a positive number")
        require(self.model_type in MODEL_TYPES, "model_type",
                "use one of %s" % ", ".join(MODEL_TYPES))
        require(self.sharing in SHARING_MODES, "sharing",
                "unknown sharing mode; use one of %s" % ", ".join(SHARING_MODES))
        require(self.layer_norm_position in LAYER_NORM_POSITIONS,
                "layer_norm_position", "use one of %s"
                % ", ".join(LAYER_NORM_POSITIONS))
        if self.model_type == "bert":
            require(self.embedding_size in (None, self.hidden_size),
                    "embedding_size", "a BERT model has no factorized embedding; "
                    "set model_type to \"albert\" or drop embedding_size")
            require(self.sharing == "none", "sharing",
                    "BERT layers are not shared; use model_type \"albert\"")
            require(self.num_hidden_groups == 1 and self.inner_group_num == 1,
                    "num_hidden_groups", "layer groups exist only for ALBERT")
            require(self.albert_layout in (None,) + ALBERT_LAYOUTS,
                    "albert_layout", "use one of %s" % ", ".join(ALBERT_LAYOUTS))
            return
        positive_int("embedding_size")
        require(self.albert_layout in ALBERT_LAYOUTS, "albert_layout",
                "unknown layout; use one of %s" % ", ".join(ALBERT_LAYOUTS))
        require(self.num_hidden_groups <= self.num_hidden_layers
                and self.num_hidden_layers % self.num_hidden_groups == 0,
                "num_hidden_groups", "num_hidden_layers=%d must be a multiple of it"
                % self.num_hidden_layers)
        if self.albert_layout == "google":
            require(self.sharing == "all", "sharing",
                    "the Google ALBERT layout shares by num_hidden_groups; "
                    "use sharing \"all\" or albert_layout \"brightmart\"")
        else:
            require(self.num_hidden_groups == 1, "num_hidden_groups",
                    "the brightmart layout has no groups; use sharing instead")
            require(self.inner_group_num == 1, "inner_group_num",
                    "the brightmart layout has no inner groups")

    def _validate_options(self, require, positive_int):
        require(isinstance(self.residual_attention, bool), "residual_attention",
                "must be true or false")
        alpha = self.hierarchical_position
        require(alpha is None or (isinstance(alpha, (int, float)) and not isinstance(alpha, bool)
                                  and 0.0 < alpha < 1.0),
                "hierarchical_position", "must be a number in (0, 1), e.g. 0.4 (or null: off)")
        for field in ("attention_key_size", "attention_head_size", "layer_norm_cond_size",
                      "layer_norm_cond_hidden_size"):
            if getattr(self, field) is not None:
                positive_int(field)
        require(self.layer_norm_cond_size is not None
                or self.layer_norm_cond_hidden_size is None, "layer_norm_cond_hidden_size",
                "maps the condition of conditional LayerNorm; set layer_norm_cond_size too")
        act = self.layer_norm_cond_hidden_act
        require(isinstance(act, str) and act.lower() in ACTIVATIONS,
                "layer_norm_cond_hidden_act", "unknown activation; use one of %s"
                % ", ".join(ACTIVATIONS))
