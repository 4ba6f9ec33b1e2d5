"""Model configs both ways: our `bert_config.json` <-> transformers' `config.json`.

    ours = bert_config_from_hf(json.load(open("hf_model/config.json")))   # BertConfig
    hf = hf_config_from_bert(ours, task="pretraining")                   # dict

Activations keep their meaning on both sides: our "gelu" is Google's tanh
approximation (transformers' "gelu_new"), our "gelu_exact" is the erf GELU
(transformers' "gelu", which the hfl models use). A brightmart ALBERT exports
as BERT (see hf_weights); pre-LN models and anything our model cannot compute
exactly (relative position embeddings, another LayerNorm epsilon) are
refused with a message.
"""
import math

from common.cli_options import UserError
from pretrain.models import registry
from pretrain.models.bert.config import BertConfig
from pretrain.models.config import ConfigError

LAYER_NORM_EPS = 1e-12  # fixed in pretrain.models.layers.layer_norm

# transformers' hidden_act -> ours.
_ACTIVATIONS_FROM_HF = {
    "gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
    "relu": "relu", "tanh": "tanh", "swish": "swish", "silu": "swish", "linear": "linear",
}
# ours (lower case) -> transformers'.
_ACTIVATIONS_TO_HF = {
    "gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new",
    "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "swish": "swish", "linear": "linear",
}

# Values transformers assumes when a field is absent (BertConfig / AlbertConfig defaults; a
# family's converter passes its own to bert_fields_from_hf).
_HF_DEFAULTS = {
    "bert": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
             "type_vocab_size": 2, "initializer_range": 0.02},
    "albert": {"embedding_size": 128, "hidden_size": 4096, "num_hidden_layers": 12,
               "num_hidden_groups": 1, "num_attention_heads": 64, "intermediate_size": 16384,
               "inner_group_num": 1, "hidden_act": "gelu_new", "hidden_dropout_prob": 0.0,
               "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 512,
               "type_vocab_size": 2, "initializer_range": 0.02},
}
_SHARED_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                  "max_position_embeddings", "type_vocab_size", "initializer_range")
_ALBERT_FIELDS = ("embedding_size", "num_hidden_groups", "inner_group_num")
ARCHITECTURES = {  # (hf model_type, task) -> architectures entry
    ("bert", "pretraining"): "BertForPreTraining",
    ("bert", "sequence_classification"): "BertForSequenceClassification",
    ("albert", "pretraining"): "AlbertForPreTraining",
    ("albert", "sequence_classification"): "AlbertForSequenceClassification",
    ("bert", "token_classification"): "BertForTokenClassification",
    ("albert", "token_classification"): "AlbertForTokenClassification",
}
CLASSIFIER_TASKS = ("sequence_classification", "token_classification")


def hf_model_type(hf_config, source="config.json"):
    """transformers' model_type of a config dict (or, without one, its architectures'), one
    that a registered family's converter imports (pretrain.interop.hf_converter); else
    UserError."""
    families = [registry.family(name) for name in registry.model_types()]
    converters = [family.converter for family in families if family.converter is not None]
    model_type = hf_config.get("model_type")
    architectures = hf_config.get("architectures") or []
    if model_type is None:
        prefixes = sorted(((prefix, converter.hf_model_types[index])
                           for converter in converters
                           for index, prefix in enumerate(converter.architecture_prefixes)),
                          key=lambda pair: -len(pair[0]))
        model_type = next((hf_type for prefix, hf_type in prefixes
                           if any(str(name).startswith(prefix) for name in architectures)),
                          None)
    if model_type == "roberta":
        raise UserError(
            "%s: model_type \"roberta\" is fairseq-style RoBERTa (byte-level BPE, positions "
            "offset by padding_idx), which this toolkit cannot represent. The Chinese "
            "RoBERTa-wwm checkpoints (e.g. hfl/chinese-roberta-wwm-ext) are published as BERT "
            "(model_type \"bert\") and import as they are." % source)
    if not any(model_type in converter.hf_model_types for converter in converters):
        known = [hf_type for converter in converters for hf_type in converter.hf_model_types]
        raise UserError("%s: model_type %r (architectures %s) is not supported; import a "
                        "model of model_type %s"
                        % (source, model_type, architectures,
                           ", ".join('"%s"' % name for name in dict.fromkeys(known))))
    return model_type


def bert_fields_from_hf(hf_config, source="config.json", defaults=None):
    """(transformers model_type, our BERT config fields {name: value}, the transformers
    fields with transformers' defaults for absent ones) of a transformers config dict;
    UserError for what our encoder cannot compute exactly (relative positions, another
    LayerNorm epsilon, an activation). defaults: transformers' values of absent fields
    (default: BERT's or ALBERT's)."""
    model_type = hf_model_type(hf_config, source)
    values = dict(defaults if defaults is not None else _HF_DEFAULTS[model_type])
    values.update({key: value for key, value in hf_config.items() if value is not None})
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise UserError("%s: position_embedding_type %r is not supported; our model has "
                        "absolute position embeddings only" % (source, position_type))
    eps = values.get("layer_norm_eps", LAYER_NORM_EPS)
    if not math.isclose(float(eps), LAYER_NORM_EPS, rel_tol=1e-6):
        raise UserError("%s: layer_norm_eps=%r, but our LayerNorm epsilon is fixed at 1e-12; "
                        "the imported model would compute different outputs" % (source, eps))
    act = str(values["hidden_act"])
    if act not in _ACTIVATIONS_FROM_HF:
        raise UserError("%s: hidden_act %r is not supported; use one of %s"
                        % (source, act, ", ".join(sorted(_ACTIVATIONS_FROM_HF))))
    if "vocab_size" not in hf_config:
        raise UserError("%s: vocab_size is missing" % source)
    ours = {field: values[field] for field in _SHARED_FIELDS}
    ours["hidden_act"] = _ACTIVATIONS_FROM_HF[act]
    return model_type, ours, values


def bert_config_from_hf(hf_config, source="config.json"):
    """Our BertConfig for a transformers config dict (BERT or ALBERT)."""
    model_type, ours, values = bert_fields_from_hf(hf_config, source)
    if model_type not in _HF_DEFAULTS:
        raise UserError("%s: model_type %r is not BERT or ALBERT" % (source, model_type))
    ours["model_type"] = model_type
    if model_type == "albert":
        ours.update({field: values[field] for field in _ALBERT_FIELDS})
        ours["albert_layout"] = "google"
    try:
        return BertConfig.from_dict(ours)
    except ConfigError as err:
        raise UserError("%s: %s" % (source, err)) from None


def exported_model_type(config):
    """transformers' model_type our config exports as (ModelFamily.hf_model_type), after
    the family's converter has checked that transformers can hold it."""
    family = registry.family_of(config)
    if family.converter is None or family.hf_model_type(config) is None:
        raise UserError("model_type %r cannot be exported to transformers yet"
                        % family.model_type)
    family.converter.check_exportable(config)
    return family.hf_model_type(config)


def check_bert_exportable(config):
    """UserError for what transformers' BERT and ALBERT cannot compute (pre-LN, RealFormer
    attention, other head widths, conditional LayerNorm)."""
    if config.layer_norm_position == "pre":
        raise UserError(
            "layer_norm_position \"pre\" (pre-LN) cannot be exported: transformers' BERT and "
            "ALBERT apply LayerNorm after each sub-layer, so the model would compute "
            "something else")
    default_head = config.hidden_size // config.num_attention_heads
    unsupported = [
        ("residual_attention", config.residual_attention, "RealFormer residual attention"),
        ("attention_key_size", config.key_size_per_head != default_head or
         config.hidden_size % config.num_attention_heads, "per-head query/key widths other "
         "than hidden_size / num_attention_heads"),
        ("attention_head_size", config.value_size_per_head != default_head, "per-head value "
         "widths other than hidden_size / num_attention_heads"),
        ("layer_norm_cond_size", config.layer_norm_cond_size is not None,
         "conditional LayerNorm"),
    ]
    for field, is_set, what in unsupported:
        if is_set:
            raise UserError("config field %s=%r cannot be exported: transformers' BERT and "
                            "ALBERT have no %s, so the exported model would compute something "
                            "else" % (field, getattr(config, field), what))


def hf_config_from_bert(config, task="pretraining", num_labels=2, labels=None):
    """transformers config dict for our BertConfig.

    Args:
      task: "pretraining" (BertForPreTraining / AlbertForPreTraining),
        "sequence_classification" or "token_classification" (*ForTokenClassification).
      labels: the class (tag) names in id order for id2label / label2id
        (default "0".."num_labels-1", as in the LCQMC data files).
    """
    model_type = exported_model_type(config)
    if (model_type, task) not in ARCHITECTURES:
        raise UserError("a %s model exports as its own transformers model(s) (its family's "
                        "converter, ModelFamily.hf_converter), not as %s" % (model_type, task))
    hf = hf_fields(config, model_type, ARCHITECTURES[(model_type, task)])
    if model_type == "albert":
        hf.update({field: getattr(config, field) for field in _ALBERT_FIELDS})
        hf["classifier_dropout_prob"] = config.hidden_dropout_prob
    else:
        hf.update(classifier_dropout=None, use_cache=True)
    if task in CLASSIFIER_TASKS:
        labels = [str(label) for label in labels or range(num_labels)]
        if len(labels) != num_labels:
            raise UserError("%d labels %s for a classifier with %d outputs"
                            % (len(labels), labels, num_labels))
        hf.update(num_labels=num_labels,
                  id2label={str(index): label for index, label in enumerate(labels)},
                  label2id={label: index for index, label in enumerate(labels)})
        if task == "sequence_classification":
            hf["problem_type"] = "single_label_classification"
    return hf


def hf_fields(config, model_type, architecture):
    """The transformers config fields every exported model has: BERT's shape fields of
    `config` (a BertConfig, or a network of an ElectraConfig), activation, epsilon."""
    act = str(config.hidden_act).lower()
    if act not in _ACTIVATIONS_TO_HF:
        raise UserError("hidden_act %r has no transformers equivalent" % config.hidden_act)
    hf = {"architectures": [architecture], "model_type": model_type}
    hf.update({field: getattr(config, field) for field in _SHARED_FIELDS})
    hf.update(hidden_act=_ACTIVATIONS_TO_HF[act], layer_norm_eps=LAYER_NORM_EPS, pad_token_id=0,
              position_embedding_type="absolute", tie_word_embeddings=True)
    return hf


def labels_from_hf(hf_config):
    """The label names of a transformers config in id order, or None without id2label."""
    id2label = hf_config.get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        return None
    try:
        by_id = {int(index): str(label) for index, label in id2label.items()}
    except (TypeError, ValueError):
        return None
    if sorted(by_id) != list(range(len(by_id))):
        return None
    return [by_id[index] for index in range(len(by_id))]


def transformers_caveats(config):
    """Sentences about exported configs transformers 4.57 mishandles (empty if none)."""
    if config.hierarchical_position:
        return ["hierarchical_position: transformers' model has only the %d trained positions; "
                "inputs up to that length give the same outputs as here, longer ones fail "
                "there" % config.max_position_embeddings]
    if (config.is_albert and config.albert_layout == "google"
            and config.inner_group_num > config.num_hidden_layers // config.num_hidden_groups):
        return ["transformers' AlbertTransformer indexes its head mask per group and fails "
                "with IndexError when inner_group_num (%d) > num_hidden_layers / "
                "num_hidden_groups (%d); the exported weights are right, but transformers "
                "cannot run this model" % (config.inner_group_num,
                                           config.num_hidden_layers // config.num_hidden_groups)]
    return []
