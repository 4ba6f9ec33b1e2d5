"""`ElectraConfig`: a discriminator's bert_config.json fields plus google-research/electra's
own hyperparameters, under upstream's names, and the generator sized as upstream sizes it.

    {"model_type": "electra", "vocab_size": 21128, "hidden_size": 256, ...,
     "embedding_size": 128, "generator_hidden_size": 0.25, "disc_weight": 50.0}

The discriminator and the generator are each described by a `BertConfig`
(`discriminator_config()`, `generator_config()`), so the one encoder builds both.
"""
import copy
import json

from pretrain.models import config as config_lib
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError

# google-research/electra's names and defaults (configure_pretraining.PretrainingConfig).
ELECTRA_DEFAULTS = {
    "embedding_size": None,  # width E of the shared embeddings; None: hidden_size
    "generator_hidden_size": 0.25,  # the generator's width, a fraction of the discriminator's
    "generator_layers": 1.0,  # its depth, a fraction of the discriminator's
    "untied_generator_embeddings": False,  # True: the generator has its own embeddings
    "gen_weight": 1.0,  # weight of the generator's masked-LM loss
    "disc_weight": 50.0,  # weight of the discriminator's replaced-token loss
    "temperature": 1.0,  # of the generator's softmax when sampling replacements
}
# Layer sharing and groups are ALBERT's; an ELECTRA encoder is a BERT one.
_REFUSED_BERT_FIELDS = ("num_hidden_groups", "inner_group_num", "sharing", "albert_layout")


class ElectraConfig(config_lib.KeywordConfig):
    """Configuration of an ELECTRA pretraining model (discriminator + generator)."""

    model_type = "electra"

    def __init__(self, **values):
        values = dict(values)
        config_lib.pop_model_type(values, "electra", "ElectraConfig")
        for field in _REFUSED_BERT_FIELDS:
            if field in values:
                raise ConfigError("config field %r = %r: ELECTRA's encoders are not shared "
                                  "across layers; drop the field" % (field, values[field]))
        self.electra = {name: values.pop(name, default)
                        for name, default in ELECTRA_DEFAULTS.items()}
        # The discriminator's own fields; its embedding width is ELECTRA's to decide.
        self._discriminator = BertConfig(model_type="bert", **values)
        self._validate()

    def to_dict(self):
        out = {key: value for key, value in self._discriminator.to_dict().items()
               if key not in _REFUSED_BERT_FIELDS}
        out["model_type"] = "electra"
        out.update(copy.deepcopy(self.electra))
        return out

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def __getattr__(self, name):  # the discriminator's BERT fields, read-only
        if name in ("_discriminator", "electra"):
            raise AttributeError(name)
        if name in self.electra:
            return self.electra[name]
        return getattr(self._discriminator, name)

    def __repr__(self):
        return "ElectraConfig(%s)" % ", ".join(
            "%s=%r" % item for item in sorted(self.to_dict().items()))

    # -- the two networks -------------------------------------------------
    @property
    def embedding_width(self):
        """Width E of the embedding tables both networks share (H without embedding_size)."""
        return self.electra["embedding_size"] or self._discriminator.hidden_size

    def discriminator_config(self):
        """The discriminator's BertConfig (scope `electra`)."""
        return BertConfig.from_dict(self._discriminator.to_dict())

    def generator_config(self):
        """The generator's BertConfig, sized as google-research/electra sizes it: width
        round(H x generator_hidden_size), depth round(L x generator_layers), heads
        width // 64 (at least 1), intermediate 4 x width; every other field the
        discriminator's."""
        values = self._discriminator.to_dict()
        width = int(round(self._discriminator.hidden_size * self.generator_hidden_size))
        values.update(
            hidden_size=width,
            num_hidden_layers=int(round(self._discriminator.num_hidden_layers
                                        * self.generator_layers)),
            intermediate_size=4 * width,
            num_attention_heads=max(1, width // 64))
        try:
            return BertConfig.from_dict(values)
        except ConfigError as err:
            raise ConfigError("the generator (generator_hidden_size=%r, generator_layers=%r "
                              "of the discriminator): %s" % (self.generator_hidden_size,
                                                             self.generator_layers, err)) from None

    @property
    def max_sequence_length(self):
        return self._discriminator.max_sequence_length

    # -- validation ---------------------------------------------------------
    def _validate(self):
        def require(condition, field, message):
            if not condition:
                raise ConfigError("config field %r = %r: %s"
                                  % (field, self.electra[field], message))

        def number(field):
            value = self.electra[field]
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        embedding_size = self.electra["embedding_size"]
        require(embedding_size is None or (isinstance(embedding_size, int)
                                           and not isinstance(embedding_size, bool)
                                           and embedding_size > 0),
                "embedding_size", "must be a positive integer (or absent: hidden_size)")
        for field in ("generator_hidden_size", "generator_layers", "temperature"):
            require(number(field) and self.electra[field] > 0, field,
                    "must be a positive number")
        for field in ("gen_weight", "disc_weight"):
            require(number(field) and self.electra[field] >= 0, field,
                    "must be a number >= 0")
        require(isinstance(self.electra["untied_generator_embeddings"], bool),
                "untied_generator_embeddings", "must be true or false")
        self.generator_config()  # refuses a generator of width or depth 0, or odd heads

