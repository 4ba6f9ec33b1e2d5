"""data_gen.records.tfrecord_scan finds the record where TensorFlow's own reader stops."""
import gzip

import pytest
import tensorflow as tf

from data_gen.records.tfrecord_scan import scan_file
from data_gen.records.tfrecord_writer import TFRecordWriter, frame_record

RECORDS = [bytes([i]) * (20 + i) for i in range(12)]


def _write(path, compression="none"):
    writer = TFRecordWriter(str(path), compression)
    for record in RECORDS:
        writer.write(record)
    writer.close()
    return path


def _offset(index):
    return sum(len(frame_record(r)) for r in RECORDS[:index])


def _tensorflow_reads(path, compression=""):
    """(records TensorFlow yields, whether it raised DataLossError)."""
    count = 0
    try:
        for _ in tf.data.TFRecordDataset(str(path), compression_type=compression):
            count += 1
    except tf.errors.DataLossError:
        return count, True
    return count, False


def test_an_intact_file_counts_every_record(tmp_path):
    scan = scan_file(str(_write(tmp_path / "a.tfrecord")), "none")
    assert scan.intact and scan.records == len(RECORDS) and "intact" in scan.describe()


def test_corrupt_data_names_the_record_and_counts_the_unreachable_rest(tmp_path):
    path = _write(tmp_path / "a.tfrecord")
    data = bytearray(path.read_bytes())
    data[_offset(5) + 12 + 3] ^= 0xFF  # a byte inside record 5's data
    path.write_bytes(bytes(data))
    scan = scan_file(str(path), "none")
    assert (scan.records, scan.problem_offset, scan.records_after_problem) == (5, _offset(5), 6)
    assert scan.problem == "corrupt record data (CRC mismatch)"
    assert _tensorflow_reads(path) == (5, True)  # TF stops where the scan says, loses the rest
    ignoring = tf.data.TFRecordDataset(str(path)).ignore_errors()
    assert sum(1 for _ in ignoring) == 5  # so --skip_corrupt_records skips 1 + 6 records


def test_a_corrupt_length_stops_the_count(tmp_path):
    path = _write(tmp_path / "a.tfrecord")
    data = bytearray(path.read_bytes())
    data[_offset(3) + 1] ^= 0x01  # record 3's length field
    path.write_bytes(bytes(data))
    scan = scan_file(str(path), "none")
    assert (scan.records, scan.problem, scan.problem_offset) == (
        3, "corrupt record length (CRC mismatch)", _offset(3))
    assert scan.records_after_problem == 0 and not scan.more_after_problem
    assert _tensorflow_reads(path) == (3, True)


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_truncated_file(tmp_path, compression):
    path = _write(tmp_path / f"a.{compression}", compression)
    if compression == "gzip":
        raw = gzip.decompress(path.read_bytes())[:_offset(9) + 30]
        path.write_bytes(gzip.compress(raw)[:-8])  # also without the gzip trailer
    else:
        path.write_bytes(path.read_bytes()[:_offset(9) + 30])
    scan = scan_file(str(path))  # compression detected from the gzip magic
    assert scan.records == 9 and scan.problem_offset == _offset(9)
    assert "truncated" in scan.problem and f"at byte {_offset(9)}, after 9 good" in scan.describe()
    assert _tensorflow_reads(path, "GZIP" if compression == "gzip" else "") == (9, True)
