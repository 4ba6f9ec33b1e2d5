"""Hand-encoded `tf.train.Example` protobufs (no TensorFlow import needed).

Wire format used (protobuf encoding, all length-delimited fields are tag,
varint length, payload):
  Example   { Features features = 1; }
  Features  { map<string, Feature> feature = 1; }   entry: key = 1, value = 2
  Feature   { BytesList = 1 | FloatList = 2 | Int64List = 3 }
  Int64List { repeated int64 value = 1 [packed]; }   varints
  FloatList { repeated float value = 1 [packed]; }   little-endian float32
Map entries are written in sorted key order, so output bytes are stable.
"""
import struct


def encode_varint(value):
    """Protobuf varint of an int64 (negative values take 10 bytes)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(field_number, payload):
    return encode_varint((field_number << 3) | 2) + encode_varint(len(payload)) + payload


def int64_feature(packed_varints):
    """Feature bytes for an Int64List whose packed payload is given."""
    return _length_delimited(3, _length_delimited(1, packed_varints))


def float_feature(packed_floats):
    """Feature bytes for a FloatList whose packed little-endian payload is given."""
    return _length_delimited(2, _length_delimited(1, packed_floats))


def encode_example(features):
    """Serializes {name: feature_bytes} (from int64_feature/float_feature)."""
    entries = []
    for name in sorted(features):
        entry = _length_delimited(1, name.encode("utf-8")) + _length_delimited(2, features[name])
        entries.append(_length_delimited(1, entry))
    return _length_delimited(1, b"".join(entries))


class InstanceEncoder:
    """Serializes pretraining instances to Example bytes, padded as BERT does.

    Features: input_ids, input_mask, segment_ids [max_seq_length];
    masked_lm_positions, masked_lm_ids [max_predictions_per_seq];
    masked_lm_weights float [max_predictions_per_seq]; next_sentence_labels [1];
    token_boundary [max_seq_length] when with_token_boundary.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size,
                 with_token_boundary=False):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.with_token_boundary = with_token_boundary
        table_size = max(vocab_size, max_seq_length, 2)
        self._varints = [encode_varint(value) for value in range(table_size)]

    def _packed(self, values, length):
        """Packed varints of `values` padded with zeros to `length`."""
        varints = self._varints
        try:
            body = b"".join([varints[value] for value in values])
        except IndexError:
            body = b"".join([encode_varint(value) for value in values])
        return body + b"\x00" * (length - len(values))

    def encode(self, input_ids, segment_ids, masked_positions, masked_ids, label,
               boundary=None):
        """Returns the serialized Example of one instance (lists of int, unpadded)."""
        seq_len = len(input_ids)
        if seq_len > self.max_seq_length:
            raise ValueError(f"instance of {seq_len} tokens exceeds max_seq_length "
                             f"{self.max_seq_length}")
        if len(masked_positions) > self.max_predictions_per_seq:
            raise ValueError(f"{len(masked_positions)} predictions exceed "
                             f"max_predictions_per_seq {self.max_predictions_per_seq}")
        max_len = self.max_seq_length
        max_pred = self.max_predictions_per_seq
        num_masked = len(masked_positions)
        features = {
            "input_ids": int64_feature(self._packed(input_ids, max_len)),
            "input_mask": int64_feature(b"\x01" * seq_len + b"\x00" * (max_len - seq_len)),
            "segment_ids": int64_feature(self._packed(segment_ids, max_len)),
            "masked_lm_positions": int64_feature(self._packed(masked_positions, max_pred)),
            "masked_lm_ids": int64_feature(self._packed(masked_ids, max_pred)),
            "masked_lm_weights": float_feature(
                struct.pack("<f", 1.0) * num_masked + b"\x00\x00\x00\x00" * (max_pred - num_masked)),
            "next_sentence_labels": int64_feature(encode_varint(label)),
        }
        if self.with_token_boundary:
            features["token_boundary"] = int64_feature(self._packed(boundary, max_len))
        return encode_example(features)
