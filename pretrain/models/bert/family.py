"""The registry entries of BERT/RoBERTa and ALBERT (pretrain.models.registry)."""
from pretrain.models.bert.config import BertConfig
from pretrain.models.family import ModelFamily

_OBJECTIVE = "pretrain.models.bert.pretraining:masked_lm_pretraining_losses"
_METRICS = "pretrain.models.eval_metrics:masked_lm_eval_metrics"
# transformers' BertFor* / AlbertFor*: the interop room's base converter and name tables
_CONVERTER = "pretrain.interop.hf_converter:BERT"


def _albert_hf_model_type(config):
    # brightmart's albert_zh layout is exported as the BERT it computes.
    return "albert" if config.albert_layout == "google" else "bert"


BERT = ModelFamily(
    "bert", ("roberta",), BertConfig, "pretrain.models.bert.modeling:BertModel", _OBJECTIVE,
    _METRICS, lambda config: "bert",
    "BERT/RoBERTa: masked LM, optional NSP/SOP and span boundary heads",
    hf_converter=_CONVERTER)
ALBERT = ModelFamily(
    "albert", (), BertConfig, "pretrain.models.bert.modeling:AlbertModel", _OBJECTIVE,
    _METRICS, _albert_hf_model_type,
    "ALBERT (Google or brightmart layout): factorised embeddings, shared layers",
    hf_converter=_CONVERTER)
FAMILIES = (BERT, ALBERT)
