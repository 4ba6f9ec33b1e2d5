"""Chinese word segmentation for whole-word masking (jieba).

Each sentence is segmented once, when its document is tokenized; the dupe
passes reuse the result. Words are reported by character position, so words
of any length group correctly (no 3-character limit, no bag of words).

--segmenter=jieba uses jieba's dictionary and HMM through data_gen.text.jieba_fast
(same words as jieba.lcut; about 25x less CPU with its C module, 2x without);
--segmenter=jieba_reference calls jieba.lcut itself; --segmenter=none groups nothing (per character).
"""
import logging
import os
import sys

from data_gen.text.jieba_dictionary_cache import initialize_default_tokenizer

SEGMENTERS = ("jieba", "jieba_reference", "none")
_jieba_tokenizers = {}  # user dict path -> initialized jieba.Tokenizer (reused in-process)


class SegmenterError(ValueError):
    """The segmenter could not be set up (unknown name, missing user dict)."""


def _import_jieba():
    """jieba, imported lazily (~90 MB once its dictionary is loaded) and without
    pkg_resources, which jieba only uses to open its own files and which takes
    0.12 s to import, a tenth of a small run's start-up; without it jieba opens
    them by path."""
    if "jieba" in sys.modules:
        return sys.modules["jieba"]
    hide = "pkg_resources" not in sys.modules
    if hide:
        sys.modules["pkg_resources"] = None  # `import pkg_resources` raises ImportError
    try:
        import jieba  # pylint: disable=import-outside-toplevel
    finally:
        if hide and sys.modules.get("pkg_resources", False) is None:
            del sys.modules["pkg_resources"]
    return jieba


class JiebaSegmenter:
    """Wraps a private jieba.Tokenizer (optionally with a user dictionary)."""

    def __init__(self, user_dict=None, use_hmm=True, fast=True, use_native=None):
        jieba = _import_jieba()
        jieba.setLogLevel(logging.WARNING)
        self.use_hmm = use_hmm
        if user_dict and not os.path.isfile(user_dict):
            raise SegmenterError(
                f"--jieba_user_dict={user_dict}: file not found; pass a jieba user "
                "dictionary (one 'word [freq] [tag]' per line) or leave the flag empty.")
        key = os.path.abspath(user_dict) if user_dict else None
        self._tokenizer = _jieba_tokenizers.get(key)
        if self._tokenizer is None:
            self._tokenizer = initialize_default_tokenizer(jieba)
            if user_dict:
                self._tokenizer.load_userdict(user_dict)
            _jieba_tokenizers[key] = self._tokenizer
        self._fast = None
        if fast:
            from data_gen.text.jieba_fast import FastJiebaCutter
            self._fast = FastJiebaCutter(self._tokenizer, use_hmm, use_native=use_native)

    def words(self, text):
        """Returns jieba's words of `text`; their concatenation equals `text`."""
        if self._fast is not None:
            return self._fast.cut(text)
        return self._tokenizer.lcut(text, HMM=self.use_hmm)

    def word_ids_by_char(self, text):
        """Returns a list w with w[i] = index of the word containing text[i]."""
        word_ids = []
        for word_index, word in enumerate(self.words(text)):
            word_ids.extend([word_index] * len(word))
        if len(word_ids) != len(text):
            raise AssertionError(
                f"segmenter returned words covering {len(word_ids)} of {len(text)} "
                f"characters for {text[:80]!r}")
        return word_ids


class NoSegmenter:
    """Every character is its own word: Chinese masking is per character."""

    def words(self, text):
        return list(text)

    def word_ids_by_char(self, text):
        return list(range(len(text)))


def make_segmenter(name, user_dict=None, use_hmm=True, use_native=None):
    """Builds the segmenter selected by --segmenter (use_native: see data_gen.native.resolve)."""
    if name in ("jieba", "jieba_reference"):
        return JiebaSegmenter(user_dict=user_dict, use_hmm=use_hmm, fast=name == "jieba",
                              use_native=use_native)
    if name == "none":
        return NoSegmenter()
    raise SegmenterError(f"--segmenter={name!r}: unknown; choose one of {', '.join(SEGMENTERS)}")
