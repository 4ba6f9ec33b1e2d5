"""XLNet's registry entry (pretrain.models.registry)."""
from pretrain.models.family import EvalHead, InputLayout, ModelFamily
from pretrain.models.xlnet.config import XLNetConfig

PERMUTATION_LM_HEAD = EvalHead(
    "plm_accuracy", "plm_loss", "plm_unigram_accuracy", "plm_unigram_loss", "plm_num_targets",
    "the unigram baseline of its eval data (always predicting the targets' distribution)",
    "train longer; XLNet's permutation LM leaves its plateau later than a masked LM "
    "(its query stream sees fewer tokens), so try a longer warmup or "
    "--adam_bias_correction; do not fine-tune from it yet", language_model=True,
    gates_finetuning=True, not_learned_cell="permutation LM on its unigram plateau")
# zihangdai/xlnet's classifier input: a [SEP] b [SEP] [CLS], [CLS] in segment 2.
XLNET_LAYOUT = InputLayout("xlnet", cls_first=False, cls_segment=2)


def log_line(logged, loss):
    """The heads' part of a training log line: the permutation LM is XLNet's only head."""
    del loss
    return f" plm_loss={logged['plm_loss']:.4f}"


XLNET = ModelFamily(
    "xlnet", (), XLNetConfig, "pretrain.models.xlnet.modeling:XLNetModel",
    "pretrain.models.xlnet.pretraining:xlnet_pretraining_losses",
    "pretrain.models.xlnet.metrics:eval_metric_inputs", lambda config: "xlnet",
    "XLNet: permutation LM with two-stream relative attention (mem_len 0)",
    eval_heads=(PERMUTATION_LM_HEAD,), logged_losses=("loss", "plm_loss"),
    log_line="pretrain.models.xlnet.family:log_line", data_modes=("xlnet",),
    record_input="pretrain.models.xlnet.record_input:RECORDS",
    hf_converter="pretrain.models.xlnet.hf:CONVERTER",
    sentence_and_span_heads=False,
    training_flops="pretrain.models.xlnet.flops:training_flops",
    input_layout=XLNET_LAYOUT, pooler_scope="model/sequnece_summary/",
    takes_sentencepiece=True,
    vocab_extension_refusal="its vocab is a sentencepiece model or a WordPiece vocab whose "
                            "tokens its data mode reserves",
    vocab_tables=(), vocab_biases=())
FAMILIES = (XLNET,)
