"""LCQMC-format sentence-pair data: reading, features, TFRecord cache, input_fn.

File format: one pair per line, `text_a<TAB>text_b<TAB>label`, label 0 or 1,
UTF-8 (a BOM is accepted). A header line (third field not a label, e.g.
`text_a	text_b	label`) is recognised on line 1 and skipped. Every other line
that cannot be used is reported by file and line number and skipped; the
reader returns a `ReadReport` with the counts, never dropping lines silently.

Features follow google-research/bert's classifier: `[CLS] a [SEP] b [SEP]`,
segment 0 for `[CLS] a [SEP]`, segment 1 for `b [SEP]`, the longer side
truncated first. They are cached as TFRecords whose file name carries a key
made of the data file's and vocab's SHA-256, max_seq_length, lower-casing and
the example limit, so any change makes a new cache; a cache is written under
a temporary name and renamed, and its JSON sidecar (written last) is checked
before reuse.
"""
import dataclasses
import hashlib
import json
import os

import tensorflow.compat.v1 as tf

from data_gen.file_utils import atomic_output, file_sha256
from data_gen.tokenization import FullTokenizer

LABELS = ("0", "1")
MAX_REPORTED_LINES = 20
CACHE_FORMAT_VERSION = 1


class DataError(ValueError):
    """An LCQMC file is missing or holds no usable pair."""


@dataclasses.dataclass
class PairExample:
    guid: str          # "<split>-<line number>"
    text_a: str
    text_b: str
    label: int         # 0 or 1


@dataclasses.dataclass
class ReadReport:
    path: str
    lines: int = 0
    examples: int = 0
    header_skipped: bool = False
    blank_lines: int = 0
    malformed: list = dataclasses.field(default_factory=list)  # [(line_number, reason)]

    def summary(self):
        text = (f"{self.path}: {self.lines} lines, {self.examples} pairs read, "
                f"{len(self.malformed)} malformed line(s) skipped, {self.blank_lines} blank")
        return text + (", header line skipped" if self.header_skipped else "")


def _parse_line(raw, line_number):
    """Returns (fields, reason): fields=(a, b, label) or None with the reason."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 at byte {error.start} of the line"
    if line_number == 1 and line.startswith("\ufeff"):
        line = line[1:]
    line = line.rstrip("\r\n")
    fields = line.split("\t")
    if len(fields) != 3:
        return None, f"expected 3 tab-separated fields, found {len(fields)}"
    text_a, text_b, label = (field.strip() for field in fields)
    if label not in LABELS:
        return None, f"label {label!r} is not 0 or 1"
    if not text_a or not text_b:
        return None, "empty sentence"
    return (text_a, text_b, int(label)), None


def _looks_like_header(raw):
    fields = raw.decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n").split("\t")
    return len(fields) == 3 and fields[2].strip() not in LABELS and not fields[2].strip().isdigit()


def read_pairs(path, split_name=None, limit=0, log_fn=print):
    """Reads an LCQMC file. Returns ([PairExample], ReadReport).

    limit > 0 keeps the first `limit` usable pairs. Malformed lines are logged
    as `path:line: ...` (the first MAX_REPORTED_LINES individually, then a
    count) and listed in the report.
    """
    path = str(path)
    if not os.path.isfile(path):
        raise DataError(f"{path}: no such file (expected text_a<TAB>text_b<TAB>label lines)")
    split_name = split_name or os.path.splitext(os.path.basename(path))[0]
    report = ReadReport(path=path)
    examples = []
    with open(path, "rb") as reader:
        for line_number, raw in enumerate(reader, start=1):
            report.lines = line_number
            if not raw.strip():
                report.blank_lines += 1
                continue
            if line_number == 1 and _looks_like_header(raw):
                report.header_skipped = True
                continue
            fields, reason = _parse_line(raw, line_number)
            if fields is None:
                report.malformed.append((line_number, reason))
                if len(report.malformed) <= MAX_REPORTED_LINES:
                    log_fn(f"{path}:{line_number}: malformed line skipped: {reason}")
                continue
            if limit and len(examples) >= limit:
                continue  # keep counting lines so the report stays complete
            examples.append(PairExample(f"{split_name}-{line_number}", *fields))
    report.examples = len(examples)
    if len(report.malformed) > MAX_REPORTED_LINES:
        log_fn(f"{path}: ... and {len(report.malformed) - MAX_REPORTED_LINES} more malformed lines")
    log_fn(report.summary())
    if not examples:
        raise DataError(f"{path}: no usable text_a<TAB>text_b<TAB>label line "
                        f"({len(report.malformed)} malformed, {report.blank_lines} blank)")
    return examples, report


def truncate_pair(tokens_a, tokens_b, max_tokens):
    """Pops tokens from the end of the longer list (b on a tie) until both fit.

    Returns True if anything was removed. Lists are modified in place.
    """
    truncated = False
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        longer.pop()
        truncated = True
    return truncated


def convert_example(example, tokenizer, max_seq_length):
    """Returns (features, truncated) with features: dict of int lists.

    input_ids, input_mask, segment_ids: [max_seq_length]; label_ids: [1].
    """
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for "
                         "[CLS] a [SEP] b [SEP]; use at least 5")
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b)
    truncated = truncate_pair(tokens_a, tokens_b, max_seq_length - 3)
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
    segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = max_seq_length - len(input_ids)
    features = {
        "input_ids": input_ids + [0] * padding,
        "input_mask": [1] * len(input_ids) + [0] * padding,
        "segment_ids": segment_ids + [0] * padding,
        "label_ids": [example.label],
    }
    return features, truncated


def cache_key(data_file, vocab_file, max_seq_length, do_lower_case, limit):
    """Dict of everything the cached features depend on (and its short hash)."""
    key = {
        "format_version": CACHE_FORMAT_VERSION,
        "data_sha256": file_sha256(data_file),
        "vocab_sha256": file_sha256(vocab_file),
        "max_seq_length": int(max_seq_length),
        "do_lower_case": bool(do_lower_case),
        "limit": int(limit),
    }
    key_hash = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return key, key_hash


def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _write_atomically(path, write_fn):
    with atomic_output(path) as temporary:
        write_fn(temporary)


def build_cached_features(data_file, tokenizer, max_seq_length, cache_dir, split_name,
                          limit=0, log_fn=print):
    """Returns (tfrecord_path, info) for a split, building the cache if needed.

    info: dict with num_examples, num_truncated, malformed (count), the key
    fields and the read report's summary.
    """
    key, key_hash = cache_key(data_file, tokenizer.vocab_file, max_seq_length,
                              tokenizer.do_lower_case, limit)
    os.makedirs(cache_dir, exist_ok=True)
    record_path = os.path.join(cache_dir, f"{split_name}.{key_hash}.tfrecord")
    info_path = record_path + ".json"
    if os.path.exists(record_path) and os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as reader:
            info = json.load(reader)
        if info.get("key") == key:
            log_fn(f"{split_name}: reusing cached features {record_path} "
                   f"({info['num_examples']} examples)")
            return record_path, info
        log_fn(f"{split_name}: cache {record_path} does not match its key; rebuilding")

    examples, report = read_pairs(data_file, split_name, limit=limit, log_fn=log_fn)
    num_truncated = 0

    def write_records(path):
        nonlocal num_truncated
        with tf.io.TFRecordWriter(path) as writer:
            for example in examples:
                features, truncated = convert_example(example, tokenizer, max_seq_length)
                num_truncated += truncated
                proto = tf.train.Example(features=tf.train.Features(feature={
                    name: _int64_feature(values) for name, values in features.items()}))
                writer.write(proto.SerializeToString())

    _write_atomically(record_path, write_records)
    info = {"key": key, "data_file": os.path.abspath(data_file),
            "vocab_file": os.path.abspath(tokenizer.vocab_file),
            "num_examples": len(examples), "num_truncated": num_truncated,
            "malformed": len(report.malformed), "read_summary": report.summary(),
            "label_counts": [sum(e.label == 0 for e in examples), sum(e.label == 1 for e in examples)]}

    def write_info(path):
        with open(path, "w", encoding="utf-8") as writer:
            json.dump(info, writer, ensure_ascii=False, indent=1)

    _write_atomically(info_path, write_info)
    log_fn(f"{split_name}: wrote {len(examples)} features to {record_path} "
           f"({num_truncated} truncated to {max_seq_length} tokens)")
    return record_path, info


def input_fn_builder(record_path, max_seq_length, batch_size, is_training, seed=None):
    """An Estimator input_fn over cached features.

    Yields ({input_ids, input_mask, segment_ids: int32 [B, S]}, label_ids int32 [B]).
    Training: shuffled (seeded), repeated, fixed batch size. Eval/predict: file
    order, one pass, last batch may be smaller.
    """
    feature_spec = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([1], tf.int64),
    }

    def decode(record):
        parsed = tf.io.parse_single_example(record, feature_spec)
        parsed = {name: tf.cast(value, tf.int32) for name, value in parsed.items()}
        label = tf.reshape(parsed.pop("label_ids"), [])
        return parsed, label

    def input_fn(params=None, input_context=None):
        dataset = tf.data.TFRecordDataset(record_path)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        if is_training:
            dataset = dataset.shuffle(50000, seed=seed, reshuffle_each_iteration=True).repeat()
        dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        local_batch = batch_size
        if input_context is not None:
            local_batch = input_context.get_per_replica_batch_size(batch_size)
        elif is_training and params and params.get("num_replicas", 1) > 1:
            local_batch = batch_size // params["num_replicas"]  # each replica pulls a batch
        dataset = dataset.batch(local_batch, drop_remainder=is_training)
        return dataset.prefetch(2)

    return input_fn


def load_tokenizer(vocab_file, do_lower_case=True):
    if not vocab_file or not os.path.isfile(vocab_file):
        raise DataError(f"vocab file {vocab_file!r} not found; pass --vocab_file, the same "
                        "vocab the model was pretrained with")
    return FullTokenizer(vocab_file, do_lower_case=do_lower_case)
