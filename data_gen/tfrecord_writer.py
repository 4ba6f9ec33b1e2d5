"""TFRecord files written atomically, without TensorFlow.

Framing of each record (all little-endian):
  uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
With compression="gzip" the framed stream is gzip-compressed, as
tf.data.TFRecordDataset(compression_type="GZIP") expects.

CRC-32C comes from the google-crc32c package; data_gen._native_tfrecord (C,
optional) frames a whole chunk in one call, 3-10x faster
(bench/crc32c_bench.py). A file is written through data_gen.file_utils'
AtomicFile: hidden ".NAME.incomplete-PID" until close(), removed by abort().
"""
import contextlib
import gzip
import struct

import google_crc32c

from data_gen import native
from data_gen.file_utils import AtomicFile
from data_gen.metadata import COMPRESSIONS

_PACK_LENGTH = struct.Struct("<Q").pack
_PACK_CRC = struct.Struct("<I").pack


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
    data_gen._native_tfrecord is built.

    use_native: None = C when available (not with ZH_PRETRAIN_PURE_PYTHON=1),
    False = Python, True = C required (see data_gen.native.resolve).
    """
    module = native.resolve("_native_tfrecord", use_native)
    if module is not None and isinstance(records, list):
        return module.frame_records(records)
    return b"".join([frame_record(data) for data in records])


class TFRecordWriter:
    """Appends framed records to an AtomicFile, optionally gzip-compressed."""

    def __init__(self, path, compression="none"):
        if compression not in COMPRESSIONS:
            raise ValueError(f"--compression={compression!r}: choose one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.compression = compression
        self._file = AtomicFile(path)
        self.path = self._file.path
        self._stream = self._file.handle
        if compression == "gzip":
            # mtime=0 and no file name in the header: identical runs give identical bytes.
            self._stream = gzip.GzipFile(filename="", mode="wb", fileobj=self._file.handle,
                                         mtime=0, compresslevel=6)
        self.records = 0

    def write(self, data):
        """Appends one serialized record."""
        self.write_framed(frame_record(data))

    def write_framed(self, framed, count=1):
        """Appends `count` records already framed by frame_record(), back to back."""
        with self._naming_the_output():
            self._stream.write(framed)
        self.records += count

    def close(self):
        """Finishes the file and gives it its final name."""
        with self._naming_the_output():
            if self._stream is not self._file.handle:
                self._stream.close()
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
        try:
            if self._stream is not self._file.handle:
                self._stream.close()
        except (OSError, ValueError):
            pass
        self._file.abort()
