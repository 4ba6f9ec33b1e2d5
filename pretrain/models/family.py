"""What a model family tells the rest of the toolkit: `ModelFamily`, one per family, declared
in the family's own folder (`pretrain/models/<family>/family.py`) and listed once in
`pretrain.models.registry`.

run_pretraining, the model_fn, the input pipeline, the data checks, the learning check,
the exporters and finetune/ read these fields instead of naming a family. Code is named as
"module:attribute" strings, resolved on first use, so reading a config does not load
TensorFlow.
"""
import dataclasses
import importlib
from typing import Callable, Optional, Tuple

# data_gen's --mode values whose records are masked-LM records (data_gen's mode registry;
# linked by name): what the masked-LM families train on.
MASKED_LM_DATA_MODES = ("roberta", "albert", "bert")


class RecordInputError(ValueError):
    """A family's records do not fit the run (ModelFamily.record_input); run_pretraining
    reports it as bad input data."""


@dataclasses.dataclass(frozen=True)
class EvalHead:
    """One pretraining head as the learning check reads it from eval_results.txt: its
    accuracy and loss keys, its baseline's (measured on the same eval batches), the
    weight count behind them, what the baseline is, what to do when the head sits on it,
    whether it is the language model a continued run's start is compared by, and whether
    it trains what fine-tuning starts from (`gates_finetuning`: a start whose such head has
    not learned is not fine-tuned by the experiment scripts; a sentence head does not), with
    the words a results table uses for such a head that has not learned (`not_learned_cell`)."""
    accuracy: str
    loss: str
    baseline_accuracy: str
    baseline_loss: str
    count: str
    baseline: str
    advice: str
    language_model: bool = False
    gates_finetuning: bool = False
    not_learned_cell: str = ""


MASKED_LM_HEAD = EvalHead(
    "masked_lm_accuracy", "masked_lm_loss", "masked_lm_unigram_accuracy",
    "masked_lm_unigram_loss", "masked_lm_num_targets",
    "the unigram baseline of its eval data (always predicting the masked labels' "
    "distribution)",
    "train longer; steps that are too large early on also hold a model here, so try "
    "--adam_bias_correction or a longer warmup before a higher learning rate; check the "
    "masking of the data; and do not fine-tune from it yet: a checkpoint on this plateau is "
    "a worse start than random initialisation", language_model=True, gates_finetuning=True,
    not_learned_cell="MLM on its unigram plateau")
SENTENCE_HEAD = EvalHead(
    "sentence_accuracy", "sentence_loss", "sentence_chance_accuracy", "sentence_chance_loss",
    "sentence_num_examples", "chance (the majority share of its eval labels)",
    "the sentence task usually follows the masked LM off its plateau; train longer")


@dataclasses.dataclass(frozen=True)
class InputLayout:
    """Where fine-tuning puts the special tokens (finetune.tasks.layout): `[CLS] a [SEP]
    b [SEP]` when cls_first, else `a [SEP] b [SEP] [CLS]` with [CLS] in segment
    cls_segment; `name` keys the fine-tuning feature cache."""
    name: str
    cls_first: bool
    cls_segment: int = 0


BERT_LAYOUT = InputLayout("bert", cls_first=True)


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """One model family.

    model_type: the config's `model_type` value; `aliases` are other values read as it.
    config_class: reads the config (`from_json_file`, `from_dict`); the instance's
      `model_type` names this family and `max_sequence_length` is its length rule.
    encoder: "module:attribute" of the encoder class: (config, is_training,
      input_ids [B, S], input_mask [B, S], token_type_ids [B, S], **options) -> an object
      with get_sequence_output() [B, S, H], get_pooled_output() [B, H],
      get_embedding_table() [V, E].
    objective: "module:attribute" of the pretraining objective: (config, features,
      is_training, use_sentence_head, ...) -> dict with `loss` and the tensors its eval
      metrics read.
    eval_metrics: "module:attribute" of (objective outputs, features, use_sentence_head) ->
      (metric function, its keyword arguments), as TPUEstimator's eval_metrics takes them.
    eval_heads: the heads the learning check judges (EvalHead), in report order.
    logged_losses: the objective's outputs the training log shows (and averages).
    log_line: "module:attribute" of (logged values, total loss) -> the heads' part of a
      training log line; empty: the masked-LM line (mlm_loss, sentence_loss, sbo_loss).
    data_modes: data_gen --mode values whose records the family trains on.
    record_input: "module:attribute" of the family's own record reader (see
      pretrain.models.xlnet.record_input); empty: data_gen's masked-LM records as they are.
    hf_model_type: config -> transformers' model_type the config exports as.
    hf_converter: "module:attribute" of the family's transformers converter (a
      pretrain.interop.hf_converter.HFConverter: its name tables, import and export);
      empty: the family has no transformers export.
    description: one line for --help and error messages.
    sentence_and_span_heads: whether the objective trains the SOP/NSP and SBO heads.
    training_flops: "module:attribute" of its compute per example:
      (config, seq_length, max_predictions, sentence_head=, span_boundary=) -> FLOPs.
    input_layout: where fine-tuning puts the special tokens (an InputLayout).
    pooler_scope: the variable scope a SavedModel's pooled output comes from.
    takes_sentencepiece: whether its vocab may be a sentencepiece model.
    vocab_extension_refusal: why pretrain.checkpoints.vocab_surgery --extend_from_corpus refuses this
      family's checkpoints (empty: it extends them).
    vocab_tables, vocab_biases: its checkpoint's vocab-sized variables (word tables [V, E],
      output biases [V]), which vocab surgery rewrites row by row.
    checkpoint_scope_mappings: (model scope, checkpoint scope, description) of another
      family's checkpoint this one initialises from (pretrain.checkpoints.checkpoint_loading).
    """
    model_type: str
    aliases: Tuple[str, ...]
    config_class: type
    encoder: str
    objective: str
    eval_metrics: str
    hf_model_type: Callable
    description: str
    eval_heads: Tuple[EvalHead, ...] = (MASKED_LM_HEAD, SENTENCE_HEAD)
    logged_losses: Tuple[str, ...] = ("loss", "masked_lm_loss", "sentence_loss",
                                      "span_boundary_loss")
    log_line: str = ""
    data_modes: Tuple[str, ...] = MASKED_LM_DATA_MODES
    record_input: str = ""
    hf_converter: str = ""
    sentence_and_span_heads: bool = True
    training_flops: str = "pretrain.models.flops:masked_lm_training_flops"
    input_layout: InputLayout = BERT_LAYOUT
    pooler_scope: str = "bert/pooler/"
    takes_sentencepiece: bool = False
    vocab_extension_refusal: str = ""
    vocab_tables: Tuple[str, ...] = ("bert/embeddings/word_embeddings",)
    vocab_biases: Tuple[str, ...] = ("cls/predictions/output_bias",
                                     "cls/span_boundary/output_bias")
    checkpoint_scope_mappings: Tuple[Tuple[str, str, str], ...] = ()

    @property
    def encoder_class(self):
        return resolve(self.encoder)

    @property
    def pretraining_losses(self):
        return resolve(self.objective)

    @property
    def eval_metric_inputs(self):
        return resolve(self.eval_metrics)

    @property
    def heads_line(self):
        """The log_line function, or None for the masked-LM line."""
        return resolve(self.log_line) if self.log_line else None

    @property
    def record_reader(self) -> Optional[object]:
        """The family's record reader, or None for masked-LM records."""
        return resolve(self.record_input) if self.record_input else None

    @property
    def converter(self) -> Optional[object]:
        return resolve(self.hf_converter) if self.hf_converter else None

    def training_flops_per_example(self, config, seq_length, max_predictions,
                                   sentence_head=False, span_boundary=False):
        """Forward + backward matmul FLOPs of one pretraining example (pretrain.models.flops)."""
        return resolve(self.training_flops)(config, seq_length, max_predictions,
                                            sentence_head=sentence_head,
                                            span_boundary=span_boundary)


def resolve(path):
    """The attribute a "module:attribute" string names (imported on first use)."""
    module, attribute = path.split(":")
    return getattr(importlib.import_module(module), attribute)
