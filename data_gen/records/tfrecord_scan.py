"""Finds truncated and corrupt records in TFRecord files, without TensorFlow.

TensorFlow's reader stops a file at its first bad record (`DataLossError`,
which names an offset but not the file). `scan_file` walks the framing that
data_gen.records.tfrecord_writer writes,

  uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

and reports where the first bad record is, how many records precede it, and
how many intact records follow it (which TensorFlow will not reach). Offsets
are in the uncompressed stream, as TensorFlow's are. run_pretraining uses it
to name the file after a DataLossError and to count what
`--skip_corrupt_records` skips.
"""
import dataclasses
import gzip
import struct
import zlib

from common.file_utils import open_input
from data_gen.records.metadata import detect_compression
from data_gen.records.tfrecord_writer import masked_crc32c

_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_READ_BLOCK = 1 << 20


@dataclasses.dataclass
class FileScan:
    """What `scan_file` found in one file."""
    path: str
    records: int = 0                  # intact records before the first problem (all, if none)
    problem: str = ""                 # "" when the file is intact
    problem_offset: int = -1          # byte offset of the bad record (uncompressed stream)
    records_after_problem: int = 0    # intact records after it that TensorFlow will not read
    more_after_problem: bool = False  # a second problem stopped that count

    @property
    def intact(self):
        return not self.problem

    def describe(self):
        """One line: `PATH: PROBLEM at byte N after R records (+M intact ones after it)`."""
        if self.intact:
            return f"{self.path}: {self.records} records, intact"
        after = ""
        if self.records_after_problem or self.more_after_problem:
            after = (f"; {'at least ' if self.more_after_problem else ''}"
                     f"{self.records_after_problem} intact record(s) follow it, which "
                     "TensorFlow's reader cannot reach")
        return (f"{self.path}: {self.problem} at byte {self.problem_offset}, after "
                f"{self.records} good record(s){after}")


class _Reader:
    """Reads exact byte counts from a (possibly gzip) stream; records gzip damage."""

    def __init__(self, stream):
        self.stream = stream
        self.offset = 0
        self.damage = ""

    def read(self, size):
        try:
            data = self.stream.read(size)
        except (EOFError, OSError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
            self.damage = f"corrupt or truncated gzip stream ({error})"
            return b""
        self.offset += len(data)
        return data


def _next_record(reader):
    """(status, record length): status is "ok", "end" or a description of the damage."""
    start = reader.offset
    header = reader.read(_HEADER.size)
    if not header and not reader.damage:
        return "end", start
    if len(header) < _HEADER.size:
        return reader.damage or "truncated record header", start
    length, length_crc = _HEADER.unpack(header)
    if masked_crc32c(header[:8]) != length_crc:
        return "corrupt record length (CRC mismatch)", start
    body = reader.read(length + _CRC.size)
    if len(body) < length + _CRC.size:
        return reader.damage or "truncated record", start
    if masked_crc32c(body[:length]) != _CRC.unpack(body[length:])[0]:
        return "corrupt record data (CRC mismatch)", start
    return "ok", start


def scan_file(path, compression=None):
    """Walks every record of `path`; compression None = detect (sidecar, gzip magic)."""
    compression = detect_compression(path, requested=compression)
    scan = FileScan(path)
    with open_input(path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if compression == "gzip" else raw
        reader = _Reader(stream)
        while True:
            status, start = _next_record(reader)
            if status == "end":
                return scan
            if status != "ok":
                break
            scan.records += 1
        scan.problem, scan.problem_offset = status, start
        if status.startswith("corrupt record data"):
            # The length was intact, so the framing goes on: count what follows.
            while True:
                status, _ = _next_record(reader)
                if status == "end":
                    break
                if status != "ok":
                    scan.more_after_problem = True
                    break
                scan.records_after_problem += 1
    return scan


def find_damaged(paths, compression=None):
    """The FileScan of each damaged file among `paths` (in order); compression as in scan_file."""
    scans = [scan_file(path, compression) for path in paths]
    return [scan for scan in scans if not scan.intact]
