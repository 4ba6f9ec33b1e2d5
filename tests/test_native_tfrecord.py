"""data_gen._native_tfrecord: C framing equals the Python framing, byte for byte."""
import random

import pytest

from data_gen import crc32c
from data_gen.tfrecord_writer import TFRecordWriter, frame_records, frame_records_joined

native = pytest.importorskip("data_gen._native_tfrecord", reason="C extension not built")


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
        for data in records[:40]:
            assert native.masked_crc32c(data) == crc32c.masked_crc32c(data)
        # The standard CRC-32C check value, through the masking.
        unmasked = crc32c.crc32c_python(b"123456789")
        assert unmasked == 0xE3069283
        assert native.masked_crc32c(b"123456789") == crc32c.mask_crc(unmasked)
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
