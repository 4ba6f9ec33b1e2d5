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
        self._stream.write(frame_record(data))
        self.records += 1

    def write_framed(self, framed, count=1):
        """Appends `count` records already framed by frame_record(), back to back."""
        self._stream.write(framed)
        self.records += count

    def close(self):
        """Finishes the file and gives it its final name."""
        if self._stream is not self._file.handle:
            self._stream.close()
        self._file.commit()

    def abort(self):
        """Discards the partial file."""
        try:
            if self._stream is not self._file.handle:
                self._stream.close()
        except (OSError, ValueError):
            pass
        self._file.abort()
