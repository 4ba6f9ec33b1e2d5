"""TFRecord files written atomically, without TensorFlow.

Framing of each record (all little-endian):
  uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
With compression="gzip" the framed stream is gzip-compressed, as
tf.data.TFRecordDataset(compression_type="GZIP") expects.

A file is written as ".NAME.incomplete-PID" in the target directory (hidden,
so `*` globs do not match it) and renamed to NAME only when closed
successfully; `abort()` or `remove_all_temporaries()` deletes it.
"""
import gzip
import json
import os
import struct

from data_gen import native
from data_gen.file_utils import temporary_path
from data_gen.crc32c import crc32c_many, mask_crc, masked_crc32c

COMPRESSIONS = ("none", "gzip")

_live_temporaries = set()


def remove_all_temporaries():
    """Deletes every temporary file this process still has open (signal/exit path)."""
    for path in list(_live_temporaries):
        try:
            os.remove(path)
        except OSError:
            pass
        _live_temporaries.discard(path)


def frame_record(data):
    """Returns the TFRecord framing of one serialized record."""
    length = struct.pack("<Q", len(data))
    return b"".join((length, struct.pack("<I", masked_crc32c(length)), data,
                     struct.pack("<I", masked_crc32c(data))))


def frame_records(records):
    """frame_record() of every record, with the CRCs computed in one batch."""
    lengths = [struct.pack("<Q", len(data)) for data in records]
    crcs = crc32c_many([piece for pair in zip(lengths, records) for piece in pair])
    pack = struct.Struct("<I").pack
    return [b"".join((length, pack(mask_crc(crcs[2 * i])), data, pack(mask_crc(crcs[2 * i + 1]))))
            for i, (length, data) in enumerate(zip(lengths, records))]


def frame_records_joined(records, use_native=None):
    """b"".join(frame_records(records)), in one C call when data_gen._native_tfrecord is built.

    use_native: None = C when available (not with ZH_PRETRAIN_PURE_PYTHON=1),
    False = Python, True = C required (see data_gen.native.resolve).
    """
    module = native.resolve("_native_tfrecord", use_native)
    if module is not None and isinstance(records, list):
        return module.frame_records(records)
    return b"".join(frame_records(records))


class AtomicFile:
    """Binary file that appears under its final name only after commit()."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        directory = os.path.dirname(self.path)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"output directory {directory} does not exist "
                                    f"(for {path}); create it first.")
        self.temporary = temporary_path(self.path)
        _live_temporaries.add(self.temporary)
        self.handle = open(self.temporary, "wb")

    def commit(self):
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.replace(self.temporary, self.path)
        _live_temporaries.discard(self.temporary)

    def abort(self):
        if not self.handle.closed:
            self.handle.close()
        try:
            os.remove(self.temporary)
        except OSError:
            pass
        _live_temporaries.discard(self.temporary)


class TFRecordWriter:
    """Appends framed records to an AtomicFile, optionally gzip-compressed."""

    def __init__(self, path, compression="none"):
        if compression not in COMPRESSIONS:
            raise ValueError(f"--compression={compression!r}: choose one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.path = os.path.abspath(path)
        self.compression = compression
        self._file = AtomicFile(path)
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


def write_json_atomically(path, obj):
    """Writes JSON to `path` through a hidden temporary name and a rename."""
    atomic = AtomicFile(path)
    try:
        atomic.handle.write((json.dumps(obj, indent=2, sort_keys=True) + "\n").encode("utf-8"))
        atomic.commit()
    except BaseException:
        atomic.abort()
        raise
