"""Pretraining input: TFRecord globs -> batched int32 features for the model_fn.

Features (docs/architecture.md, section 1): input_ids, input_mask,
segment_ids [B, S]; masked_lm_positions, masked_lm_ids [B, P];
masked_lm_weights [B, P] float32; next_sentence_labels [B, 1]. ALBERT's
optional `token_boundary` is not in the parse spec, so it is ignored.
"""
import json
import os

import tensorflow.compat.v1 as tf

from pretrain import strategy as strategy_lib

SIDECAR_SUFFIX = ".meta.json"


def expand_input_files(patterns):
    """Sorted, de-duplicated files for comma-separated globs, without `*.meta.json`.

    A pattern that matches no data file is an error naming the pattern.
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    files = []
    for pattern in [p.strip() for p in patterns if p and p.strip()]:
        matched = sorted(f for f in tf.io.gfile.glob(pattern) if not f.endswith(SIDECAR_SUFFIX))
        matched = [f for f in matched if not tf.io.gfile.isdir(f)]
        if not matched:
            raise ValueError(f"--input_file pattern {pattern!r} matches no TFRecord file "
                             "(did data_gen run? sidecar *.meta.json files are not data)")
        files.extend(f for f in matched if f not in files)
    if not files:
        raise ValueError("--input_file is empty: give one or more comma-separated globs")
    return files


def read_sidecar(path):
    """The `F.meta.json` dict for data file F, or None when there is none."""
    meta_path = path + SIDECAR_SUFFIX
    if not tf.io.gfile.exists(meta_path):
        return None
    with tf.io.gfile.GFile(meta_path, "r") as reader:
        text = reader.read()
    try:
        meta = json.loads(text)
    except ValueError as err:
        raise ValueError(f"metadata file {meta_path} is not valid JSON: {err}") from err
    if not isinstance(meta, dict):
        raise ValueError(f"metadata file {meta_path} must hold a JSON object")
    return meta


def detect_compression(path, meta=None):
    """'GZIP' or '' (TFRecordDataset's names): from the sidecar, else the file extension."""
    if meta is None:
        meta = read_sidecar(path)
    if meta is not None and meta.get("compression"):
        value = str(meta["compression"]).lower()
        if value not in ("none", "gzip"):
            raise ValueError(f"{path}{SIDECAR_SUFFIX}: compression={value!r} is not none|gzip")
        return "GZIP" if value == "gzip" else ""
    return "GZIP" if os.path.basename(path).endswith((".gz", ".gzip")) else ""


def feature_spec(max_seq_length, max_predictions_per_seq):
    """tf.io parse spec of one pretraining record."""
    ints = lambda n: tf.io.FixedLenFeature([n], tf.int64)  # noqa: E731
    return {
        "input_ids": ints(max_seq_length),
        "input_mask": ints(max_seq_length),
        "segment_ids": ints(max_seq_length),
        "masked_lm_positions": ints(max_predictions_per_seq),
        "masked_lm_ids": ints(max_predictions_per_seq),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": ints(1),
    }


def decode_record(record, spec):
    """Parses one serialized Example; int64 -> int32 (TPUs and smaller transfers)."""
    example = tf.io.parse_single_example(record, spec)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}


def _shard(dataset, files_count, input_context, by_file):
    if input_context is None or input_context.num_input_pipelines <= 1:
        return dataset
    if by_file and files_count < input_context.num_input_pipelines:
        return dataset
    return dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)


def input_fn_builder(input_files, max_seq_length, max_predictions_per_seq, is_training,
                     num_cpu_threads=4, compression=None, batch_size=None,
                     shuffle_buffer=1000, seed=None):
    """Returns `input_fn(params, input_context=None)` for Estimator / TPUEstimator.

    Args:
      input_files: list of files or comma-separated globs (expanded here).
      compression: None (detect per file from the sidecar or extension),
        "none" or "gzip" for all files.
      batch_size: global batch when params carry neither "batch_size"
        (TPUEstimator) nor "train_batch_size"/"eval_batch_size" (build_estimator).
    Training: files sharded per input pipeline (or records, when there are
    fewer files than pipelines), shuffled, repeated, read by parallel
    interleave, records shuffled; eval reads files in order once. Both drop
    the last partial batch so shapes are static.
    """
    files = expand_input_files(input_files)
    if compression is None:
        kinds = [detect_compression(f) for f in files]
    else:
        kinds = ["GZIP" if str(compression).lower() == "gzip" else ""] * len(files)

    def input_fn(params, input_context=None):
        params = dict(params or {})
        key = "train_batch_size" if is_training else "eval_batch_size"
        if batch_size is not None and "batch_size" not in params:
            params.setdefault(key, batch_size)
        batch = strategy_lib.input_batch_size(params, key, input_context)
        pairs = tf.data.Dataset.from_tensor_slices((tf.constant(files), tf.constant(kinds)))
        by_file = len(files) >= (input_context.num_input_pipelines if input_context else 1)
        pairs = _shard(pairs, len(files), input_context, by_file=True)

        def read(path, kind):
            return tf.data.TFRecordDataset(path, compression_type=kind)

        if is_training:
            pairs = pairs.repeat().shuffle(buffer_size=len(files), seed=seed)
            cycle = max(1, min(num_cpu_threads, len(files)))
            records = pairs.interleave(read, cycle_length=cycle, block_length=1,
                                       num_parallel_calls=tf.data.AUTOTUNE,
                                       deterministic=seed is not None)
            if not by_file:
                records = _shard(records, len(files), input_context, by_file=False)
            if shuffle_buffer and shuffle_buffer > 1:
                records = records.shuffle(buffer_size=shuffle_buffer, seed=seed)
        else:
            records = pairs.flat_map(read)
            if not by_file:
                records = _shard(records, len(files), input_context, by_file=False)
        spec = feature_spec(max_seq_length, max_predictions_per_seq)
        dataset = records.map(lambda r: decode_record(r, spec),
                              num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.batch(batch, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE)

    input_fn.files = files
    return input_fn
