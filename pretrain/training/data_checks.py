"""Checks of the input data against the flags and model config, before any graph.

Every input file F is checked through its sidecar `F.meta.json` (written by
data_gen) and through its first record (which also proves the file is
readable, non-empty and not corrupt). Files without a sidecar, e.g. made by
google-research/bert's script, get a warning and the checks the first record
allows. Any mismatch raises `DataCheckError` naming the file and the value.
Features, sidecar fields and compression are data_gen.records.record_schema's and
data_gen.records.metadata's, as the writer uses them.

A record that goes bad later in a file surfaces during training as
TensorFlow's DataLossError; `describe_corrupt_input` then finds and names the
file, and `account_for_damage` counts what `--skip_corrupt_records` skips.
"""
import numpy as np
import tensorflow.compat.v1 as tf
from absl import logging

from data_gen.records import metadata
from common import model_limits
from data_gen.records import record_schema
from data_gen.records import tfrecord_scan
from common.file_utils import SIDECAR_SUFFIX, expand_input_patterns
from pretrain.models import registry
from pretrain.training import train_time_masking


class DataCheckError(ValueError):
    """Input data that does not fit the flags or the model config."""


def read_first_record(path, compression):
    """The first record's features as {name: np.ndarray}; errors name the file."""
    try:
        if tf.executing_eagerly():
            dataset = tf.data.TFRecordDataset(path, compression_type=compression).take(1)
            records = [r.numpy() for r in dataset]
        else:
            records = _graph_take(path, compression)
    except (tf.errors.DataLossError, tf.errors.OpError) as err:
        kind = "GZIP" if compression else "uncompressed"
        raise DataCheckError(f"{path}: cannot read the first record as {kind} TFRecord "
                             f"(corrupt or truncated file?): {err.message.splitlines()[0]}"
                             ) from None
    if not records:
        raise DataCheckError(f"{path}: the file is empty (no records); re-run data_gen or "
                             "remove it from --input_file")
    example = tf.train.Example()
    try:
        example.ParseFromString(records[0])
    except Exception as err:  # protobuf DecodeError
        raise DataCheckError(f"{path}: first record is not a tf.train.Example ({err})") from None
    return {name: np.asarray(values)
            for name, values in record_schema.example_values(example).items()}


def _graph_take(path, compression):
    """First record (list of 0 or 1 bytes) when eager execution is disabled."""
    with tf.Graph().as_default():
        dataset = tf.data.TFRecordDataset(path, compression_type=compression).take(1)
        element = tf.data.make_one_shot_iterator(dataset).get_next()
        with tf.Session() as sess:
            try:
                return [sess.run(element)]
            except tf.errors.OutOfRangeError:
                return []


def expected_sentence_task(use_sentence_head):
    return "sop/nsp" if use_sentence_head else "none"


def _check_meta(path, meta, flags):
    """Sidecar fields vs flags; returns the list of problems (strings)."""
    problems = []
    where = metadata.metadata_path(path)
    family = registry.family(flags.get("model_type") or "bert")
    if meta.get("mode") is not None and meta["mode"] not in family.data_modes:
        wanted = "/".join(family.data_modes)
        others = [name for name in registry.model_types()
                  if meta["mode"] in registry.family(name).data_modes]
        problems.append(
            f"{where}: mode={meta['mode']} data, but model_type {family.model_type} trains on "
            f"--mode={wanted} data; make them with data_gen --mode={family.data_modes[0]}"
            + (f", or train a {'/'.join(others)} model on these" if others else ""))
    vocab_size = flags["vocab_size"]
    if meta.get("max_token_id") is not None and int(meta["max_token_id"]) >= vocab_size:
        problems.append(f"{where}: max_token_id={meta['max_token_id']} is not below the model's "
                        f"vocab_size={vocab_size} (data made with a larger vocab: "
                        f"{meta.get('vocab_file', '?')})")
    elif meta.get("vocab_size") is not None and int(meta["vocab_size"]) > vocab_size:
        problems.append(f"{where}: vocab_size={meta['vocab_size']} is larger than the model's "
                        f"vocab_size={vocab_size}")
    task = metadata.sentence_task(meta)
    head = flags.get("use_sentence_head")
    if task is not None and head is not None:
        if head and task == "none":
            problems.append(f"{where}: mode={meta.get('mode')} (sentence_task=none) has no "
                            "sentence labels, but the sentence (SOP/NSP) head is on; turn it off "
                            "(--sentence_head=false) or make albert/bert-mode data")
        if not head and task in ("sop", "nsp"):
            problems.append(f"{where}: mode={meta.get('mode')} (sentence_task={task}) trains a "
                            "sentence head, but it is off; use --sentence_head=true or roberta "
                            "data")
    return problems


def _check_record(path, record, flags):
    """First-record shapes and ids vs flags; returns the list of problems."""
    problems = []
    reader = flags.get("record_reader") or registry.family(
        flags.get("model_type") or "bert").record_reader
    if reader is not None:
        lengths = reader.lengths(flags["max_seq_length"], flags["max_predictions_per_seq"])
        required = list(lengths)

        def length_flag(name):
            return "--max_seq_length" if lengths[name][1] == flags["max_seq_length"] else None
    else:
        lengths = record_schema.feature_lengths(flags["max_seq_length"],
                                                flags["max_predictions_per_seq"],
                                                with_optional=True)
        required = record_schema.required_names()
        length_flag = record_schema.length_flag
    for name, (_, length) in lengths.items():
        if name not in record:
            if name in required:
                problems.append(f"{path}: first record has no feature {name!r} (not "
                                "pretraining data?)")
        elif record[name].size != length:
            flag = length_flag(name)
            expected = f"{flag}={length}" if flag else f"the format's {length}"
            problems.append(f"{path}: feature {name} has length {record[name].size} but "
                            f"{expected}")
    for name in ("input_ids", "masked_lm_ids", "input", "target"):
        if name in record and record[name].size and int(record[name].max()) >= flags["vocab_size"]:
            problems.append(f"{path}: first record has {name} up to {int(record[name].max())}, "
                            f"not below the model's vocab_size={flags['vocab_size']}")
    if "segment_ids" in record and record["segment_ids"].size:
        type_vocab = flags.get("type_vocab_size")
        if type_vocab and int(record["segment_ids"].max()) >= type_vocab:
            problems.append(f"{path}: segment_ids up to {int(record['segment_ids'].max())} but "
                            f"type_vocab_size={type_vocab}")
    return problems


SPAN_DATA_ADVICE = ("make the data with python -m data_gen.create_pretraining_data "
                    "--masking=span, or train without --span_boundary_objective")


def _span_boundary_gap(path, meta, record):
    """Why file `path` cannot feed the SBO head (a phrase naming the file), or None.

    The sidecar must say has_span_boundaries=true; without a sidecar, the first
    record must hold record_schema.SPAN_BOUNDARIES.
    """
    if meta is not None and not meta.get("has_span_boundaries"):
        where = metadata.metadata_path(path)
        if "has_span_boundaries" not in meta:
            return f"{where} has no has_span_boundaries field (data made before --masking=span)"
        return (f"{where} says has_span_boundaries={_json_bool(meta['has_span_boundaries'])} "
                f"(masking={meta.get('masking', '?')})")
    absent = [name for name in record_schema.SPAN_BOUNDARIES if name not in record]
    if absent:
        return f"{path}: first record has no {' / '.join(absent)} feature"
    return None


def _json_bool(value):
    return "true" if value is True else "false" if value is False else repr(value)


def _span_boundary_message(gaps):
    more = f" (and {len(gaps) - 1} more file(s))" if len(gaps) > 1 else ""
    return (f"--span_boundary_objective needs span boundaries in the data, but {gaps[0]}"
            f"{more}; {SPAN_DATA_ADVICE}")


DEFAULT_LENGTHS = {"max_seq_length": 128, "max_predictions_per_seq": 20}  # Google's defaults
LENGTH_FLAGS = ("max_seq_length", "max_predictions_per_seq")


def _length_mismatches(files, flags):
    """One line per length flag that differs from what the sidecars say the data holds
    (instead of one per file and feature), with the fix: the flag defaults to the data's."""
    lines = []
    for key in LENGTH_FLAGS:
        made = {}
        for path in files:
            try:
                meta = metadata.read_metadata(path) or {}
            except metadata.MetadataError:
                continue  # named by the file's own check
            if meta.get(key) is not None and int(meta[key]) != int(flags[key]):
                made.setdefault(int(meta[key]), []).append(path)
        for value, paths in sorted(made.items()):
            more = f" and {len(paths) - 1} more file(s)" if len(paths) > 1 else ""
            lines.append(f"--{key}={flags[key]}, but the data was made with {key}={value} "
                         f"({metadata.metadata_path(paths[0])}{more}): drop the flag, it "
                         f"defaults to the data's, or remake the data with --{key}="
                         f"{flags[key]}")
    return lines


def lengths_from_data(input_patterns, **lengths):
    """Fills the lengths given as None from the first input file's sidecar.

    `lengths`: max_seq_length / max_predictions_per_seq (None = from the data).
    Without a sidecar, Google's defaults (128 / 20); check_input_data then
    compares them with the first record. A sidecar's null (train-time-masked records have
    no prediction slots) leaves the length None for the run to choose.
    """
    missing = [name for name, value in lengths.items() if value is None]
    if not missing:
        return lengths
    files = expand_input_patterns(input_patterns, error=DataCheckError)
    meta = metadata.read_metadata(files[0]) or {}
    for name in missing:
        if name in meta and meta[name] is None:
            continue
        lengths[name] = int(meta.get(name, DEFAULT_LENGTHS[name]))
        logging.info("--%s=%d (from %s)", name, lengths[name],
                     metadata.metadata_path(files[0]) if name in meta else "Google's default")
    return lengths


def unmasked_inputs(input_patterns, compression=None):
    """Whether the first file of `input_patterns` holds train-time-masked records
    (pretrain.training.train_time_masking.is_unmasked: its sidecar, else its first record)."""
    path = expand_input_patterns(input_patterns, error=DataCheckError)[0]
    meta = metadata.read_metadata(path)
    record = {}
    if meta is None:
        kind = metadata.detect_compression(path, {}, compression)
        record = read_first_record(path, metadata.TF_COMPRESSION_TYPES[kind])
    return train_time_masking.is_unmasked(meta, record)


def check_input_data(input_patterns, max_seq_length, max_predictions_per_seq, bert_config,
                     use_sentence_head=None, compression=None, span_boundary_objective=False,
                     bert_config_file=None, record_reader=None):
    """Checks every file of `input_patterns`; returns (files, metas).

    Args:
      bert_config: the model's BertConfig (vocab_size, max_position_embeddings,
        type_vocab_size).
      use_sentence_head: whether the model trains the SOP/NSP head (None: skip
        that check).
      span_boundary_objective: the SBO head is on, so every file must carry span
        boundaries (sidecar has_span_boundaries, else the first record's features).
      bert_config_file: the config's path, named when --max_seq_length is longer
        than the model allows (common.model_limits).
      record_reader: the reader whose features the records must have (default: the
        family's, else record_schema.FEATURES).
    Raises:
      DataCheckError listing every problem found (file and value named); data
      without span boundaries alone gives a one-line message saying how to make it.
    """
    too_long = model_limits.length_error(
        max_seq_length, bert_config.to_dict(),
        "--bert_config_file" + (f"={bert_config_file}" if bert_config_file else ""))
    if too_long:
        raise DataCheckError(too_long)
    files = expand_input_patterns(input_patterns, error=DataCheckError)
    flags = dict(max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                 vocab_size=bert_config.vocab_size, use_sentence_head=use_sentence_head,
                 type_vocab_size=bert_config.type_vocab_size,
                 model_type=getattr(bert_config, "model_type", None),
                 record_reader=record_reader)
    problems, metas, without_sidecar, span_gaps = [], [], [], []
    problems.extend(_length_mismatches(files, flags))
    mismatched = {key for key in LENGTH_FLAGS
                  if any(problem.startswith(f"--{key}=") for problem in problems)}
    for path in files:
        try:
            meta = metadata.read_metadata(path)
            kind = metadata.detect_compression(path, meta or {}, compression)
        except metadata.MetadataError as err:
            problems.append(str(err))
            metas.append(None)
            continue
        metas.append(meta)
        if meta is None:
            without_sidecar.append(path)
        else:
            problems.extend(_check_meta(path, meta, flags))
        try:
            record = read_first_record(path, metadata.TF_COMPRESSION_TYPES[kind])
        except DataCheckError as err:
            problems.append(str(err))
            continue
        problems.extend(problem for problem in _check_record(path, record, flags)
                        if not any(f"--{key}=" in problem for key in mismatched))
        gap = _span_boundary_gap(path, meta, record) if span_boundary_objective else None
        if gap:
            span_gaps.append(gap)
    if without_sidecar:
        logging.warning("%d input file(s) have no %s sidecar (not written by data_gen?); "
                        "checked from their first record only: %s", len(without_sidecar),
                        SIDECAR_SUFFIX, ", ".join(without_sidecar[:5]))
    if span_gaps:
        if not problems:
            raise DataCheckError(_span_boundary_message(span_gaps))
        problems.insert(0, _span_boundary_message(span_gaps))
    if problems:
        head = f"input data does not fit the flags/model config ({len(problems)} problem(s)):"
        raise DataCheckError("\n  ".join([head] + problems[:20]))
    return files, metas


def infer_sentence_task(metas):
    """'none' | 'sop' | 'nsp' if every sidecar agrees, else None."""
    tasks = {metadata.sentence_task(m) for m in metas if m}
    return tasks.pop() if len(tasks) == 1 else None


SKIP_FLAG_ADVICE = ("regenerate the file, leave it out of the input, or pass "
                    "--skip_corrupt_records to read each file up to its first bad record and "
                    "count what is skipped")


def describe_corrupt_input(files, compression, error):
    """The message for a DataLossError met while reading `files`: which file, where, what to do."""
    damaged = tfrecord_scan.find_damaged(files, compression)
    if not damaged:  # not in the framing (e.g. a remote read failed): TensorFlow's own words
        return (f"cannot read the input records ({error.message.splitlines()[0]}) in one of "
                f"{len(files)} file(s): {', '.join(files[:5])}; {SKIP_FLAG_ADVICE}")
    return (f"corrupt input ({len(damaged)} damaged file(s)): "
            + "; ".join(scan.describe() for scan in damaged) + f". To go on: {SKIP_FLAG_ADVICE}")


def account_for_damage(files, compression):
    """Reads every file once; logs and returns what each pass over the data will skip.

    Returns {"damaged_files": [description, ...], "records_skipped_per_pass": int},
    counting the bad record itself and the intact ones after it.
    """
    damaged = tfrecord_scan.find_damaged(files, compression)
    skipped = sum(1 + scan.records_after_problem for scan in damaged)
    for scan in damaged:
        logging.warning("--skip_corrupt_records: %s", scan.describe())
    logging.info("--skip_corrupt_records: %d of %d input file(s) damaged; %d record(s) skipped "
                 "per pass over the data", len(damaged), len(files), skipped)
    return {"damaged_files": [scan.describe() for scan in damaged],
            "records_skipped_per_pass": skipped}
