"""Fine-tuning records: the TFRecord feature cache and the input_fn that batches them.

Every task turns its examples into feature dicts whose names, dtypes and lengths are
declared once in `data_gen.records.record_schema` (sequence records for classification
and pairs, token records for NER), padded to max_seq_length; a RecordSpec says which
features are per token. They are written at their true length (the padding cut off) to
a cache file whose name carries a hash of everything the features depend on (the data
file's and vocab's SHA-256, the task, its labels, max_seq_length, lower-casing, the
example limit, ...), so any change makes a new cache. The cache is written under a
temporary name and renamed, and its JSON sidecar (written last, holding the key and the
counts) is checked before reuse.

The reader pads each batch to its longest record (Batching: optionally to a multiple, or
to max_seq_length as before; transformers' DataCollatorWithPadding and
--pad_to_max_length) and, training, can sort the records of each group of
GROUP_BATCHES batches by length (transformers' group_by_length), so that a batch of
short pairs costs what they hold, not max_seq_length.
"""
import dataclasses
import hashlib
import json
import os

import tensorflow.compat.v1 as tf

from common.file_utils import atomic_output, file_sha256, write_json_atomically
from data_gen.records import record_schema

CACHE_FORMAT_VERSION = 3  # 3: per-token features written unpadded
# Training with group_by_length sorts groups of this many batches (transformers' megabatch).
GROUP_BATCHES = 50


@dataclasses.dataclass(frozen=True)
class RecordSpec:
    """A fine-tuning record's features: lengths {name: (dtype, length)} (the schema's, at
    max_seq_length), the per-token names among them, and the id a padded input_ids holds."""
    max_seq_length: int
    lengths: dict
    token_features: tuple
    pad_id: int = 0

    @property
    def condition_size(self):
        """C of a conditional model's records, else None."""
        return self.lengths["condition"][1] if "condition" in self.lengths else None


def record_spec(kind, max_seq_length, condition_size=None, pad_id=0):
    """The RecordSpec of a task kind ("sequence" or "token"); condition_size: C of a
    conditional model; pad_id: the tokenizer's (finetune.tasks.layout.pad_id)."""
    return RecordSpec(max_seq_length, record_schema.fine_tuning_feature_lengths(
        kind, max_seq_length, condition_size),
        record_schema.fine_tuning_token_features(kind), pad_id)


@dataclasses.dataclass(frozen=True)
class Batching:
    """How the reader pads: pad_to_max_length (every batch [B, max_seq_length]) or to the
    batch's longest record rounded up to pad_to_multiple_of (1: not rounded); training
    with group_by_length sorts each group of GROUP_BATCHES batches by length first."""
    pad_to_max_length: bool = False
    pad_to_multiple_of: int = 1
    group_by_length: bool = False


def cache_key(data_file, vocab_file, **settings):
    """(key dict, 16-hex hash): the files' SHA-256 plus every setting the features depend on."""
    key = {"format_version": CACHE_FORMAT_VERSION, "data_sha256": file_sha256(data_file),
           "vocab_sha256": file_sha256(vocab_file)}
    key.update({name: value for name, value in settings.items() if value is not None})
    key_hash = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return key, key_hash


def true_length(features):
    """The number of real tokens of a task's padded record: input_mask's leading ones."""
    mask = features["input_mask"]
    length = sum(mask)
    if any(mask[length:]) or not all(mask[:length]):
        raise ValueError(f"input_mask {mask} is not ones then zeros: the record is not padded "
                         "on the right")
    return length


def _tf_feature(dtype, values):
    if dtype == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def serialize(features, spec):
    """One tf.train.Example's bytes from a task's padded {name: list}, checked against the
    RecordSpec, its per-token features cut to the record's true length (what is cut must be
    padding: zeros, pad_id in input_ids). Serialised deterministically (the feature map
    sorted by name): protobuf 6 (TensorFlow 2.21) orders a map differently in each process,
    so the default order would make the cache's bytes differ between runs and runtimes."""
    lengths = spec.lengths
    if set(features) != set(lengths):
        raise ValueError(f"features {sorted(features)} do not match the schema {sorted(lengths)}")
    for name, values in features.items():
        if len(values) != lengths[name][1]:
            raise ValueError(f"feature {name} has {len(values)} values, the schema says "
                             f"{lengths[name][1]}")
    length = true_length(features)
    for name in spec.token_features:
        padding = spec.pad_id if name == "input_ids" else 0
        if any(value != padding for value in features[name][length:]):
            raise ValueError(f"feature {name} holds values past the record's {length} real "
                             f"tokens: {list(features[name][length:])}")
    return tf.train.Example(features=tf.train.Features(feature={
        name: _tf_feature(lengths[name][0],
                          values[:length] if name in spec.token_features else values)
        for name, values in features.items()
    })).SerializeToString(deterministic=True)


def cached_records(split, cache_dir, key, key_hash, spec, make_features, log_fn=print):
    """Returns (tfrecord path, info), writing the cache unless a matching one exists.

    spec: the RecordSpec. make_features: callable() -> (iterable of the task's padded
    feature dicts, info dict); called only
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
                writer.write(serialize(feature_dict, spec))
                count += 1
    info = dict(info, key=key, num_records=count)
    write_json_atomically(info_path, info)
    log_fn(f"{split}: wrote {count} records to {record_path}")
    return record_path, info


# Nothing in these pipelines is tuned (sequential maps, a fixed prefetch), but an autotuned
# dataset still runs tf.data's model thread, and closing a training session sometimes waited
# for it to wake: 15-17 s in 3 of 9 LCQMC runs with a 21 s training phase, none in 10 runs
# without autotuning (docs/finetuning.md, "Where the time goes").
_UNTUNED = tf.data.Options()
_UNTUNED.autotune.enabled = False


def input_fn_builder(record_path, spec, batch_size, is_training, seed=None,
                     batching=Batching()):
    """An input_fn (pretrain.training.model_spec's trainers) over cached records.

    spec: the RecordSpec; batching: how batches are padded (Batching). Yields (features,
    labels): int64 features become int32 [B, S] (float32 stay float32), S the batch's
    padded length; `label_ids` is popped as the labels, [B] for sequence records, else
    [B, S]. Training: shuffled (seeded), repeated, fixed batch size, grouped by length if
    asked. Eval/predict: file order, one pass, last batch may be smaller.
    """
    lengths = spec.lengths
    dtypes = {name: tf.float32 if dtype == "float32" else tf.int64
              for name, (dtype, _) in lengths.items()}
    parse_spec = {name: tf.io.FixedLenSequenceFeature([], dtypes[name], allow_missing=True)
                  if name in spec.token_features else tf.io.FixedLenFeature([length], dtypes[name])
                  for name, (_, length) in lengths.items()}
    scalar_label = "label_ids" not in spec.token_features

    # Every dataset function here is graph ops only: none is converted by autograph (its
    # parse of their source cost about a third of a second per input_fn call).
    @tf.autograph.experimental.do_not_convert
    def decode(record):
        parsed = tf.io.parse_single_example(record, parse_spec)
        return {name: value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
                for name, value in parsed.items()}

    def padded_batch(dataset, size, drop_remainder):
        longest = spec.max_seq_length if batching.pad_to_max_length else None
        return dataset.padded_batch(
            size, drop_remainder=drop_remainder,
            padded_shapes={name: [longest] if name in spec.token_features else [length]
                           for name, (_, length) in lengths.items()},
            padding_values={name: tf.constant(spec.pad_id if name == "input_ids" else 0,
                                              tf.float32 if dtypes[name] == tf.float32
                                              else tf.int32) for name in lengths})

    @tf.autograph.experimental.do_not_convert
    def round_up(batch):
        """Pads the per-token features of a [B, S] batch to a multiple of
        pad_to_multiple_of (at most max_seq_length)."""
        multiple = batching.pad_to_multiple_of
        length = tf.shape(batch["input_ids"])[1]
        target = tf.minimum((length + multiple - 1) // multiple * multiple, spec.max_seq_length)
        return {name: tf.pad(value, [[0, 0], [0, target - length]],
                             constant_values=spec.pad_id if name == "input_ids" else 0)
                if name in spec.token_features else value for name, value in batch.items()}

    @tf.autograph.experimental.do_not_convert
    def split_labels(batch):
        labels = batch.pop("label_ids")
        return batch, tf.reshape(labels, [-1]) if scalar_label else labels

    def input_fn(params=None, input_context=None):
        dataset = tf.data.TFRecordDataset(record_path)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        local_batch = batch_size
        if input_context is not None:
            local_batch = input_context.get_per_replica_batch_size(batch_size)
        elif is_training and params and params.get("num_replicas", 1) > 1:
            local_batch = batch_size // params["num_replicas"]  # each replica pulls a batch
        if is_training:
            dataset = dataset.shuffle(50000, seed=seed, reshuffle_each_iteration=True)
        # Parsed in the pipeline's own thread: a parallel map made closing the training
        # session wait seconds after dev had been predicted in another session (7.8 s of
        # a 28 s run measured), and one record's parse costs microseconds.
        dataset = dataset.map(decode)
        if is_training:
            if batching.group_by_length:
                # within each epoch, as transformers' sampler: a group never holds a record
                # twice, and a small training set is one group per epoch
                dataset = _sorted_in_groups(dataset, local_batch * GROUP_BATCHES)
            dataset = dataset.repeat()
        dataset = padded_batch(dataset, local_batch, drop_remainder=is_training)
        if batching.pad_to_multiple_of > 1 and not batching.pad_to_max_length:
            dataset = dataset.map(round_up)
        return dataset.map(split_labels).prefetch(2).with_options(_UNTUNED)

    return input_fn


def _sorted_in_groups(dataset, group_size):
    """The records of each `group_size` consecutive ones, longest first (a stable sort, so
    equal lengths keep the shuffled order): consecutive batches then hold similar lengths."""
    @tf.autograph.experimental.do_not_convert
    def sort(group):
        order = tf.argsort(group["input_ids"].row_lengths(), direction="DESCENDING",
                           stable=True)
        return {name: tf.gather(value, order) for name, value in group.items()}
    # unbatch gives rank-0 ragged specs that padded_batch refuses; an identity map makes
    # them the plain tensors they are.
    @tf.autograph.experimental.do_not_convert
    def dense(record):
        return {name: tf.identity(value) for name, value in record.items()}
    return dataset.ragged_batch(group_size).map(sort).unbatch().map(dense)
