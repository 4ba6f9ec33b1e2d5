"""The token table of a generation run: --vocab_file (WordPiece), checked once before any work.

`load_wordpiece` reads and checks it for the local runner and the Beam pipeline alike
and gives what the sidecars say of it. A data mode may read another table (e.g. a
sentencepiece model): data_gen.modes, DataMode.load_vocabulary.
"""
import dataclasses
import os

from common.file_utils import file_sha256, is_remote
from data_gen.text.tokenization import check_special_tokens, load_vocab


@dataclasses.dataclass
class RunVocabulary:
    """size: ids in the table; sha256: of its file; sidecar: the mode's own sidecar fields."""
    size: int
    sha256: str
    sidecar: dict


def absolute(path):
    """`path` made absolute, unless remote (gs://)."""
    return path if is_remote(path) else os.path.abspath(path)


def load_wordpiece(config, localize=lambda path: path):
    """(vocab dict, RunVocabulary) of --vocab_file; VocabError naming the flag and file.

    localize(path) -> a local copy of a remote file (the Beam pipeline's); the
    sidecar names the path as given.
    """
    local = localize(config.vocab_file)
    vocab = load_vocab(local)
    check_special_tokens(vocab, config.vocab_file)
    return vocab, RunVocabulary(len(vocab), file_sha256(local), {})
