"""data_gen.records.record_schema, example_proto, tfrecord_writer: TF-free records TF can read."""
import gzip
import os
import zlib

import pytest

from data_gen import native
from data_gen.records import record_schema
from data_gen.records.example_proto import InstanceEncoder, encode_varint
from data_gen.records.tfrecord_writer import GZIP_HEADER, TFRecordWriter, encode_framed, \
    frame_record, frame_records_joined, masked_crc32c


def test_masked_crc_of_the_standard_check_value():
    # CRC-32C("123456789") = 0xE3069283 (RFC 3720), masked as TFRecord does.
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


_ENCODERS = [False] + ([True] if native.load("_records") else [])


@pytest.mark.parametrize("use_native", _ENCODERS, ids=lambda c: "C" if c else "Python")
@pytest.mark.parametrize("optional", [(), record_schema.TOKEN_BOUNDARY,
                                      record_schema.SPAN_BOUNDARIES,
                                      record_schema.TOKEN_BOUNDARY + record_schema.SPAN_BOUNDARIES],
                         ids=["plain", "token_boundary", "span_boundaries", "both"])
def test_both_encoders_write_exactly_the_schema(use_native, optional):
    """The Python encoder and its C twin write record_schema's names, dtypes and lengths."""
    import tensorflow as tf
    with_token_boundary = "token_boundary" in optional
    with_spans = "masked_lm_span_left" in optional

    def encode(native_or_not):
        encoder = InstanceEncoder(12, 5, 30000, with_token_boundary, use_native=native_or_not,
                                  with_span_boundaries=with_spans)
        return encoder.encode([2, 20000, 4, 3], [0, 0, 1, 1], [1, 2], [7000, 4], 1,
                              [1, 1, 0, 1], [0, 0], [3, 3])
    data = encode(use_native)
    feature = tf.train.Example.FromString(data).features.feature
    expected = record_schema.feature_lengths(12, 5, with_optional=optional)
    assert sorted(feature) == sorted(expected)
    kinds = {"int64": "int64_list", "float32": "float_list"}
    for name, (dtype, length) in expected.items():
        assert feature[name].WhichOneof("kind") == kinds[dtype], name
        assert len(getattr(feature[name], kinds[dtype]).value) == length, name
    if with_spans:
        assert list(feature["masked_lm_span_left"].int64_list.value) == [0, 0, 0, 0, 0]
        assert list(feature["masked_lm_span_right"].int64_list.value) == [3, 3, 0, 0, 0]
    assert data == encode(False)


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


def test_joined_framing_equals_single_framing():
    records = [os.urandom(n) for n in (0, 5, 900, 2100)]
    expected = b"".join(frame_record(r) for r in records)
    assert frame_records_joined(records, use_native=False) == expected
    assert frame_records_joined(iter(records)) == expected  # not a list: the Python path


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


@pytest.mark.parametrize("size", [0, 1, 1000, 300_000])
def test_gzip_members_are_the_same_bytes_on_every_python(size):
    """One fixed header (OS byte 3, as zlib writes it: Python 3.11/3.12's gzip.compress with
    mtime=0), whatever this Python's gzip module would write (255 from 3.13)."""
    data = bytes((index * 7919) % 251 for index in range(size))
    member = encode_framed(data, "gzip")
    assert member[:10] == GZIP_HEADER == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
    assert member == zlib.compress(data, 6, wbits=31)  # zlib's own gzip wrapper, on Linux
    assert gzip.decompress(member) == data and gzip.decompress(member * 2) == data * 2
    assert encode_framed(data, "none") == data
