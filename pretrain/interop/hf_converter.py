"""How a family's checkpoints go to and from transformers: `HFConverter`, whose methods
import_hf and export_hf call instead of naming a family.

This base class is BERT's and ALBERT's (their name tables in pretrain.interop.hf_weights,
their config fields in pretrain.interop.hf_config; `BERT`, which their ModelFamily entries
name); a family that differs subclasses it in its own folder
(`pretrain/models/<family>/hf.py`) and names the instance in its ModelFamily.hf_converter.
"""
from common.cli_options import UserError
from pretrain.interop import hf_config, hf_files


class HFConverter:
    """BERT/ALBERT; every method is one step of import_hf or export_hf."""
    # transformers' model_type values this converter imports, and the architectures'
    # prefixes that name them in a config without model_type
    hf_model_types = ("bert", "albert")
    architecture_prefixes = ("Bert", "Albert")
    # whether the model directory's vocab may be a sentencepiece model (spiece.model)
    sentencepiece_vocab = False
    # import_hf options only this converter reads: {option: what it is}
    import_options = {}
    # the activation field of our config and of transformers' (named in the logs)
    activation_field = "hidden_act"

    # ---- import ------------------------------------------------------------------------
    def import_config(self, raw_config, source, hf_model_type, head):
        """(our config or None when it waits for the weights, its vocab size, notes)."""
        del hf_model_type, head
        config = hf_config.bert_config_from_hf(raw_config, source)
        return config, config.vocab_size, []

    def import_weights(self, model_dir, raw_config, config, state_dict, weights,
                       hf_model_type, head, options):
        """(config, our tensors, hf_weights.Report, the weights read, the head kept)."""
        del model_dir, raw_config, options
        from pretrain.interop import hf_weights  # pylint: disable=import-outside-toplevel
        tensors, report = hf_weights.hf_to_google(state_dict, config, hf_model_type, head)
        return config, tensors, report, weights, head

    def import_caveats(self, config, head, options):
        """Warnings about what the imported model computes differently."""
        del config, head, options
        return []

    # ---- export ------------------------------------------------------------------------
    def check_exportable(self, config):
        """UserError when transformers cannot hold `config` (before reading weights)."""
        hf_config.check_bert_exportable(config)

    def export_parts(self, tensors, config, labels):
        """[(subdirectory or "", state dict, Report, transformers config dict, the config
        exported or None)] of a checkpoint's model tensors."""
        from pretrain.interop import hf_weights  # pylint: disable=import-outside-toplevel
        converted = hf_weights.google_to_hf(tensors, config)
        return [("", converted.state_dict, converted.report, hf_config.hf_config_from_bert(
            converted.config, converted.task, converted.num_labels, labels), converted.config)]

    def needs_vocab_file(self, assets):
        """Whether the export needs a vocab.txt (else a sentencepiece model will do)."""
        del assets
        return True

    def write_tokenizer(self, directory, assets, config, hf, do_lower_case, lower_case_flag):
        """Writes the tokenizer files and sets hf's special token ids; returns a line for the
        log, or None."""
        del lower_case_flag
        vocab = hf_files.write_tokenizer_files(
            directory, assets.vocab_file, do_lower_case,
            assets.tokenizer_length_limit(config.max_position_embeddings))
        if len(vocab) > config.vocab_size:
            raise UserError("vocab %s has %d tokens but the config %s has vocab_size=%d"
                            % (assets.vocab_file, len(vocab), assets.config_file,
                               config.vocab_size))
        hf["pad_token_id"] = vocab["[PAD]"]
        if hf["model_type"] == "albert":  # AlbertConfig's defaults (2, 3) assume its vocab
            hf.update(bos_token_id=vocab["[CLS]"], eos_token_id=vocab["[SEP]"])
        return None

    def export_notes(self, config, parts, output_dir):
        """(information lines, warnings) about the exported directory."""
        del output_dir
        return [], hf_config.transformers_caveats(parts[0][4])

    def activation(self, config):
        """Our config's activation as the logs name it."""
        return "%s %s" % (self.activation_field, getattr(config, self.activation_field))

    def exported_activation(self, hf):
        """The exported config.json's activation as the logs name it."""
        return "%s %s" % (self.activation_field, hf[self.activation_field])


BERT = HFConverter()


def converter_for_hf_type(hf_model_type, families):
    """The converter (ModelFamily.converter) of `families` that imports transformers'
    `hf_model_type`, else None."""
    for family in families:
        if family.converter is not None and hf_model_type in family.converter.hf_model_types:
            return family.converter
    return None
