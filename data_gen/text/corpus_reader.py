"""Streaming reader of blank-line-separated documents, one sentence per line.

Nothing holds the corpus: files are read line by line and documents are
yielded as lists of sentences. Survives BOMs, CRLF, trailing blanks, runs of
blank lines, empty files, files with no blank line at all (a document is cut
every `max_sentences_per_document` sentences and continues as a new one) and
very long lines (read in pieces of `max_line_bytes`). Bytes that are not UTF-8
raise CorpusError naming file, line, byte offset and, for a GB18030 or Big5 file, the
conversion (data_gen.text.unreadable_input); with on_decode_error="skip" the line is skipped
and counted.
"""
import collections
import io
import os

from common import file_utils
from data_gen.text import unreadable_input

DECODE_ERROR_POLICIES = ("error", "skip")
_BOM = b"\xef\xbb\xbf"


class CorpusError(ValueError):
    """Unreadable input: no file matched, undecodable bytes, ..."""


def expand_input_patterns(patterns, glob_files=None):
    """common.file_utils.expand_input_patterns, raising CorpusError (see there)."""
    return file_utils.expand_input_patterns(patterns, error=CorpusError, glob_files=glob_files)


class CorpusAccount:
    """Counters of what was read and skipped (plain ints, mergeable)."""

    def __init__(self):
        self.counts = collections.Counter()

    def add(self, key, value=1):
        self.counts[key] += value

    def as_dict(self):
        return dict(sorted(self.counts.items()))


class CorpusReader:
    """Iterates documents (lists of str) over files, counting into `account`."""

    def __init__(self, files, on_decode_error="error", max_sentences_per_document=2000,
                 max_line_bytes=1 << 20, account=None):
        if on_decode_error not in DECODE_ERROR_POLICIES:
            raise CorpusError(f"--on_decode_error={on_decode_error!r}: choose one of "
                              f"{', '.join(DECODE_ERROR_POLICIES)}")
        if max_sentences_per_document < 1:
            raise CorpusError("max_sentences_per_document must be >= 1")
        self.files = list(files)
        self.on_decode_error = on_decode_error
        self.max_sentences_per_document = max_sentences_per_document
        self.max_line_bytes = max_line_bytes
        self.account = account if account is not None else CorpusAccount()
        self.position = 0  # input bytes consumed so far, over all files (for progress)
        self._finished_bytes = 0

    def __iter__(self):
        for path in self.files:
            yield from self._read_file(path)

    def _raw_lines(self, reader):
        """Yields (byte_offset, line_bytes) with the "\\n" removed.

        A line longer than max_line_bytes comes in pieces, cut at UTF-8
        character boundaries (each piece then reads as a sentence).
        """
        offset = 0
        carry = b""
        while True:
            piece = reader.readline(self.max_line_bytes)
            if not piece:
                if carry:
                    yield offset - len(carry), carry
                return
            piece_offset = offset - len(carry)
            offset += len(piece)
            data = carry + piece
            carry = b""
            if data.endswith(b"\n"):
                yield piece_offset, data[:-1]
                continue
            if len(piece) < self.max_line_bytes:  # last line without "\n"
                yield piece_offset, data
                return
            # Over-long line: keep an incomplete trailing UTF-8 sequence for later.
            cut = len(data)
            for back in range(1, min(4, len(data)) + 1):
                byte = data[-back]
                if byte & 0xC0 == 0x80:  # continuation byte: keep looking
                    continue
                if byte >= 0xC0:  # lead byte: is its sequence complete?
                    needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                    if needed > back:
                        cut = len(data) - back
                break
            carry = data[cut:]
            yield piece_offset, data[:cut]
            self.account.add("long_line_pieces")

    def _read_file(self, path):
        size = os.path.getsize(path)
        with open(path, "rb") as reader:
            yield from self._read_stream(path, reader, 0, size, True)
        self._finished_bytes += size
        self.position = self._finished_bytes

    def read_span(self, span, opener=None):
        """Documents of chunk `span` (data_gen.runner.corpus_chunks.ChunkSpan), segment by segment.

        Each segment is read on its own: its end ends a document, and a file
        is counted (files, bytes, empty_files, ...) only by the segment that
        owns it. A chunk that starts inside a document is counted too.
        `opener(path)` gives a seekable binary file (default: open).
        """
        opener = opener or (lambda path: open(path, "rb"))
        if span.starts_inside_document:
            self.account.add("chunk_starts_inside_document")
        for segment in span.segments:
            data = b""
            if segment.end > segment.start:
                with opener(segment.path) as handle:
                    handle.seek(segment.start)
                    data = _read_exactly(handle, segment.end - segment.start, segment.path)
            yield from self._read_stream(segment.path, io.BytesIO(data), segment.start,
                                         segment.size, segment.owns_file)

    def _read_stream(self, path, reader, base_offset, size, owns_file):
        """Documents of `reader`, whose first byte is at `base_offset` of file `path`."""
        account = self.account
        if owns_file:
            account.add("files")
            account.add("bytes", size)
        document = []
        first = base_offset == 0
        any_line = False
        for offset, raw in self._raw_lines(reader):
            offset += base_offset
            any_line = True
            self.position = self._finished_bytes + offset + len(raw)
            if first:
                first = False
                if raw.startswith(_BOM):
                    raw = raw[len(_BOM):]
                    offset += len(_BOM)
                    account.add("files_with_bom")
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                bad_offset = offset + error.start
                if self.on_decode_error == "error":
                    raise CorpusError(unreadable_input.decode_error_message(
                        path, bad_offset, raw[error.start], error.reason)) from None
                account.add("lines_skipped_invalid_utf8")
                continue
            line = line.strip()
            if not line:
                if document:
                    account.add("documents")
                    yield document
                    document = []
                continue
            document.append(line)
            account.add("sentences")
            if len(document) >= self.max_sentences_per_document:
                account.add("documents")
                account.add("documents_cut_at_sentence_cap")
                yield document
                document = []
        if document:
            account.add("documents")
            yield document
        if owns_file and not any_line and size == 0:
            account.add("empty_files")


def _read_exactly(handle, count, path):
    """`count` bytes from `handle` (several reads if the file object gives fewer)."""
    parts = []
    while count > 0:
        block = handle.read(count)
        if not block:
            raise CorpusError(f"{path}: the file ended early while reading it (was it changed "
                              "during the run?); rerun on files that do not change.")
        parts.append(block)
        count -= len(block)
    return b"".join(parts)


def check_unreadable_share(account, files, max_share):
    """Raises CorpusError when more than `max_share` of the lines could not be read
    (--on_decode_error=skip dropped them)."""
    share = unreadable_input.unreadable_share(account)
    if share <= max_share:
        return
    path, number = unreadable_input.first_undecodable_line(files)
    flag = unreadable_input.SHARE_FLAG
    dropped = account.get("lines_skipped_invalid_utf8", 0)
    raise CorpusError(
        f"{dropped} of {dropped + account.get('sentences', 0)} lines ({share:.1%}) were not "
        f"UTF-8 and were dropped, more than {flag}={max_share}; the first is {path}: line "
        f"{number}: {unreadable_input.advice(path) if path else 'convert the input to UTF-8'} "
        f"(or raise {flag} to accept the loss); no output was written")
