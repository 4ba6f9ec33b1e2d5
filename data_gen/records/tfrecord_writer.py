"""TFRecord files written atomically, without TensorFlow.

Framing of each record (all little-endian):
  uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
With compression="gzip" every write_framed() call becomes one gzip member
(`encode_framed`); a file of several members is one gzip stream, as
tf.data.TFRecordDataset(compression_type="GZIP") and Python's gzip read it.
Compressing piece by piece is what lets worker processes compress their own
pieces and still give the bytes a single process would write.

CRC-32C comes from the google-crc32c package; data_gen.native._tfrecord (C,
optional) frames a whole chunk in one call, 3-10x faster
(bench/crc32c_bench.py). A file is written through common.file_utils'
AtomicFile: hidden ".NAME.incomplete-PID" until close(), removed by abort().
"""
import contextlib
import os
import struct
import zlib

import google_crc32c

from data_gen import native
from common.file_utils import AtomicFile
from data_gen.records.metadata import COMPRESSIONS

_PACK_LENGTH = struct.Struct("<Q").pack
_PACK_CRC = struct.Struct("<I").pack
_PACK_GZIP_TRAILER = struct.Struct("<II").pack
# A gzip member's header (RFC 1952): magic, deflate, no flags, mtime 0, extra flags 0 (level 6),
# OS 3 (Unix). Written here, not by gzip.compress, whose OS byte changed with Python: 3 on
# 3.11 and 3.12 (zlib's own header), 255 from 3.13; the files are the same on every runtime.
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
GZIP_LEVEL = 6


def masked_crc32c(data):
    """TFRecord's masked CRC-32C of bytes: rotate right by 15, add a constant (mod 2**32)."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data):
    """Returns the TFRecord framing of one serialized record (bytes)."""
    length = _PACK_LENGTH(len(data))
    return b"".join((length, _PACK_CRC(masked_crc32c(length)), data,
                     _PACK_CRC(masked_crc32c(data))))


def frame_records_joined(records, use_native=None):
    """b"".join(frame_record(r) for r in records), in one C call when
    data_gen.native._tfrecord is built.

    use_native: None = C when available (not with ZH_PRETRAIN_PURE_PYTHON=1),
    False = Python, True = C required (see data_gen.native.resolve).
    """
    module = native.resolve("_tfrecord", use_native)
    if module is not None and isinstance(records, list):
        return module.frame_records(records)
    return b"".join([frame_record(data) for data in records])


def gzip_member(data):
    """One gzip member of `data`: GZIP_HEADER, its deflate stream at level 6, CRC-32 and length.

    The member has mtime 0 and no file name, so identical input gives identical bytes; they
    are the bytes gzip.compress(data, 6, mtime=0) gave on Python 3.11 and 3.12 on Linux.
    """
    deflate = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    return GZIP_HEADER + body + _PACK_GZIP_TRAILER(zlib.crc32(data), len(data) & 0xFFFFFFFF)


def encode_framed(framed, compression):
    """The bytes that framed records take in a file: themselves, or one gzip member."""
    if compression == "gzip":
        return gzip_member(framed)
    return framed


class TFRecordWriter:
    """Appends framed records to an AtomicFile, optionally gzip-compressed (see above)."""

    def __init__(self, path, compression="none"):
        if compression not in COMPRESSIONS:
            raise ValueError(f"--compression={compression!r}: choose one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.compression = compression
        self._file = AtomicFile(path)
        self.path = self._file.path
        self.temporary = self._file.temporary  # other processes may write here (os.pwrite)
        self.fileno = self._file.handle.fileno
        self.records = 0

    def write(self, data):
        """Appends one serialized record."""
        self.write_framed(frame_record(data))

    def write_framed(self, framed, count=1):
        """Appends `count` records already framed by frame_record(), back to back."""
        self.write_encoded(encode_framed(framed, self.compression), count)

    def write_encoded(self, encoded, count):
        """Appends the output of encode_framed() for `count` records."""
        with self._naming_the_output():
            self._file.handle.write(encoded)
        self.records += count

    def close(self):
        """Finishes the file and gives it its final name."""
        with self._naming_the_output():
            if self.compression == "gzip" and os.fstat(self.fileno()).st_size == 0:
                self._file.handle.write(encode_framed(b"", "gzip"))  # a valid empty stream
            self._file.commit()

    @contextlib.contextmanager
    def _naming_the_output(self):
        """An OSError (disk full, file too large) names the output, not its temporary file."""
        try:
            yield
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.path) from error

    def abort(self):
        """Discards the partial file."""
        self._file.abort()

