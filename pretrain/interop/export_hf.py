"""Export a checkpoint of this toolkit as a transformers model directory.

    python -m pretrain.interop.export_hf --init_checkpoint=output/pretrain --output_dir=hf_model

writes config.json, model.safetensors, vocab.txt, tokenizer_config.json and
special_tokens_map.json, so that in PyTorch

    AutoModelForPreTraining.from_pretrained("hf_model")   # or AutoModelForMaskedLM
    AutoTokenizer.from_pretrained("hf_model")
    pipeline("fill-mask", model="hf_model")

work. bert_config.json and vocab.txt are taken from beside the checkpoint
(pretrain.checkpoints.checkpoint_assets; --bert_config_file / --vocab_file are needed
only for checkpoints without them), and so is a fine-tuning output
directory's task.json (its best/ checkpoint is exported).

The architecture follows the checkpoint: classifier/* variables (a sequence
or pair classifier) -> BertForSequenceClassification, token_classifier/* (NER)
-> BertForTokenClassification, with id2label / label2id from task.json's
labels ("0".."N-1" without a task.json, as in the LCQMC data files); else
BertForPreTraining. The Google ALBERT layout exports as Albert* instead; a
brightmart ALBERT as the equivalent BERT. An ELECTRA checkpoint exports as two
models, each a directory with the files above: OUT/discriminator
(ElectraForPreTraining) and OUT/generator (ElectraForMaskedLM, sharing the
discriminator's embedding tables; left out when the checkpoint has no
generator), named as pretrain.models.electra.hf says. An XLNet exports as
XLNetLMHeadModel (XLNetForSequenceClassification / XLNetForTokenClassification
for a fine-tuned one; AutoModelForCausalLM loads it), config.json with ff_activation
"gelu_new" for our tanh GELU, and, with spiece.model beside the checkpoint,
XLNetTokenizer's files (else BertTokenizer's for its vocab.txt; then the pair layout
is BERT's, not XLNet's A <sep> B <sep> <cls>): pretrain.models.xlnet.hf.
Heads or pooler missing from the checkpoint (e.g. no sentence head after
roberta-mode training) are listed and will be initialised randomly by
transformers. Optimizer slots, global_step and other training state are
ignored; any other tensor the config does not explain is an error.

--format=saved_model writes a TF Serving SavedModel instead
(pretrain.interop.export_saved_model). The output directory appears complete or not
at all; a non-empty one needs --overwrite.
"""
import dataclasses
import os

from common import cli_options
from pretrain.checkpoints import checkpoint_assets
from pretrain.interop import export_saved_model, hf_config, hf_files
from pretrain.models import registry
from pretrain.models.config import ConfigError

FORMATS = ("hf", "saved_model")


@dataclasses.dataclass
class ExportOptions(export_saved_model.ExportSavedModelOptions):
    """The SavedModel export's flags (checkpoint, config, vocab, output_dir, overwrite) and
    these."""
    format: str = cli_options.option("hf", "hf (transformers directory) | saved_model "
                                           "(TF Serving).")
    do_lower_case: bool = cli_options.option(
        None, "Recorded in tokenizer_config.json (default: task.json's do_lower_case, "
              "else true).")


def _convert_checkpoint(prefix, config, converter, task=None, task_file=None):
    """(training-state names, the converter's parts: [(subdirectory, state dict, Report,
    transformers config dict, the config exported or None)]).

    TensorFlow is imported here, so bad flags are answered without loading it.
    """
    # pylint: disable=import-outside-toplevel,protected-access
    import tensorflow.compat.v1 as tf
    from pretrain.checkpoints import checkpoint_io, checkpoint_loading
    shapes = dict(tf.train.list_variables(prefix))
    checkpoint_assets.head_of_checkpoint(task, shapes, prefix, task_file)
    state = [name for name in shapes if checkpoint_loading._TRAINING_STATE.search(name)]
    tensors = checkpoint_io.read_checkpoint(prefix, sorted(set(shapes) - set(state)))
    return state, converter.export_parts(tensors, config, (task or {}).get("labels"))


def export_model(init_checkpoint, bert_config_file=None, output_dir=None, vocab_file=None,
                 format="hf", do_lower_case=None, overwrite=False, log_fn=print):
    """Writes the transformers directory (or SavedModel) described above; returns output_dir."""
    if format not in FORMATS:
        raise cli_options.UserError("--format=%s: use one of %s" % (format, ", ".join(FORMATS)))
    if format == "saved_model":
        return export_saved_model.export_saved_model(
            init_checkpoint=init_checkpoint, bert_config_file=bert_config_file,
            output_dir=output_dir, overwrite=overwrite, vocab_file=vocab_file)
    if not output_dir:
        raise cli_options.UserError("--output_dir is required")
    assets = checkpoint_assets.resolve(init_checkpoint, vocab_file, bert_config_file)
    if not assets.config_file:
        raise checkpoint_assets.missing_file_error("model config", checkpoint_assets.CONFIG_NAME,
                                                   "--bert_config_file", init_checkpoint,
                                                   assets.checkpoint)
    try:
        config = registry.read_config(assets.config_file)
    except ConfigError as err:
        raise cli_options.UserError("--bert_config_file: %s" % err) from None
    hf_config.exported_model_type(config)  # refuses pre-LN before reading weights
    converter = registry.family_of(config).converter
    if not assets.vocab_file and converter.needs_vocab_file(assets):
        raise checkpoint_assets.missing_file_error("vocab", checkpoint_assets.VOCAB_NAME,
                                                   "--vocab_file", init_checkpoint,
                                                   assets.checkpoint)
    output_dir = hf_files.check_output_dir(output_dir, overwrite)
    prefix = assets.checkpoint
    training_state, parts = _convert_checkpoint(prefix, config, converter, assets.task,
                                                assets.task_file)
    lower_case_flag = do_lower_case
    if do_lower_case is None:
        do_lower_case = (assets.task or {}).get("do_lower_case", True)
    tokenizer_lines = []
    with hf_files.output_directory(output_dir, overwrite) as temporary:
        for subdirectory, state_dict, _, hf, _ in parts:
            directory = os.path.join(temporary, subdirectory)
            os.makedirs(directory, exist_ok=True)
            line = converter.write_tokenizer(directory, assets, config, hf, do_lower_case,
                                             lower_case_flag)
            tokenizer_lines += [line] if line else []
            hf_files.write_json(os.path.join(directory, hf_files.CONFIG), hf)
            hf_files.write_safetensors(state_dict, os.path.join(directory, hf_files.SAFETENSORS))
    if log_fn is not None:
        _log(log_fn, prefix, output_dir, parts, training_state, assets, config, converter)
        for line in tokenizer_lines:
            log_fn(line)
    return output_dir


def _log(log_fn, prefix, output_dir, parts, training_state, assets, config, converter):
    from pretrain.interop.hf_weights import format_report  # pylint: disable=import-outside-toplevel
    for subdirectory, _, report, hf, _ in parts:
        log_fn(format_report(report, "Exported %s -> %s (%s)" % (
            prefix, os.path.join(output_dir, subdirectory) if subdirectory else output_dir,
            hf["architectures"][0])))
    hf = parts[0][3]
    log_fn("ignored %d optimizer/step tensors; config.json %s; config %s (%s), "
           "vocab %s (%s)%s" % (
               len(training_state), converter.exported_activation(hf),
               assets.config_file, assets.config_source,
               assets.vocab_file or assets.spm_model_file, assets.vocab_source,
               "; labels %s" % list(hf["id2label"].values()) if "id2label" in hf else ""))
    info, caveats = converter.export_notes(config, parts, output_dir)
    for line in info:
        log_fn(line)
    for caveat in caveats:
        log_fn("WARNING: " + caveat)


def _run(options):
    export_model(**dataclasses.asdict(options))


def main(argv=None):
    cli_options.run_main(ExportOptions, _run, argv)


if __name__ == "__main__":
    main()
