"""Hand-encoded `tf.train.Example` protobufs (no TensorFlow import needed).

Wire format used (protobuf encoding, all length-delimited fields are tag,
varint length, payload):
  Example   { Features features = 1; }
  Features  { map<string, Feature> feature = 1; }   entry: key = 1, value = 2
  Feature   { BytesList = 1 | FloatList = 2 | Int64List = 3 }
  Int64List { repeated int64 value = 1 [packed]; }   varints
  FloatList { repeated float value = 1 [packed]; }   little-endian float32
Map entries are written in sorted key order, so output bytes are stable.

The C module data_gen.native._records (when built) encodes the same bytes;
`use_native` arguments here and in masking.py pick it: None = when available
(see data_gen.native.resolve; ZH_PRETRAIN_PURE_PYTHON=1 disables it),
True = the C module (ImportError if not built), False = pure Python.
"""
import struct

from data_gen import native
from data_gen.records import record_schema


def records_module(use_native=None):
    """The C module to use, or None for pure Python (see the module doc)."""
    return native.resolve("_records", use_native)


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


_SMALL_VARINTS = [encode_varint(value) for value in range(1 << 14)]


def _varint(value):
    return _SMALL_VARINTS[value] if 0 <= value < (1 << 14) else encode_varint(value)


def _length_delimited(field_number, payload):
    return b"".join((_varint((field_number << 3) | 2), _varint(len(payload)), payload))


_KEY_FIELDS = {}


def _key_field(name):
    field = _KEY_FIELDS.get(name)
    if field is None:
        field = _KEY_FIELDS[name] = _length_delimited(1, name.encode("utf-8"))
    return field


class InstanceEncoder:
    """Serializes pretraining instances to Example bytes, padded as BERT does.

    The features, their dtypes and lengths are data_gen.records.record_schema's
    (the optional ones: token_boundary when with_token_boundary, the span
    boundaries when with_span_boundaries).
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size,
                 with_token_boundary=False, use_native=None, with_span_boundaries=False):
        self._native = records_module(use_native)
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.with_token_boundary = with_token_boundary
        self.with_span_boundaries = with_span_boundaries
        # (name, Feature's list tag) in sorted key order, as protobuf's deterministic
        # serialization writes a map.
        optional = ((record_schema.TOKEN_BOUNDARY if with_token_boundary else ())
                    + (record_schema.SPAN_BOUNDARIES if with_span_boundaries else ()))
        features = record_schema.feature_lengths(max_seq_length, max_predictions_per_seq,
                                                 with_optional=optional)
        self._layout = [(name, _LIST_TAGS[dtype]) for name, (dtype, _) in sorted(features.items())]
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
               boundary=None, span_left=None, span_right=None):
        """Returns the serialized Example of one instance (lists of int, unpadded)."""
        if self._native is not None and not self.with_span_boundaries:
            record = self._native.encode(input_ids, segment_ids, masked_positions, masked_ids,
                                         label, boundary, self.max_seq_length,
                                         self.max_predictions_per_seq, self.with_token_boundary)
            if record is not NotImplemented:  # else inputs the C path does not take
                return record
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
        payloads = {
            "input_ids": self._packed(input_ids, max_len),
            "input_mask": b"\x01" * seq_len + b"\x00" * (max_len - seq_len),
            "segment_ids": self._packed(segment_ids, max_len),
            "masked_lm_positions": self._packed(masked_positions, max_pred),
            "masked_lm_ids": self._packed(masked_ids, max_pred),
            "masked_lm_weights": (_FLOAT_ONE * num_masked
                                  + b"\x00\x00\x00\x00" * (max_pred - num_masked)),
            "next_sentence_labels": encode_varint(label),
        }
        if self.with_token_boundary:
            payloads["token_boundary"] = self._packed(boundary, max_len)
        if self.with_span_boundaries:
            payloads["masked_lm_span_left"] = self._packed(span_left, max_pred)
            payloads["masked_lm_span_right"] = self._packed(span_right, max_pred)
        entries = [_feature_entry(name, tag, payloads[name]) for name, tag in self._layout]
        body = b"".join(entries)
        return b"".join((b"\x0a", _varint(len(body)), body))


class WordIdsEncoder:
    """Serializes an instance unmasked, with the whole word of each token
    (record_schema.TRAIN_TIME_MASKING_FEATURES), padded to max_seq_length; in C when built
    (data_gen.native._records.encode_word_ids, the same bytes)."""

    def __init__(self, max_seq_length, vocab_size, use_native=None):
        self._native = records_module(use_native)
        self.max_seq_length = max_seq_length
        self._varints = varint_table(max(vocab_size, max_seq_length + 1, 2))

    def _packed(self, values):
        if 0 <= min(values, default=0) and max(values, default=0) < 0x80:  # one byte each
            body = bytes(values)
        elif 0 <= min(values) and max(values) < len(self._varints):
            body = b"".join([self._varints[value] for value in values])
        else:
            body = b"".join([encode_varint(value) for value in values])
        return body + b"\x00" * (self.max_seq_length - len(values))

    def encode(self, input_ids, segment_ids, starts, label, do_whole_word_mask=True):
        """The serialized Example of one instance: lists of int, unpadded, one length;
        starts as data_gen.modes.mlm.masking takes them (word_ids_of numbers the words)."""
        if self._native is not None:
            record = self._native.encode_word_ids(input_ids, segment_ids, starts, label,
                                                  self.max_seq_length, do_whole_word_mask)
            if record is not NotImplemented:  # else inputs the C path does not take
                return record
        if len(input_ids) > self.max_seq_length:
            raise ValueError(f"instance of {len(input_ids)} tokens exceeds max_seq_length "
                             f"{self.max_seq_length}")
        return int64_example({
            "input_ids": self._packed(input_ids),
            "input_mask": b"\x01" * len(input_ids) + b"\x00" * (self.max_seq_length
                                                                 - len(input_ids)),
            "segment_ids": self._packed(segment_ids),
            "word_ids": self._packed(word_ids_of(starts, do_whole_word_mask)),
            "next_sentence_labels": encode_varint(label),
        })


def word_ids_of(starts, do_whole_word_mask=True):
    """[len(starts)] 1-based whole-word index of each position, 0 where no unit covers it:
    the units of data_gen.modes.mlm.masking.whole_word_units(starts, do_whole_word_mask)
    numbered in order (starts: 1 begins a unit, 0 continues it, -1 special)."""
    word_ids, count, current = [], 0, 0
    for start in starts:
        if start < 0:
            current = 0  # a special, and what would continue it, belong to no unit
        elif start or not do_whole_word_mask:
            count += 1
            current = count
        word_ids.append(current)
    return word_ids


_FLOAT_ONE = struct.pack("<f", 1.0)
_LIST_TAGS = {"int64": b"\x1a", "float32": b"\x12"}  # Feature.int64_list = 3, float_list = 2


def _feature_entry(name, list_tag, payload):
    """Bytes of one `feature` map entry: key name, value Feature{list_tag: payload}."""
    key_field = _key_field(name)
    inner_prefix = _varint(len(payload))
    list_length = 1 + len(inner_prefix) + len(payload)
    list_prefix = _varint(list_length)
    feature_length = 1 + len(list_prefix) + list_length
    feature_prefix = _varint(feature_length)
    entry_length = len(key_field) + 1 + len(feature_prefix) + feature_length
    return b"".join((b"\x0a", _varint(entry_length), key_field, b"\x12", feature_prefix,
                     list_tag, list_prefix, b"\x0a", inner_prefix, payload))


def varint_table(size):
    """[encode_varint(v) for v < size]: the packed varints of small values, looked up."""
    return [encode_varint(value) for value in range(size)]


def int64_example(packed):
    """Example bytes of int64 features given as {name: packed varints}, in sorted key order
    (as InstanceEncoder writes them)."""
    body = b"".join([_feature_entry(name, _LIST_TAGS["int64"], packed[name])
                     for name in sorted(packed)])
    return b"".join((b"\x0a", _varint(len(body)), body))
