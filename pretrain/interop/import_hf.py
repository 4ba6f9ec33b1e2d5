"""Import a transformers BERT, ALBERT, ELECTRA or XLNet model as a checkpoint of this toolkit.

    python -m pretrain.interop.import_hf --model_dir=chinese-roberta-wwm-ext --output_dir=hfl_roberta

reads the transformers model directory (config.json; model.safetensors,
sharded safetensors, or pytorch_model.bin when torch is installed; vocab.txt
or tokenizer.json) and writes

    OUT/model.ckpt.{index,data-00000-of-00001}  Google variable names
    OUT/checkpoint                               so OUT works as a directory too
    OUT/bert_config.json
    OUT/vocab.txt
    OUT/task.json                                *ForSequenceClassification /
                                                 *ForTokenClassification only: the labels
                                                 (id2label) and the task, as fine-tuning
                                                 writes it (pretrain.checkpoints.checkpoint_assets)

`OUT/model.ckpt` (or OUT) is a valid `--init_checkpoint` for
`pretrain.run_pretraining`, the exports and fine-tuning, which read the
bert_config.json and vocab.txt beside it. A classifier's head is imported
under Google-style names: classifier/* (sequence) or token_classifier/*
(token; pretrain.models.task_heads). A printed table lists every tensor converted
(transformers key -> our name, shape) and what was not: buffers, tied
decoder copies, unknown tensors, and a missing pooler / MLM head / sentence
head, which is not written and so starts from a fresh initialisation.

An ELECTRA is the discriminator (ElectraForPreTraining) as --model_dir and its generator
(ElectraForMaskedLM) as --generator_model_dir; bert_config.json then holds the
ElectraConfig, the generator sized from its config.json (pretrain.models.electra.hf).
Without --generator_model_dir the generator is not written: one of the configured size
(bert_config.json's generator_hidden_size, generator_layers) starts fresh, and the
printed table says so.

An XLNet (XLNetLMHeadModel, XLNetModel, XLNetForSequenceClassification,
XLNetForTokenClassification) is written under zihangdai/xlnet's names, bert_config.json
holding the XLNetConfig (pretrain.models.xlnet.hf: what is refused, and transformers'
erf "gelu" imported as our tanh "gelu" with a warning), and its vocab as vocab.txt when the
directory has one, else its sentencepiece model copied as OUT/spiece.model.

OUT appears complete or not at all; a non-empty OUT needs --overwrite.
"""
import dataclasses
import os
import shutil

from common import cli_options
from pretrain.checkpoints import checkpoint_assets
from pretrain.interop import hf_config, hf_converter, hf_files

CHECKPOINT_NAME = "model.ckpt"
HEADS = {"ForSequenceClassification": "classifier", "ForTokenClassification": "token_classifier"}


@dataclasses.dataclass
class ImportReport:
    """What `import_model` wrote and from where."""
    output_dir: str
    checkpoint: str          # OUT/model.ckpt
    config: object           # our config (the family's config class)
    weights: str             # which weights file(s) were read
    vocab_source: str        # vocab.txt, spiece.model or tokenizer.json path
    do_lower_case: object    # from tokenizer_config.json, or None
    conversion: object       # hf_weights.Report
    task: dict = None        # task.json written for a classifier, else None


def _converter_option_help(option):
    """--help of an option one family's converter reads, named from the registry."""
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    for name in registry.model_types():
        converter = registry.family(name).converter
        if converter is not None and option in converter.import_options:
            return "%s only: %s." % (name, converter.import_options[option])
    return "(no registered family reads it)"


@dataclasses.dataclass
class ImportOptions:
    model_dir: str = cli_options.required("transformers model directory (config.json + weights).")
    output_dir: str = cli_options.required("Directory to write model.ckpt, bert_config.json, "
                                           "vocab.txt to.")
    overwrite: bool = cli_options.option(False, "Replace a non-empty output_dir.")
    generator_model_dir: str = cli_options.option(None,
                                                  _converter_option_help("generator_model_dir"))


def import_model(model_dir, output_dir, overwrite=False, log_fn=print,
                 generator_model_dir=None):
    """Converts `model_dir` (and the options its family's converter reads, e.g. an
    ELECTRA's `generator_model_dir`) into `output_dir`; returns an ImportReport.

    Raises cli_options.UserError for input it cannot convert (nothing is written then).
    """
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    model_dir = os.path.expanduser(str(model_dir))
    output_dir = hf_files.check_output_dir(output_dir, overwrite)
    raw_config = hf_files.read_config(model_dir)
    config_path = os.path.join(model_dir, hf_files.CONFIG)
    model_type = hf_config.hf_model_type(raw_config, config_path)
    converter = hf_converter.converter_for_hf_type(
        model_type, [registry.family(name) for name in registry.model_types()])
    options = {"generator_model_dir": generator_model_dir}
    for option, value in options.items():
        if value and option not in converter.import_options:
            raise cli_options.UserError("--%s is not read for a %s model (%s); %s" % (
                option, model_type, config_path, _converter_option_help(option)))
    head = classifier_head(raw_config.get("architectures"))
    config, vocab_size, notes = converter.import_config(raw_config, config_path, model_type,
                                                        head)
    hf_files.find_weights(model_dir)  # fail fast, before reading the vocab
    vocab, vocab_source = hf_files.read_vocab(model_dir, spm=converter.sentencepiece_vocab)
    if len(vocab) > vocab_size:
        raise cli_options.UserError(
            "%s has %d tokens but config.json has vocab_size=%d"
            % (vocab_source, len(vocab), vocab_size))
    do_lower_case = hf_files.read_do_lower_case(model_dir)
    state_dict, weights = hf_files.read_weights(model_dir)
    # TensorFlow loads only now, so bad input is answered in a fraction of a second.
    from pretrain.checkpoints import checkpoint_io  # pylint: disable=import-outside-toplevel
    from pretrain.interop import hf_weights  # pylint: disable=import-outside-toplevel
    config, tensors, conversion, weights, head = converter.import_weights(
        model_dir, raw_config, config, state_dict, weights, model_type, head, options)
    notes += converter.import_caveats(config, head, options)
    task = None
    if head and "%s/output_weights" % head in tensors:
        task = task_from_hf(raw_config, head, tensors["%s/output_weights" % head].shape[0],
                            config, do_lower_case)
    with hf_files.output_directory(output_dir, overwrite) as temporary:
        checkpoint_io.write_checkpoint(tensors, os.path.join(temporary, CHECKPOINT_NAME),
                                       write_state=True)
        with open(os.path.join(temporary, checkpoint_assets.CONFIG_NAME), "w",
                  encoding="utf-8") as writer:
            writer.write(config.to_json_string())
        vocab_path = os.path.join(temporary, checkpoint_assets.VOCAB_NAME)
        if os.path.basename(vocab_source) == hf_files.VOCAB:
            shutil.copyfile(vocab_source, vocab_path)
        elif os.path.basename(vocab_source) == hf_files.SPIECE:
            shutil.copyfile(vocab_source, os.path.join(temporary, checkpoint_assets.SPM_NAME))
        else:
            hf_files.write_vocab(vocab, vocab_path)
        checkpoint_assets.write_assets(temporary, task=task)
    report = ImportReport(output_dir, os.path.join(output_dir, CHECKPOINT_NAME), config,
                          weights, vocab_source, do_lower_case, conversion, task)
    if log_fn is not None:
        log_fn(hf_weights.format_report(conversion, "Imported %s/%s (%s) -> %s" % (
            model_dir, weights, model_type, report.checkpoint)))
        log_fn("wrote %s, bert_config.json (%s), %s (%d tokens from %s)%s" % (
            report.checkpoint, converter.activation(config), os.path.basename(vocab_path)
            if os.path.basename(vocab_source) != hf_files.SPIECE
            else checkpoint_assets.SPM_NAME, len(vocab), vocab_source,
            "" if report.do_lower_case is None
            else "; the tokenizer has do_lower_case=%s" % report.do_lower_case))
        if task:
            log_fn("wrote task.json: task %s, %d labels %s" % (
                task["task"], len(task["labels"]), task["labels"][:8]))
        for note in notes:
            log_fn("WARNING: " + note)
    return report


def classifier_head(architectures):
    """"classifier", "token_classifier" or None for a config's architectures."""
    for name in architectures or []:
        for suffix, head in HEADS.items():
            if str(name).endswith(suffix):
                return head
    return None


def infer_tag_scheme(tags):
    """"BIO", "BIOES" or "BMES" when every tag but "O" is PREFIX-TYPE of that scheme, else None."""
    prefixes = set()
    for tag in tags:
        if tag != "O":
            if "-" not in tag:
                return None
            prefixes.add(tag.split("-", 1)[0])
    for scheme in ("BIO", "BIOES", "BMES"):
        if prefixes and prefixes <= set(scheme) - {"O"}:
            return scheme
    return None


def task_from_hf(raw_config, head, num_labels, config, do_lower_case):
    """task.json for an imported classifier: labels from id2label (else "0".."N-1")."""
    labels = hf_config.labels_from_hf(raw_config)
    if labels is None or len(labels) != num_labels or len(set(labels)) != num_labels:
        labels = [str(index) for index in range(num_labels)]
    token = head == "token_classifier"
    return {"format_version": checkpoint_assets.TASK_FORMAT_VERSION,
            "task": "ner" if token else "classification", "labels": labels,
            "tag_scheme": infer_tag_scheme(labels) if token else None,
            "max_seq_length": getattr(config, "max_position_embeddings", 512),
            "do_lower_case": True if do_lower_case is None else bool(do_lower_case)}


def _run(options):
    import_model(options.model_dir, options.output_dir, options.overwrite,
                 generator_model_dir=options.generator_model_dir)


def main(argv=None):
    cli_options.run_main(ImportOptions, _run, argv)


if __name__ == "__main__":
    main()
