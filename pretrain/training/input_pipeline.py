"""Pretraining input: TFRecord globs -> batched int32 features for the model_fn.

Features are data_gen.records.record_schema's (docs/architecture.md §1): input_ids,
input_mask, segment_ids [B, S]; masked_lm_positions, masked_lm_ids [B, P];
masked_lm_weights [B, P] float32; next_sentence_labels [B, 1]. ALBERT's
optional `token_boundary` is not in the parse spec, so it is ignored; the
span boundaries (masked_lm_span_left/right [B, P]) are parsed only for the SBO
head (span_boundaries=True), else ignored too. XLNet's records (input, seg_id,
is_masked, ...) become input_ids, input_mask, segment_ids [B, S], perm_mask [B, S, S],
target_mapping [B, P, S], target_ids, target_weights [B, P]. Globs
and compression follow common.file_utils and data_gen.records.metadata, the same
rules data_gen's own tools use (gs:// paths through tf.io.gfile).
"""
import random

import tensorflow.compat.v1 as tf

from data_gen.records import metadata
from data_gen.records import record_schema
from common.file_utils import expand_input_patterns
from pretrain.training import strategy as strategy_lib

_TF_DTYPES = {"int64": tf.int64, "float32": tf.float32}


def feature_spec(max_seq_length, max_predictions_per_seq, span_boundaries=False,
                 record_reader=None):
    """tf.io parse spec of one pretraining record: data_gen.records.record_schema's required
    features, and with span_boundaries its SPAN_BOUNDARIES (required then); with a
    family's record reader (ModelFamily.record_input), the features it reads."""
    if record_reader is not None:
        lengths = record_reader.lengths(max_seq_length, max_predictions_per_seq)
    else:
        optional = record_schema.SPAN_BOUNDARIES if span_boundaries else False
        lengths = record_schema.feature_lengths(max_seq_length, max_predictions_per_seq,
                                                with_optional=optional)
    return {name: tf.io.FixedLenFeature([length], _TF_DTYPES[dtype])
            for name, (dtype, length) in lengths.items()}


def compression_types(files, compression=None):
    """TFRecordDataset's compression_type ("GZIP" or "") of each file.

    compression: None (per file: its sidecar, else its first bytes; see
    data_gen.records.metadata.detect_compression), or "none"/"gzip" for all files.
    """
    return [metadata.TF_COMPRESSION_TYPES[metadata.detect_compression(path, requested=compression)]
            for path in files]


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
                     shuffle_buffer=1000, seed=None, skip_corrupt_records=False,
                     span_boundaries=False, record_reader=None, prepared=None):
    """Returns `input_fn(params, input_context=None)` for Estimator / TPUEstimator.

    Args:
      input_files: list of files or comma-separated globs (expanded here).
      compression: None (detect per file from the sidecar or the first bytes),
        "none" or "gzip" for all files.
      batch_size: global batch when params carry neither "batch_size"
        (TPUEstimator) nor "train_batch_size"/"eval_batch_size" (build_estimator).
      skip_corrupt_records: a file ends at its first truncated or corrupt record
        instead of stopping the run (TensorFlow's reader cannot resume past it;
        data_gen.records.tfrecord_scan counts what is skipped).
      span_boundaries: also parse masked_lm_span_left/right (for the SBO head).
      record_reader, prepared: a record reader (a family's, ModelFamily.record_input, or
        train-time masking's, pretrain.training.train_time_masking) and what its prepare()
        made of the run for this input (its prepared_for(..., is_training)); each decoded
        record becomes record_reader.features(record, prepared, key, position) (XLNet: a new
        permutation each time a record is read), key [2] int64 folded from `seed`, the input
        pipeline and the record's place in its stream; position: that place in the run's
        stream (place x pipelines + pipeline).
    Training: files sharded per input pipeline (or records, when there are
    fewer files than pipelines), shuffled, repeated, read by parallel
    interleave, records shuffled; eval reads files in order once. Both drop
    the last partial batch so shapes are static.
    """
    files = expand_input_patterns(input_files)
    kinds = compression_types(files, compression)
    record_seed = seed if seed is not None else random.SystemRandom().randrange(2 ** 31)

    def input_fn(params, input_context=None):
        params = dict(params or {})
        key = "train_batch_size" if is_training else "eval_batch_size"
        if batch_size is not None and "batch_size" not in params:
            params.setdefault(key, batch_size)
        batch = strategy_lib.input_batch_size(params, key, input_context)
        pairs = tf.data.Dataset.from_tensor_slices((tf.constant(files), tf.constant(kinds)))
        by_file = len(files) >= (input_context.num_input_pipelines if input_context else 1)
        pairs = _shard(pairs, len(files), input_context, by_file=True)

        # The dataset functions are graph ops only: not converted by autograph, whose
        # parse of their source cost about a third of a second per input_fn call.
        @tf.autograph.experimental.do_not_convert
        def read(path, kind):
            dataset = tf.data.TFRecordDataset(path, compression_type=kind)
            return dataset.ignore_errors() if skip_corrupt_records else dataset

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
        spec = feature_spec(max_seq_length, max_predictions_per_seq, span_boundaries,
                            record_reader)

        if record_reader is None:
            dataset = records.map(tf.autograph.experimental.do_not_convert(
                lambda record: decode_record(record, spec)), num_parallel_calls=tf.data.AUTOTUNE)
        else:
            # Its draws are stateless, keyed by the seed, this input pipeline and the record's
            # place in its stream (which the saved input position carries on).
            pipeline = input_context.input_pipeline_id if input_context else 0
            pipelines = input_context.num_input_pipelines if input_context else 1
            stream_key = tf.constant([record_seed, pipeline], tf.int64)

            @tf.autograph.experimental.do_not_convert
            def features(index, record):
                key = tf.random.experimental.stateless_fold_in(stream_key, index)
                return record_reader.features(decode_record(record, spec), prepared, key,
                                              index * pipelines + pipeline)
            dataset = records.enumerate().map(features, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.batch(batch, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE)

    input_fn.files = files
    return input_fn
