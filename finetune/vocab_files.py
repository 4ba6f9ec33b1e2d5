"""Which vocab a fine-tuning run tokenises with: a WordPiece vocab.txt or, for an XLNet,
a sentencepiece model (spiece.model), and the tokenizer over it.

Checkpoints carry one or the other beside them (pretrain.checkpoints.checkpoint_assets):
run_pretraining on data made with --spm_model_file and import_hf of a transformers XLNet
with XLNetTokenizer leave a spiece.model, everything else a vocab.txt. The flags
--vocab_file and --spm_model_file name one explicitly (not both). `choose_vocab` decides,
`make_tokenizer` builds data_gen.text.tokenization.FullTokenizer or
data_gen.text.spm_tokenization.SpmFullTokenizer (the same interface for the task layer; the
sentencepiece package is the optional spm extra). Used by finetune.run_finetune
(resolve_model, which finetune.compare also calls for each starting point).
"""
import dataclasses

from common.cli_options import UserError
from common.file_utils import input_exists
from data_gen.text import spm_tokenization
from data_gen.text.tokenization import FullTokenizer, VocabError
from pretrain.checkpoints import checkpoint_assets
from pretrain.models import registry


class VocabChoiceError(UserError):
    """No usable vocab, or flags that contradict the checkpoint's."""


def uses_spm(config):
    """Whether the model family fine-tunes with a sentencepiece model
    (ModelFamily.takes_sentencepiece)."""
    return registry.family_of(config).takes_sentencepiece


def sentencepiece_families():
    """"a or b": the model types that take a sentencepiece model, for messages."""
    return " or ".join(name for name in registry.model_types()
                       if registry.family(name).takes_sentencepiece)


def choose_vocab(config, assets, vocab_flag=None, spm_flag=None, init_checkpoint=None):
    """`assets` (checkpoint_assets.resolve of the checkpoint alone) with the vocab the run
    tokenises with: vocab_file (WordPiece) or spm_model_file (sentencepiece), the other None.

    A flag names it; it must be the checkpoint's kind of vocab (--vocab_file for a
    checkpoint with only a spiece.model is refused, and the reverse) and a given
    sentencepiece model must have the bytes of the checkpoint's. Without flags: the
    checkpoint's spiece.model for an XLNet (also when a vocab.txt is beside it too, as
    export_hf chooses), else its vocab.txt. Only an XLNet config takes a sentencepiece
    model (BERT, ALBERT and ELECTRA are pretrained here on WordPiece vocabs only)."""
    own_vocab = assets.vocab_file if assets.vocab_source == "checkpoint" else None
    own_spm = assets.spm_model_file
    beside = f"beside --init_checkpoint={init_checkpoint}"
    if spm_flag:
        if not input_exists(spm_flag):
            raise VocabChoiceError(f"--spm_model_file={spm_flag} does not exist")
        if own_vocab and not own_spm:
            raise VocabChoiceError(
                f"--spm_model_file={spm_flag}: checkpoint {assets.checkpoint} was trained with "
                f"the WordPiece vocab {own_vocab} (no {checkpoint_assets.SPM_NAME} {beside}); "
                "drop --spm_model_file to fine-tune with that vocab")
        if own_spm and (checkpoint_assets.vocab_sha256(spm_flag)
                        != checkpoint_assets.vocab_sha256(own_spm)):
            raise VocabChoiceError(
                f"--spm_model_file={spm_flag} is not the sentencepiece model checkpoint "
                f"{assets.checkpoint} was trained with: its bytes differ from {own_spm}. Drop "
                "--spm_model_file to use the checkpoint's, or pass the one it was trained with")
        spm, source = spm_flag, "flag"
    elif vocab_flag:
        if own_spm and not own_vocab:
            raise VocabChoiceError(
                f"--vocab_file={vocab_flag}: checkpoint {assets.checkpoint} was trained with the "
                f"sentencepiece model {own_spm} (its {checkpoint_assets.SPM_NAME}; no "
                f"{checkpoint_assets.VOCAB_NAME} {beside}); drop --vocab_file to fine-tune "
                "with that model")
        spm, source = None, "flag"
    else:
        spm = own_spm if own_spm and (uses_spm(config) or not own_vocab) else None
        source = "checkpoint"
    if spm and not uses_spm(config):
        raise VocabChoiceError(
            f"{spm} is a sentencepiece model, but {assets.config_file} is a "
            f"{config.model_type} config: only model_type {sentencepiece_families()} fine-tunes "
            "with a sentencepiece model here (the others take a WordPiece vocab.txt): pass "
            "--vocab_file, the vocab the model was pretrained with, or a --bert_config_file of "
            f"model_type {sentencepiece_families()}")
    if spm:
        return dataclasses.replace(assets, vocab_file=None, spm_model_file=spm,
                                   vocab_source=source)
    vocab = vocab_flag or own_vocab
    if not vocab:
        raise VocabChoiceError(
            "no vocab: pass --vocab_file, the vocab the model was pretrained with (or, for "
            f"model_type {sentencepiece_families()}, its sentencepiece model: "
            "--spm_model_file), or start from a checkpoint with a "
            f"{checkpoint_assets.VOCAB_NAME} or {checkpoint_assets.SPM_NAME} beside it")
    return dataclasses.replace(assets, vocab_file=vocab, spm_model_file=None,
                               vocab_source=source)


def make_tokenizer(assets, do_lower_case):
    """FullTokenizer of assets.vocab_file, or SpmFullTokenizer of assets.spm_model_file;
    a missing sentencepiece package or an unusable vocab stops with one line."""
    if not assets.spm_model_file:
        try:
            return FullTokenizer(assets.vocab_file, do_lower_case=do_lower_case)
        except VocabError as error:
            message = str(error)
            raise VocabChoiceError(message if assets.vocab_file in message
                                   else f"vocab {assets.vocab_file}: {message}") from None
    try:
        return spm_tokenization.SpmFullTokenizer(assets.spm_model_file, do_lower_case)
    except spm_tokenization.SpmUnavailable:
        raise VocabChoiceError(
            f"{assets.spm_model_file} is a sentencepiece model (the model's vocab), which needs "
            f"the sentencepiece package: {spm_tokenization.INSTALL_HINT}") from None
    except VocabError as error:
        raise VocabChoiceError(str(error)) from None
