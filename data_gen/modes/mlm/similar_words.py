"""The similar-words file of MacBERT masking: its format, written and read in one place.

Format (UTF-8 text, "\\n" line ends; a trailing "\\r" is tolerated):

    # comment lines and blank lines are skipped
    word<TAB>candidate1<TAB>candidate2 ...

one line per word, its candidates most similar first. A word is not empty,
holds no tab, CR or LF, and does not start with "#" (that line would be a
comment); the same holds for a candidate, except that it may start with "#".

`write_similar_words` writes such a file atomically (common.file_utils:
a hidden temporary name beside the target, renamed when complete);
`load_similar_words` turns it into token-id tuples for the masker.
`python -m data_gen.tools.build_similar_words` builds it from word vectors.
"""
import collections
import marshal
import os
import tempfile
import zlib

from common.cli_options import UserError
from common.file_utils import atomic_output, write_text_atomically

COMMENT = "#"
SEPARATOR = "\t"
_FORBIDDEN = ("\t", "\n", "\r")
_FIX = ("each line must be `word<TAB>candidate<TAB>...` in UTF-8; fix the line or rebuild "
        "the file with python -m data_gen.tools.build_similar_words")

# Keys of the counts load_similar_words returns, in the order they are reported.
LOAD_COUNT_KEYS = (
    "lines", "skipped_lines", "words_read", "words_kept", "words_dropped_untokenizable",
    "words_dropped_duplicate", "words_dropped_no_candidate", "candidates_read",
    "candidates_kept", "candidates_dropped_untokenizable", "candidates_dropped_length",
    "candidates_dropped_same_as_word", "candidates_dropped_duplicate",
    "candidates_dropped_with_word")


def is_writable_candidate(text):
    """True if `text` can stand as a candidate field (not empty, no tab/CR/LF)."""
    return bool(text) and not any(char in text for char in _FORBIDDEN)


def is_writable_word(text):
    """True if `text` can start a line: a writable field that does not start with "#"."""
    return is_writable_candidate(text) and not text.startswith(COMMENT)


def format_line(word, candidates):
    """`word<TAB>c1<TAB>c2...`; ValueError for a field the format cannot hold."""
    line = SEPARATOR.join([word, *candidates])
    if (not candidates or not word or word.startswith(COMMENT) or not all(candidates)
            or line.count(SEPARATOR) != len(candidates) or "\n" in line or "\r" in line):
        raise ValueError(f"word {word!r} with candidates {candidates!r}: the similar-words "
                         "format cannot hold it (empty, tab, line break or leading '#')")
    return line


def write_similar_words(path, entries, comments=()):
    """Writes `entries` [(word, [candidate, ...])] to `path` atomically, after the
    `comments` (each written as a "# " line). Returns the number of lines written."""
    written = [0]

    def lines():
        for comment in comments:
            yield f"{COMMENT} {comment}"
        for word, candidates in entries:
            written[0] += 1
            yield format_line(word, candidates)

    write_text_atomically(path, lines())
    return written[0]


def parse_line(text, where):
    """(word, [candidates]) of one content line; UserError naming `where` (FILE:LINE)."""
    fields = text.split(SEPARATOR)
    if len(fields) < 2:
        raise UserError(f"{where}: no tab after the word {text[:40]!r}; {_FIX}")
    if not fields[0]:
        raise UserError(f"{where}: the word (first field) is empty; {_FIX}")
    if not all(fields[1:]):
        raise UserError(f"{where}: empty candidate field (two tabs in a row or a trailing "
                        f"tab); {_FIX}")
    return fields[0], fields[1:]


def read_similar_words(path):
    """Yields (line number, word, [candidates]) of the content lines of `path`;
    counts nothing. Non-UTF-8 and malformed lines raise UserError."""
    with open(path, "rb") as reader:
        for number, raw in enumerate(reader, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise UserError(f"{path}:{number}: not UTF-8 ({error.reason} at byte "
                                f"{error.start}); re-save the file as UTF-8") from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            text = text.rstrip("\n")
            if text.endswith("\r"):
                text = text[:-1]
            if not text or text.startswith(COMMENT):
                yield number, None, None
                continue
            word, candidates = parse_line(text, f"{path}:{number}")
            yield number, word, candidates


def _ids(word_ids, text):
    ids = word_ids(text)
    return tuple(ids) if ids else None


def load_similar_words(path, word_ids):
    """Reads the similar-words file `path` into token-id tuples.

    word_ids(text) -> list of token ids, or None when `text` does not
    tokenize cleanly. Returns (table, counts):
      table: {ids of a word: (ids of a candidate, ...)}, candidates in file
        order, each of the word's length and different from it, no duplicate;
        words left without a candidate are not in the table; a word whose ids
        are already a key (another spelling, an earlier line) is dropped.
      counts: {LOAD_COUNT_KEYS: number}: what was read, kept and dropped, why
        (words_read = kept + dropped; candidates_read = kept + dropped, the
        candidates of a dropped word counted as dropped "with_word").
    """
    counts = collections.Counter({key: 0 for key in LOAD_COUNT_KEYS})
    table = {}
    known = {}  # text -> ids tuple: a word recurs as many words' candidate (one tuple, shared)
    missing = object()
    for _, word, candidates in read_similar_words(path):
        counts["lines"] += 1
        if word is None:
            counts["skipped_lines"] += 1
            continue
        counts["words_read"] += 1
        counts["candidates_read"] += len(candidates)
        word_key = known.get(word, missing)
        if word_key is missing:
            word_key = known[word] = _ids(word_ids, word)
        if word_key is None or word_key in table:
            counts["words_dropped_untokenizable" if word_key is None
                   else "words_dropped_duplicate"] += 1
            counts["candidates_dropped_with_word"] += len(candidates)
            continue
        kept = []
        for candidate in candidates:
            candidate_key = known.get(candidate, missing)
            if candidate_key is missing:
                candidate_key = known[candidate] = _ids(word_ids, candidate)
            if candidate_key is None:
                reason = "untokenizable"
            elif len(candidate_key) != len(word_key):
                reason = "length"
            elif candidate_key == word_key:
                reason = "same_as_word"
            elif candidate_key in kept:
                reason = "duplicate"
            else:
                kept.append(candidate_key)
                continue
            counts["candidates_dropped_" + reason] += 1
        if not kept:
            counts["words_dropped_no_candidate"] += 1
            continue
        table[word_key] = tuple(kept)
        counts["words_kept"] += 1
        counts["candidates_kept"] += len(kept)
    return table, dict(counts)


_CACHE_MAGIC = b"ZHPT-SIMILAR-WORDS-1\n"


def load_similar_words_cached(path, word_ids, tokenizer_key):
    """load_similar_words(path, word_ids), kept in a cache file of the temp dir.

    Turning a 20k-word file into ids takes ~0.4 s, a third of a small run;
    the cache (marshal of (table, counts): plain tuples, ints and strings,
    nothing executed on load) takes ~0.02 s. It is keyed by the file's path,
    size and mtime and by `tokenizer_key` (what word_ids depends on: the
    vocab file's identity and the tokenizer's options), so an edited file
    or another vocab is never served stale. A cache that cannot be read or
    written is ignored.
    """
    stat = os.stat(path)
    key = f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}|{tokenizer_key}"
    cache = os.path.join(tempfile.gettempdir(), "zh_pretrain_similar_words_"
                         f"{zlib.crc32(key.encode('utf-8')):08x}.bin")
    try:
        with open(cache, "rb") as reader:
            data = reader.read()
        if data.startswith(_CACHE_MAGIC):
            stored_key, table, counts = marshal.loads(data[len(_CACHE_MAGIC):])
            if stored_key == key:
                return table, counts
    except (OSError, ValueError, EOFError, TypeError):
        pass
    table, counts = load_similar_words(path, word_ids)
    try:
        with atomic_output(cache) as temporary:
            with open(temporary, "wb") as writer:
                writer.write(_CACHE_MAGIC + marshal.dumps((key, table, counts)))
    except OSError:
        pass
    return table, counts
