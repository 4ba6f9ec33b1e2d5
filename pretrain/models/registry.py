"""The model families, keyed by a config's `model_type`: the one place that says, for each
family, which class reads its config file, which class builds its encoder, which
pretraining objective trains it, what transformers calls it and how long an input it takes.

    config = registry.read_config("bert_config.json")        # the family's config class
    model = registry.create_encoder(config, is_training, input_ids, input_mask, segment_ids)
    outputs = registry.family_of(config).pretraining_losses(config, features, ...)

A new family is one sub-package of `pretrain.models` plus one `ModelFamily` entry below;
its transformers name table sits in `pretrain.interop` under its `hf_model_type` names
(tests/test_model_registry.py checks that every name a family exports as has one).
"""
import dataclasses
import importlib
from typing import Callable, Tuple

from pretrain.models import config as config_lib
from pretrain.models.config import BertConfig, ConfigError
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.xlnet.config import XLNetConfig


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """What the rest of the toolkit needs to know about one model family.

    model_type: the config's `model_type` value; `aliases` are other values read as it.
    config_class: reads the config (`from_json_file`, `from_dict`); the instance's
      `model_type` names this family and `max_sequence_length` is its length rule.
    encoder: "module:attribute" of the encoder class: (config, is_training,
      input_ids [B, S], input_mask [B, S], token_type_ids [B, S], **options) -> an object
      with get_sequence_output() [B, S, H], get_pooled_output() [B, H],
      get_embedding_table() [V, E].
    objective: "module:attribute" of the pretraining objective: (config, features,
      is_training, use_sentence_head, ...) -> dict with `loss` and the tensors its eval
      metrics read (see masked_lm_pretraining).
    hf_model_type: config -> transformers' model_type the config exports as, or None
      when the family has no transformers export yet.
    description: one line for --help and error messages.
    sentence_and_span_heads: whether the objective trains the SOP/NSP and SBO heads.
    training_flops: "module:attribute" of its compute per example (pretrain.models.flops):
      (config, seq_length, max_predictions, sentence_head=, span_boundary=) -> FLOPs.
    input_layout: where fine-tuning puts the special tokens (finetune.tasks.layout):
      "bert" ([CLS] a [SEP] b [SEP]) or "xlnet" (a [SEP] b [SEP] [CLS]).

    The graph-building code is named, not imported, so reading a config (compare, the
    exporters' checks) does not load TensorFlow.
    """
    model_type: str
    aliases: Tuple[str, ...]
    config_class: type
    encoder: str
    objective: str
    hf_model_type: Callable
    description: str
    sentence_and_span_heads: bool = True
    training_flops: str = "pretrain.models.flops:masked_lm_training_flops"
    input_layout: str = "bert"

    @property
    def encoder_class(self):
        return _resolve(self.encoder)

    @property
    def pretraining_losses(self):
        return _resolve(self.objective)

    def training_flops_per_example(self, config, seq_length, max_predictions,
                                   sentence_head=False, span_boundary=False):
        """Forward + backward matmul FLOPs of one pretraining example (pretrain.models.flops)."""
        return _resolve(self.training_flops)(config, seq_length, max_predictions,
                                             sentence_head=sentence_head,
                                             span_boundary=span_boundary)


def _resolve(path):
    module, attribute = path.split(":")
    return getattr(importlib.import_module(module), attribute)


_MASKED_LM_OBJECTIVE = "pretrain.models.masked_lm_pretraining:masked_lm_pretraining_losses"


def _albert_hf_model_type(config):
    # brightmart's albert_zh layout is exported as the BERT it computes.
    return "albert" if config.albert_layout == "google" else "bert"


_FAMILIES = {family.model_type: family for family in (
    ModelFamily("bert", ("roberta",), BertConfig, "pretrain.models.modeling:BertModel",
                _MASKED_LM_OBJECTIVE, lambda config: "bert",
                "BERT/RoBERTa: masked LM, optional NSP/SOP and span boundary heads"),
    ModelFamily("albert", (), BertConfig, "pretrain.models.modeling:AlbertModel",
                _MASKED_LM_OBJECTIVE, _albert_hf_model_type,
                "ALBERT (Google or brightmart layout): factorised embeddings, shared layers"),
    ModelFamily("electra", (), ElectraConfig,
                "pretrain.models.electra.modeling:ElectraDiscriminator",
                "pretrain.models.electra.pretraining:electra_pretraining_losses",
                lambda config: "electra",
                "ELECTRA: generator MLM + replaced-token detection by the discriminator",
                sentence_and_span_heads=False,
                training_flops="pretrain.models.flops:electra_training_flops"),
    ModelFamily("xlnet", (), XLNetConfig, "pretrain.models.xlnet.modeling:XLNetModel",
                "pretrain.models.xlnet.pretraining:xlnet_pretraining_losses",
                lambda config: "xlnet",
                "XLNet: permutation LM with two-stream relative attention (mem_len 0)",
                sentence_and_span_heads=False,
                training_flops="pretrain.models.flops:xlnet_training_flops",
                input_layout="xlnet"),
)}
_BY_NAME = {name: family for family in _FAMILIES.values()
            for name in (family.model_type,) + family.aliases}
# A config without model_type is google-research/bert's or albert's: BertConfig tells them
# apart (an embedding_size field means ALBERT).
_UNTYPED_CONFIG_CLASS = BertConfig


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
