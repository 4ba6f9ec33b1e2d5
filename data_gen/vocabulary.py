"""The token table of a generation run: --vocab_file or (--mode=xlnet) --spm_model_file.

`load_run_vocabulary` checks it once, before any work, for the local runner and
the Beam pipeline alike, and gives what the sidecars say of it. `xlnet_wordpiece_ids`
gives XLNet's special ids in a WordPiece vocab (workers call it too).
"""
import dataclasses
import os

from common.file_utils import file_sha256, is_remote
from data_gen.tokenization import VocabError, check_special_tokens, load_vocab

XLNET_WORDPIECE_SPECIALS = {"sep": "[SEP]", "cls": "[CLS]", "mask": "[MASK]", "pad": "[PAD]",
                            "unk": "[UNK]"}
SIDECAR_SPECIALS = ("sep", "cls", "eod", "mask", "pad")  # the sidecar's xlnet_special_ids


@dataclasses.dataclass
class RunVocabulary:
    """size: ids in the table; sha256: of its file; sidecar: fields only xlnet sidecars have."""
    size: int
    sha256: str
    sidecar: dict


def xlnet_wordpiece_ids(vocab, eod_token, vocab_file):
    """{sep, cls, eod, mask, pad, unk: id} of a WordPiece vocab; VocabError naming
    --eod_token when it is missing or is another special token."""
    ids = {name: vocab[token] for name, token in XLNET_WORDPIECE_SPECIALS.items()}
    if eod_token not in vocab:
        raise VocabError(f"--eod_token={eod_token}: not in --vocab_file={vocab_file}; pass a "
                         "token the vocab has and the text never produces (e.g. [unused1], "
                         "one of BERT's [unusedN] tokens) or add one to the vocab")
    if eod_token in XLNET_WORDPIECE_SPECIALS.values():
        raise VocabError(f"--eod_token={eod_token}: must differ from "
                         f"{' '.join(XLNET_WORDPIECE_SPECIALS.values())}; pass e.g. [unused1]")
    ids["eod"] = vocab[eod_token]
    return ids


def _absolute(path):
    return path if is_remote(path) else os.path.abspath(path)


def load_run_vocabulary(config, localize=lambda path: path):
    """RunVocabulary of `config`; VocabError (or SpmUnavailable) naming the flag and file.

    localize(path) -> a local copy of a remote file (the Beam pipeline's); the
    sidecar names the path as given.
    """
    if config.mode == "xlnet" and config.spm_model_file:
        from data_gen import spm_tokenization  # pylint: disable=import-outside-toplevel
        local = localize(config.spm_model_file)
        processor = spm_tokenization.load_processor(local)
        ids = spm_tokenization.special_ids(processor, config.spm_model_file)
        sha256 = file_sha256(local)
        sidecar = {"tokenizer": "sentencepiece",
                   "spm_model_file": _absolute(config.spm_model_file),
                   "spm_model_sha256": sha256}
        size = processor.GetPieceSize()
    else:
        local = localize(config.vocab_file)
        vocab = load_vocab(local)
        check_special_tokens(vocab, config.vocab_file)
        sha256, size, sidecar = file_sha256(local), len(vocab), {}
        if config.mode == "xlnet":
            ids = xlnet_wordpiece_ids(vocab, config.eod_token, config.vocab_file)
            sidecar = {"tokenizer": "wordpiece", "eod_token": config.eod_token}
    if config.mode == "xlnet":
        sidecar["reuse_length"] = config.xlnet_reuse_length()
        sidecar["xlnet_special_ids"] = {name: ids[name] for name in SIDECAR_SPECIALS}
    return RunVocabulary(size, sha256, sidecar)
