"""The token table of an XLNet run: --vocab_file (WordPiece, with --eod_token) or
--spm_model_file, and what its sidecars say of it (special ids, reuse length).
`xlnet_wordpiece_ids` gives XLNet's special ids in a WordPiece vocab (workers call it too).
"""
from common.file_utils import file_sha256
from data_gen.text.tokenization import VocabError
from data_gen.text.vocabulary import RunVocabulary, absolute, load_wordpiece

XLNET_WORDPIECE_SPECIALS = {"sep": "[SEP]", "cls": "[CLS]", "mask": "[MASK]", "pad": "[PAD]",
                            "unk": "[UNK]"}
SIDECAR_SPECIALS = ("sep", "cls", "eod", "mask", "pad")  # the sidecar's xlnet_special_ids


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


def load_vocabulary(config, localize=lambda path: path):
    """RunVocabulary of an XLNet run; VocabError (or SpmUnavailable) naming the flag and
    file. localize: as text.vocabulary.load_wordpiece's."""
    if config.spm_model_file:
        from data_gen.text import spm_tokenization  # pylint: disable=import-outside-toplevel
        local = localize(config.spm_model_file)
        processor = spm_tokenization.load_processor(local)
        ids = spm_tokenization.special_ids(processor, config.spm_model_file)
        sha256 = file_sha256(local)
        sidecar = {"tokenizer": "sentencepiece",
                   "spm_model_file": absolute(config.spm_model_file),
                   "spm_model_sha256": sha256}
        size = processor.GetPieceSize()
    else:
        vocab, wordpiece = load_wordpiece(config, localize)
        ids = xlnet_wordpiece_ids(vocab, config.eod_token, config.vocab_file)
        sha256, size = wordpiece.sha256, wordpiece.size
        sidecar = {"tokenizer": "wordpiece", "eod_token": config.eod_token}
    sidecar["reuse_length"] = config.xlnet_reuse_length()
    sidecar["xlnet_special_ids"] = {name: ids[name] for name in SIDECAR_SPECIALS}
    return RunVocabulary(size, sha256, sidecar)
