"""data_gen.crc32c, example_proto, tfrecord_writer: TF-free records TF can read."""
import os
import random

import pytest

from data_gen import crc32c
from data_gen.example_proto import InstanceEncoder, encode_varint
from data_gen.tfrecord_writer import TFRecordWriter, frame_record, frame_records


def test_crc32c_known_values_and_all_implementations_agree():
    assert crc32c.crc32c_python(b"123456789") == 0xE3069283
    assert crc32c.crc32c_python(b"") == 0
    rng = random.Random(0)
    messages = [bytes(rng.randrange(256) for _ in range(n))
                for n in (0, 1, 3, 4, 5, 63, 64, 65, 1000, 2047, 2048, 2049, 5000)]
    expected = [crc32c.crc32c_python(m) for m in messages]
    assert [crc32c._crc32c_numpy(m) for m in messages] == expected  # numpy fallback
    results = [0] * len(messages)
    batch = [i for i, m in enumerate(messages) if 4 <= len(m) <= crc32c.BLOCK]
    crc32c._crc_batch(messages, batch, results)  # vectorized fallback
    assert [results[i] for i in batch] == [expected[i] for i in batch]
    assert crc32c.crc32c_many(messages) == expected  # whichever is active
    assert [crc32c.crc32c(m) for m in messages] == expected


def test_varints():
    assert encode_varint(0) == b"\x00" and encode_varint(127) == b"\x7f"
    assert encode_varint(300) == b"\xac\x02"
    assert encode_varint(-1) == b"\xff" * 9 + b"\x01"


def test_encoded_example_parses_with_protobuf_and_tf_reader(tmp_path):
    import tensorflow as tf
    encoder = InstanceEncoder(8, 3, 30000, with_token_boundary=True)
    data = encoder.encode([101, 20000, 103, 102], [0, 0, 1, 1], [2], [7000], 1, [1, 1, 0, 1])
    example = tf.train.Example.FromString(data)
    feature = example.features.feature
    assert list(feature["input_ids"].int64_list.value) == [101, 20000, 103, 102, 0, 0, 0, 0]
    assert list(feature["input_mask"].int64_list.value) == [1, 1, 1, 1, 0, 0, 0, 0]
    assert list(feature["segment_ids"].int64_list.value) == [0, 0, 1, 1, 0, 0, 0, 0]
    assert list(feature["masked_lm_positions"].int64_list.value) == [2, 0, 0]
    assert list(feature["masked_lm_ids"].int64_list.value) == [7000, 0, 0]
    assert list(feature["masked_lm_weights"].float_list.value) == [1.0, 0.0, 0.0]
    assert list(feature["next_sentence_labels"].int64_list.value) == [1]
    assert list(feature["token_boundary"].int64_list.value) == [1, 1, 0, 1, 0, 0, 0, 0]
    # Our bytes equal protobuf's own serialization (fields in sorted key order).
    assert example.SerializeToString(deterministic=True) == data

    for compression, tf_name in (("none", None), ("gzip", "GZIP")):
        path = tmp_path / f"r-{compression}.tfrecord"
        writer = TFRecordWriter(path, compression)
        for _ in range(3):
            writer.write(data)
        writer.write_framed(frame_record(b"x" * 3000))  # > one CRC block
        writer.close()
        read = [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression_type=tf_name)]
        assert read == [data] * 3 + [b"x" * 3000]


def test_batch_framing_equals_single_framing():
    records = [os.urandom(n) for n in (0, 5, 900, 2100)]
    assert frame_records(records) == [frame_record(r) for r in records]


def test_writer_is_atomic_and_abort_removes_temporary(tmp_path):
    path = tmp_path / "out.tfrecord"
    writer = TFRecordWriter(path)
    writer.write(b"abc")
    assert not path.exists()
    hidden = [name for name in os.listdir(tmp_path)]
    assert len(hidden) == 1 and hidden[0].startswith(".out.tfrecord.incomplete-")
    writer.abort()
    assert os.listdir(tmp_path) == []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TFRecordWriter(tmp_path / "missing_dir" / "x.tfrecord")
    with pytest.raises(ValueError, match="--compression='zip'"):
        TFRecordWriter(path, "zip")
