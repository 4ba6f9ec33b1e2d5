"""data_gen.native._tfrecord: C framing equals the Python framing, byte for byte.

The reference for both CRC paths of the C module (SSE4.2 and its tables) is
the bitwise CRC-32C below, straight from the definition (reflected
Castagnoli polynomial 0x82F63B78); the Python framing uses google-crc32c.
"""
import random
import struct

import pytest

from data_gen.records.tfrecord_writer import TFRecordWriter, frame_record, frame_records_joined, \
    masked_crc32c

native = pytest.importorskip("data_gen.native._tfrecord", reason="C extension not built")


def _crc32c_reference(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _masked_reference(data):
    crc = _crc32c_reference(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frame_reference(data):
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", _masked_reference(length)) + data
            + struct.pack("<I", _masked_reference(data)))


def frame_records(records):
    return [frame_record(data) for data in records]


def _records():
    rng = random.Random(7)
    sizes = [0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 1000, 4099, 70000]
    sizes += [rng.randrange(0, 3000) for _ in range(300)]
    return [bytes(rng.randrange(256) for _ in range(n)) for n in sizes]


@pytest.mark.parametrize("hardware", [True, False])
def test_framing_and_crc_equal_python_on_both_crc_paths(hardware):
    records = _records()
    try:
        native.set_hardware(hardware)
        assert native.frame_records(records) == b"".join(frame_records(records))
        some = records[:20] + records[-20:]  # every size class; the reference is slow
        assert native.frame_records(some) == b"".join(_frame_reference(data) for data in some)
        for data in records[:40]:
            assert native.masked_crc32c(data) == masked_crc32c(data) == _masked_reference(data)
        # The standard CRC-32C check value, through the masking.
        assert _crc32c_reference(b"123456789") == 0xE3069283
        assert native.masked_crc32c(b"123456789") == _masked_reference(b"123456789")
    finally:
        native.set_hardware(True)


def test_joined_framing_dispatch_and_python_fallback(monkeypatch):
    records = _records()[:50]
    expected = b"".join(frame_records(records))
    assert frame_records_joined(records) == expected
    assert frame_records_joined(records, use_native=False) == expected
    monkeypatch.setenv("ZH_PRETRAIN_PURE_PYTHON", "1")
    assert frame_records_joined(records) == expected


def test_non_bytes_items_are_refused_with_their_index():
    with pytest.raises(TypeError, match="item 1 is str"):
        native.frame_records([b"ok", "text"])
    with pytest.raises(TypeError, match="list of bytes"):
        native.frame_records((b"a",))


def test_tensorflow_reads_the_c_framed_records(tmp_path):
    import tensorflow as tf
    records = _records()[:30]
    path = tmp_path / "c.tfrecord"
    writer = TFRecordWriter(path)
    writer.write_framed(native.frame_records(records), len(records))
    writer.close()
    assert writer.records == len(records)
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
