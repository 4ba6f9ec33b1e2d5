"""The corpus cut into chunks, data_gen's unit of work and of seeding.

The input files, in their sorted order, are laid end to end as one stream of
`total` bytes. Chunk k covers the grid cell [k*B, (k+1)*B) (B = --chunk_bytes)
moved to document boundaries: it runs from boundary(k) to boundary(k+1), with
boundary(0) = 0 and boundary(K) = total, K = max(1, ceil(total / B)). For
0 < k < K, with g = k*B at offset o of file f:

  o == 0: g itself (a file start is a document start);
  else, L = the first line start at or after o in f (f's end if none):
    the start of the first blank line that starts in [L, min(g + B, end of f));
    f's end, when f ends before the next cell and no blank line came first;
    L otherwise: the cell holds no blank line (a document longer than B, a
    file without blank lines), so a document is cut there (counted as
    chunk_starts_inside_document).

A boundary depends only on the bytes around g, so any process can find the
byte range of any chunk on its own: no pass over the corpus comes first, and
the local CLI and the Beam pipeline cut the same chunks. Files are opened
through `opener(path)` (a seekable binary file), so remote files work too.
"""
import bisect
import dataclasses

DEFAULT_CHUNK_BYTES = 131072
_PROBE_BYTES = 65536  # read size when looking for a line start or a blank line


@dataclasses.dataclass(frozen=True)
class Segment:
    """The part [start, end) of file `path` that one chunk reads.

    owns_file: the chunk holds the file's first byte (or the file is empty and
    starts in the chunk), so the chunk counts the file in the account.
    """
    path: str
    start: int
    end: int
    size: int
    owns_file: bool


@dataclasses.dataclass(frozen=True)
class ChunkSpan:
    """Chunk `index`: bytes [start, end) of the stream, as per-file segments."""
    index: int
    start: int
    end: int
    segments: tuple
    starts_inside_document: bool


class CorpusLayout:
    """Files with their sizes laid end to end, cut into chunks of ~chunk_bytes."""

    def __init__(self, files, sizes, chunk_bytes=DEFAULT_CHUNK_BYTES):
        if chunk_bytes < 1:
            raise ValueError("chunk_bytes must be >= 1")
        self.files = list(files)
        self.sizes = [int(size) for size in sizes]
        self.chunk_bytes = chunk_bytes
        self.file_starts = [0]
        for size in self.sizes:
            self.file_starts.append(self.file_starts[-1] + size)
        self.total = self.file_starts[-1]
        self.num_chunks = max(1, -(-self.total // chunk_bytes))

    def boundary(self, k, opener):
        """(stream offset where chunk k starts, whether a document is cut there)."""
        if k <= 0:
            return 0, False
        if k >= self.num_chunks:
            return self.total, False
        grid = k * self.chunk_bytes
        f = bisect.bisect_right(self.file_starts, grid) - 1
        file_start = self.file_starts[f]
        offset = grid - file_start
        if offset == 0:
            return grid, False
        size = self.sizes[f]
        limit = min(grid + self.chunk_bytes, file_start + size) - file_start
        with opener(self.files[f]) as handle:
            line_start = _next_line_start(handle, offset, size)
            if line_start >= size:
                return file_start + size, False
            blank = _first_blank_line(handle, line_start, limit)
        if blank is not None:
            return file_start + blank, False
        if file_start + size <= grid + self.chunk_bytes:
            return file_start + size, False
        return file_start + line_start, True

    def chunk(self, k, opener):
        """The ChunkSpan of chunk k (0 <= k < num_chunks)."""
        start, inside = self.boundary(k, opener)
        end, _ = self.boundary(k + 1, opener)
        return ChunkSpan(k, start, end, tuple(self._segments(k, start, end)), inside)

    def _segments(self, k, start, end):
        last = k == self.num_chunks - 1
        # From the file that ends at or runs over `start` (empty files starting there included).
        for f in range(max(bisect.bisect_left(self.file_starts, start) - 1, 0), len(self.files)):
            file_start, size = self.file_starts[f], self.sizes[f]
            if file_start > end or (file_start == end and not last):
                break
            owns = start <= file_start and (file_start < end or last)
            low, high = max(start, file_start), min(end, file_start + size)
            if high > low or owns:
                yield Segment(self.files[f], low - file_start, max(high, low) - file_start,
                              size, owns)


def _next_line_start(handle, offset, size):
    """The first offset >= `offset` that begins a line (`size` when none does)."""
    handle.seek(offset - 1)
    position = offset - 1
    while position < size:
        block = handle.read(_PROBE_BYTES)
        if not block:
            break
        newline = block.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(block)
    return size


def _first_blank_line(handle, line_start, limit):
    """The start of the first blank line starting in [line_start, limit), or None.

    Lines longer than _PROBE_BYTES are skipped without being held: a line
    that long is not taken for a blank one.
    """
    handle.seek(line_start)
    position = line_start  # the offset of data[0]
    data = b""
    while True:
        begin = 0
        while position + begin < limit:
            newline = data.find(b"\n", begin)
            if newline < 0:
                break
            if _is_blank(data[begin:newline]):
                return position + begin
            begin = newline + 1
        if position + begin >= limit:
            return None
        position += begin
        data = data[begin:]
        if len(data) > _PROBE_BYTES:
            position, data = _skip_rest_of_line(handle, position + len(data))
            if data is None:
                return None
            continue
        block = handle.read(_PROBE_BYTES)
        if not block:  # a last line without "\n"
            return position if data and _is_blank(data) else None
        data += block


def _skip_rest_of_line(handle, position):
    """(offset of the next line, the bytes read past it) from `position` inside a line;
    (position, None) at the end of the file."""
    while True:
        block = handle.read(_PROBE_BYTES)
        if not block:
            return position, None
        newline = block.find(b"\n")
        if newline >= 0:
            return position + newline + 1, block[newline + 1:]
        position += len(block)


def _is_blank(raw):
    """True for a line that the corpus reader reads as blank (str.strip() leaves nothing)."""
    if not raw.strip():
        return True
    if raw.isascii():
        return False
    try:
        return not raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return False
