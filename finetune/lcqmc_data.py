"""LCQMC-format sentence-pair data: reading, features, TFRecord cache, input_fn.

File format: one pair per line, `text_a<TAB>text_b<TAB>label`, parsed by
data_gen.lcqmc_format (the same reader and header rule as lcqmc_to_docs):
lines that cannot be used are reported by file and line number and skipped,
and the `ReadReport` counts them, never dropping lines silently.

Conditional models (config `layer_norm_cond_size` = C): every line carries a
4th field, the condition, `text_a<TAB>text_b<TAB>label<TAB>COND`, COND being
one class id in [0, C) (fed as its one-hot vector) or C comma-separated
numbers; it becomes the float32 feature `condition` [C] (cache, input_fn) fed
to the encoder's conditional LayerNorm. A missing or bad condition, or a
condition for a model without layer_norm_cond_size, stops with PATH:LINE.
Without a condition size nothing changes: same features, cache key and files.

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

from data_gen import lcqmc_format
from common.file_utils import atomic_output, file_sha256
from data_gen.tokenization import FullTokenizer

CACHE_FORMAT_VERSION = 1
DataError = lcqmc_format.LcqmcError  # a missing or unusable LCQMC or vocab file


@dataclasses.dataclass
class PairExample:
    guid: str          # "<split>-<line number>"
    text_a: str
    text_b: str
    label: int         # 0 or 1
    condition: tuple = None  # C floats for a conditional model, else None


def read_pairs(path, split_name=None, limit=0, log_fn=print, condition_size=None):
    """Reads an LCQMC file. Returns ([PairExample], lcqmc_format.ReadReport).

    limit > 0 keeps the first `limit` usable pairs (every line is still read
    and counted). condition_size: C of a conditional model (every pair needs a
    condition), None = no condition allowed. Raises DataError when the file is
    missing, has no pair, or a condition does not fit (see parse_conditions).
    """
    pairs, report = lcqmc_format.read_pairs(path, log_fn=log_fn, condition_column=True)
    conditions = parse_conditions(pairs, str(path), condition_size)
    split_name = split_name or os.path.splitext(os.path.basename(str(path)))[0]
    if limit:
        pairs = pairs[:limit]
    log_fn(report.summary() + (f"; the first {len(pairs)} kept (limit)" if limit else ""))
    return [PairExample(f"{split_name}-{pair.line_number}", pair.text_a, pair.text_b, pair.label,
                        condition) for pair, condition in zip(pairs, conditions)], report


def parse_conditions(pairs, path, condition_size):
    """The conditions of `pairs`: a tuple of C floats each, or None each when
    condition_size is None.

    Raises DataError naming PATH:LINE of the first pair whose 4th field is
    missing, malformed, or present although condition_size is None.
    """
    expected = (f"text_a<TAB>text_b<TAB>label<TAB>CONDITION, CONDITION being a class id in "
                f"[0, {condition_size}) or {condition_size} comma-separated numbers")
    conditions, problems = [], []
    for pair in pairs:
        condition = None
        if condition_size is None:
            if pair.condition is not None:
                problems.append((pair.line_number, (
                    f"4th field {pair.condition!r} (a condition) but the model config has no "
                    "layer_norm_cond_size: to condition the model, set layer_norm_cond_size to "
                    "the condition width C in the model config (--bert_config_file); "
                    "otherwise keep 3 fields per line")))
        elif pair.condition is None:
            problems.append((pair.line_number, (
                f"no condition: the model config sets layer_norm_cond_size={condition_size} "
                f"(conditional LayerNorm), so every line needs a 4th field: {expected}")))
        else:
            try:
                condition = lcqmc_format.parse_condition(pair.condition, condition_size)
            except ValueError as error:
                problems.append((pair.line_number, (
                    f"bad condition: {error} (layer_norm_cond_size={condition_size})")))
        conditions.append(condition)
    if problems:
        line_number, reason = problems[0]
        more = len(problems) - 1
        more = f" [{more} more line(s) with a condition problem]" if more else ""
        raise DataError(f"{path}:{line_number}: {reason}{more}")
    return conditions


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
    """Returns (features, truncated) with features: dict of lists.

    input_ids, input_mask, segment_ids: int [max_seq_length]; label_ids: int [1];
    condition: float [C], only when example.condition is set.
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
    if example.condition is not None:
        features["condition"] = list(example.condition)
    return features, truncated


def cache_key(data_file, vocab_file, max_seq_length, do_lower_case, limit,
              condition_size=None):
    """Dict of everything the cached features depend on (and its short hash).

    condition_size enters the key only when set (non-conditional keys are unchanged).
    """
    key = {
        "format_version": CACHE_FORMAT_VERSION,
        "data_sha256": file_sha256(data_file),
        "vocab_sha256": file_sha256(vocab_file),
        "max_seq_length": int(max_seq_length),
        "do_lower_case": bool(do_lower_case),
        "limit": int(limit),
    }
    if condition_size is not None:
        key["condition_size"] = int(condition_size)
    key_hash = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return key, key_hash


def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def _write_atomically(path, write_fn):
    with atomic_output(path) as temporary:
        write_fn(temporary)


def build_cached_features(data_file, tokenizer, max_seq_length, cache_dir, split_name,
                          limit=0, log_fn=print, condition_size=None):
    """Returns (tfrecord_path, info) for a split, building the cache if needed.

    info: dict with num_examples, num_truncated, malformed (count), the key
    fields and the read report's summary. condition_size: C of a conditional
    model (records then carry `condition`), else None.
    """
    key, key_hash = cache_key(data_file, tokenizer.vocab_file, max_seq_length,
                              tokenizer.do_lower_case, limit, condition_size)
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

    examples, report = read_pairs(data_file, split_name, limit=limit, log_fn=log_fn,
                                  condition_size=condition_size)
    num_truncated = 0

    def write_records(path):
        nonlocal num_truncated
        with tf.io.TFRecordWriter(path) as writer:
            for example in examples:
                features, truncated = convert_example(example, tokenizer, max_seq_length)
                num_truncated += truncated
                proto = tf.train.Example(features=tf.train.Features(feature={
                    name: _float_feature(values) if name == "condition" else
                    _int64_feature(values) for name, values in features.items()}))
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


def input_fn_builder(record_path, max_seq_length, batch_size, is_training, seed=None,
                     condition_size=None):
    """An Estimator input_fn over cached features.

    Yields ({input_ids, input_mask, segment_ids: int32 [B, S]; with condition_size
    C also condition: float32 [B, C]}, label_ids int32 [B]).
    Training: shuffled (seeded), repeated, fixed batch size. Eval/predict: file
    order, one pass, last batch may be smaller.
    """
    feature_spec = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([1], tf.int64),
    }
    if condition_size is not None:
        feature_spec["condition"] = tf.io.FixedLenFeature([condition_size], tf.float32)

    def decode(record):
        parsed = tf.io.parse_single_example(record, feature_spec)
        parsed = {name: value if name == "condition" else tf.cast(value, tf.int32)
                  for name, value in parsed.items()}
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
