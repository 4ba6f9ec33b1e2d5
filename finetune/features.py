"""Fine-tuning records: the TFRecord feature cache and the Estimator input_fn.

Every task turns its examples into feature dicts whose names, dtypes and
lengths are declared once in `data_gen.records.record_schema` (sequence records for
classification and pairs, token records for NER). They are written to a cache
file whose name carries a hash of everything the features depend on (the data
file's and vocab's SHA-256, the task, its labels, max_seq_length, lower-casing,
the example limit, ...), so any change makes a new cache. The cache is written
under a temporary name and renamed, and its JSON sidecar (written last, holding
the key and the counts) is checked before reuse.
"""
import hashlib
import json
import os

import tensorflow.compat.v1 as tf

from common.file_utils import atomic_output, file_sha256, write_json_atomically
from data_gen.records import record_schema

CACHE_FORMAT_VERSION = 2


def cache_key(data_file, vocab_file, **settings):
    """(key dict, 16-hex hash): the files' SHA-256 plus every setting the features depend on."""
    key = {"format_version": CACHE_FORMAT_VERSION, "data_sha256": file_sha256(data_file),
           "vocab_sha256": file_sha256(vocab_file)}
    key.update({name: value for name, value in settings.items() if value is not None})
    key_hash = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return key, key_hash


def _tf_feature(dtype, values):
    if dtype == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def serialize(features, lengths):
    """One tf.train.Example's bytes from {name: list}, checked against {name: (dtype, length)}.
    Serialised deterministically (the feature map sorted by name): protobuf 6 (TensorFlow
    2.21) orders a map differently in each process, so the default order would make the
    feature cache's bytes differ from run to run and between runtimes."""
    if set(features) != set(lengths):
        raise ValueError(f"features {sorted(features)} do not match the schema {sorted(lengths)}")
    for name, values in features.items():
        if len(values) != lengths[name][1]:
            raise ValueError(f"feature {name} has {len(values)} values, the schema says "
                             f"{lengths[name][1]}")
    return tf.train.Example(features=tf.train.Features(feature={
        name: _tf_feature(lengths[name][0], values) for name, values in features.items()
    })).SerializeToString(deterministic=True)


def cached_records(split, cache_dir, key, key_hash, lengths, make_features, log_fn=print):
    """Returns (tfrecord path, info), writing the cache unless a matching one exists.

    make_features: callable() -> (iterable of feature dicts, info dict); called only
    when the cache is missing or stale. info (JSON-able counts) is stored beside the
    records and returned on reuse, with "num_records" added.
    """
    os.makedirs(cache_dir, exist_ok=True)
    record_path = os.path.join(cache_dir, f"{split}.{key_hash}.tfrecord")
    info_path = record_path + ".json"
    if os.path.exists(record_path) and os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as reader:
            info = json.load(reader)
        if info.get("key") == key:
            log_fn(f"{split}: reusing cached features {record_path} "
                   f"({info['num_records']} records)")
            return record_path, info
        log_fn(f"{split}: cache {record_path} does not match its key; rebuilding")
    features, info = make_features()
    count = 0
    with atomic_output(record_path) as temporary:
        with tf.io.TFRecordWriter(temporary) as writer:
            for feature_dict in features:
                writer.write(serialize(feature_dict, lengths))
                count += 1
    info = dict(info, key=key, num_records=count)
    write_json_atomically(info_path, info)
    log_fn(f"{split}: wrote {count} records to {record_path}")
    return record_path, info


def input_fn_builder(record_path, lengths, batch_size, is_training, seed=None):
    """An Estimator input_fn over cached records.

    lengths: {name: (dtype, length)} (record_schema.fine_tuning_feature_lengths).
    Yields (features, labels): int64 features become int32 [B, length] (float32
    stay float32); `label_ids` is popped as the labels, [B] for length 1 else
    [B, S]. Training: shuffled (seeded), repeated, fixed batch size. Eval/predict:
    file order, one pass, last batch may be smaller.
    """
    spec = {name: tf.io.FixedLenFeature([length], tf.float32 if dtype == "float32" else tf.int64)
            for name, (dtype, length) in lengths.items()}
    scalar_label = lengths["label_ids"][1] == 1

    def decode(record):
        parsed = tf.io.parse_single_example(record, spec)
        parsed = {name: value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
                  for name, value in parsed.items()}
        labels = parsed.pop("label_ids")
        return parsed, tf.reshape(labels, []) if scalar_label else labels

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


def record_lengths(kind, max_seq_length, condition_size=None):
    """The schema's {name: (dtype, length)} for a task kind ("sequence" or "token")."""
    return record_schema.fine_tuning_feature_lengths(kind, max_seq_length, condition_size)
