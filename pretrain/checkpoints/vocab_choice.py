"""Which vocab a run uses, for pretraining and fine-tuning alike: the one module that
decides it, beside the files a checkpoint carries (pretrain.checkpoints.checkpoint_assets).

A vocab is a WordPiece vocab.txt or, for an XLNet, a sentencepiece model (spiece.model):
run_pretraining on data made with --spm_model_file and import_hf of a transformers XLNet
with XLNetTokenizer leave a spiece.model, everything else a vocab.txt.

- `pretraining_vocab`: the vocab run_pretraining copies beside its checkpoints: --vocab_file,
  the --init_checkpoint's, or the one the data's sidecars name; each must be the data's
  (by sha256, or token for token), and a resumed run's own.
- `finetuning_vocab`: the vocab a fine-tuning run tokenises with: --vocab_file or
  --spm_model_file (not both), else the checkpoint's; a flag must be the checkpoint's kind
  and, for a sentencepiece model, its bytes.
"""
import dataclasses
import os

import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from common.file_utils import input_exists
from data_gen.records import metadata
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


def finetuning_vocab(config, assets, vocab_flag=None, spm_flag=None, init_checkpoint=None):
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


def _data_vocab(sidecars):
    """(vocab_sha256, vocab_file, sidecar path) the data's sidecars name, or None when none
    does; UserError when two files were made with different vocabs."""
    found = None
    for path, meta in sidecars:
        if not meta or not meta.get("vocab_sha256"):
            continue
        entry = (meta["vocab_sha256"], meta.get("vocab_file"), metadata.metadata_path(path))
        if found is None:
            found = entry
        elif entry[0] != found[0]:
            raise UserError(f"the input data was made with two vocabs: {found[2]} names "
                            f"{found[1]} (vocab_sha256 {found[0][:12]}...), {entry[2]} names "
                            f"{entry[1]} ({entry[0][:12]}...); train on data of one vocab")
    return found


def _is_data_vocab(path, data, by_bytes=False):
    """True when vocab `path` is the data's: its sha256, or (unless `by_bytes`, for a
    sentencepiece model) the tokens of the data's vocab_file when that file is here
    unchanged."""
    sha256, data_file, _ = data
    if checkpoint_assets.vocab_sha256(path) == sha256:
        return True
    return not by_bytes and bool(data_file) and input_exists(data_file) and \
        checkpoint_assets.vocab_sha256(data_file) == sha256 and \
        checkpoint_assets.same_vocab(path, data_file)[0]


def vocab_asset_name(sidecars):
    """spiece.model for data made with --spm_model_file (XLNet), else vocab.txt."""
    spm = any(meta and meta.get("tokenizer") == "sentencepiece" for _, meta in sidecars)
    return checkpoint_assets.SPM_NAME if spm else checkpoint_assets.VOCAB_NAME


def pretraining_vocab(opts, assets, sidecars):
    """(vocab file to copy to --output_dir or None, why there is none) of run_pretraining's
    options `opts` (vocab_file, init_checkpoint, output_dir); refuses a
    --vocab_file, --init_checkpoint vocab or resumed run that is not the data's vocab.
    A sentencepiece model (XLNet data made with --spm_model_file) is compared by bytes."""
    data = _data_vocab(sidecars)
    asset_name = vocab_asset_name(sidecars)
    own = assets.vocab_file if assets.vocab_source == "checkpoint" else None
    if asset_name == checkpoint_assets.SPM_NAME:
        own = getattr(assets, "spm_model_file", None)
    if data:
        described = f"the vocab the data was made with ({data[2]} names {data[1]})"
        spm = asset_name == checkpoint_assets.SPM_NAME
        if opts.vocab_file and not _is_data_vocab(opts.vocab_file, data, spm):
            raise UserError(f"--vocab_file={opts.vocab_file} is not {described}: their sha256 "
                            "differ; pass the data's vocab or drop --vocab_file")
        if own and not _is_data_vocab(own, data, spm):
            raise UserError(f"--init_checkpoint={opts.init_checkpoint} was trained with {own}, "
                            f"which is not {described}; start from a checkpoint of that vocab "
                            f"or make the data with --vocab_file={own}")
    vocab, reason = opts.vocab_file or own, None
    if not vocab and data:
        sha256, data_file, sidecar = data
        if data_file and input_exists(data_file) and \
                checkpoint_assets.vocab_sha256(data_file) == sha256:
            vocab = data_file
        else:
            reason = (f"{sidecar} names vocab {data_file}, which "
                      + ("is not here" if not data_file or not input_exists(data_file) else
                         "has changed since (its sha256 is not the sidecar's vocab_sha256)")
                      + "; pass --vocab_file")
    elif not vocab:
        reason = ("no --vocab_file, and the data's sidecars name no vocab; pass --vocab_file "
                  "so that later stages find it beside the checkpoints")
    previous = os.path.join(opts.output_dir, asset_name)
    if vocab and input_exists(previous) and tf.train.latest_checkpoint(opts.output_dir):
        if asset_name == checkpoint_assets.SPM_NAME:
            same = checkpoint_assets.vocab_sha256(vocab) == checkpoint_assets.vocab_sha256(
                previous)
            where = "in its bytes"
        else:
            same, line = checkpoint_assets.same_vocab(vocab, previous)
            where = f"at line {line}"
        if not same:
            raise UserError(f"--output_dir={opts.output_dir} holds checkpoints trained with "
                            f"{previous}, which differs from {vocab} {where}: resuming "
                            "would go on with other token ids; use another --output_dir")
    return vocab, reason
