"""Prints pretraining TFRecords back as tokens, for humans.

    python -m data_gen.tools.inspect_records output/demo/data/sample.tfrecord -n 3 --vocab_file V

For each record: the tokens of the real (unpadded) positions, with every
masked position marked by its label:
    [MASK→北]   the input holds [MASK], the model must predict 北
    天→(北)     the input holds a random replacement 天, label 北
    京→(京)     the input kept the original token, label 京
then the segment ids, the sentence label with its meaning for the mode
(SOP / NSP), and token_boundary when the file has it (albert mode).

A mode with records of its own (the sidecar's mode, or the features the records have;
data_gen.modes.for_records) shows them through its room's inspector: XLNet records
(data_gen.modes.xlnet.xlnet_inspect) show the reuse window, then A <sep> B <sep> <cls>
after a "|", each position to predict in braces ({北}), seg_id, the label and the
predicted positions, each checked against its features and the sidecar; a record that
fails ends the run with an error after printing.

The F.meta.json sidecar, when present, supplies the defaults for the vocab
path, the compression and the mode. Plain and gzip files are read (without a
sidecar, gzip is detected from the file's first bytes). The features and the
sidecar are data_gen.records.record_schema's and data_gen.records.metadata's.
(Named inspect_records, not inspect, so it cannot shadow the standard library.)
"""
import dataclasses
import os
import re

from common import cli_options
from data_gen.records import metadata as metadata_lib
from common.file_utils import expand_input_patterns, input_exists
from data_gen import modes
from data_gen.records.record_schema import (SENTENCE_LABEL_MEANINGS, example_values,
                                            required_names)
from data_gen.text.tokenization import VocabError, load_vocab


class InspectError(ValueError):
    """The file cannot be read as pretraining TFRecords."""


def read_records(path, num_records, compression):
    """Returns up to `num_records` records of `path` as dicts feature -> list of numbers."""
    if not input_exists(path):
        raise InspectError(f"{path}: file not found")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # a human tool: TensorFlow's reader is the reference
    dataset = tf.data.TFRecordDataset(
        path, compression_type=metadata_lib.TF_COMPRESSION_TYPES[compression])
    records = []
    try:
        for index, serialized in enumerate(dataset.take(num_records)):
            example = tf.train.Example()
            try:
                example.ParseFromString(serialized.numpy())
            except Exception as error:  # protobuf's DecodeError has no stable import path
                raise InspectError(f"{path}: record {index} is not a tf.train.Example "
                                   f"({error})") from None
            records.append(example_values(example))
    except tf.errors.DataLossError as error:
        hint = (" If the file is gzip-compressed pass --compression=gzip."
                if compression != "gzip" else "")
        raise InspectError(f"{path}: corrupt or truncated TFRecord file after "
                           f"{len(records)} good record(s): {_short(error.message)}.{hint}") from None
    return records


def _short(message):
    """TensorFlow's error text without the op/function decorations."""
    message = re.sub(r"\{\{.*?\}\}|\[Op:[^\]]*\]|name: *\.?", "", message)
    return " ".join(message.split()).rstrip(".")


class TokenNames:
    """id -> token text through the vocab (or a sentencepiece model), or the bare id."""

    def __init__(self, vocab_file, sentencepiece=False):
        self.inv_vocab = None
        if vocab_file and sentencepiece:
            from data_gen.text.spm_tokenization import load_processor  # optional extra
            processor = load_processor(vocab_file)
            self.inv_vocab = {i: processor.IdToPiece(i) for i in range(processor.GetPieceSize())}
        elif vocab_file:
            self.inv_vocab = {i: t for t, i in load_vocab(vocab_file).items()}

    def __call__(self, token_id):
        if self.inv_vocab is None:
            return str(token_id)
        return self.inv_vocab.get(token_id, f"<id {token_id} outside vocab>")


def _format_unmasked(record, names, sentence_task):
    """The lines of a --train_time_masking record: its whole words, no masks yet."""
    length = sum(1 for m in record["input_mask"] if m)
    words, previous = [], None
    for token_id, word in zip(record["input_ids"][:length], record["word_ids"][:length]):
        if word and word == previous:
            words[-1] += names(token_id)
        else:
            words.append(names(token_id))
        previous = word
    meaning = SENTENCE_LABEL_MEANINGS.get(sentence_task, "")
    return [f"  words ({length} of {len(record['input_ids'])} tokens; masks drawn at train "
            "time): " + " ".join(words),
            "  segment_ids: " + " ".join(str(s) for s in record["segment_ids"][:length]),
            f"  next_sentence_labels: {record['next_sentence_labels'][0]}"
            + (f"  ({meaning})" if meaning else "")]


def format_record(record, names, sentence_task=None):
    """Human-readable lines for one record dict (see the module docstring)."""
    if "word_ids" in record and "masked_lm_positions" not in record:
        return _format_unmasked(record, names, sentence_task)
    for feature in required_names():
        if feature not in record:
            raise InspectError(f"record lacks the feature {feature!r}; is this a pretraining "
                               f"file? features present: {', '.join(sorted(record))}")
    length = sum(1 for m in record["input_mask"] if m)
    weights = record.get("masked_lm_weights", [1.0] * len(record["masked_lm_positions"]))
    labels = {}
    for position, label_id, weight in zip(record["masked_lm_positions"],
                                          record["masked_lm_ids"], weights):
        if weight > 0:
            labels[position] = label_id
    shown = []
    for position, token_id in enumerate(record["input_ids"][:length]):
        token = names(token_id)
        if position in labels:
            label = names(labels[position])
            token = f"[MASK→{label}]" if token == "[MASK]" else f"{token}→({label})"
        shown.append(token)
    label_value = record["next_sentence_labels"][0]
    meaning = SENTENCE_LABEL_MEANINGS.get(sentence_task, "")
    lines = [
        f"  tokens ({length} of {len(record['input_ids'])}, {len(labels)} masked): "
        + " ".join(shown),
        "  segment_ids: " + " ".join(str(s) for s in record["segment_ids"][:length]),
        f"  next_sentence_labels: {label_value}" + (f"  ({meaning})" if meaning else ""),
        "  masked_lm: " + " ".join(f"{p}:{names(labels[p])}" for p in sorted(labels)),
    ]
    if "token_boundary" in record:
        lines.append("  token_boundary: " +
                     " ".join(str(b) for b in record["token_boundary"][:length]))
    if "masked_lm_span_left" in record:
        spans = sorted(set(zip(record["masked_lm_span_left"][:len(labels)],
                               record["masked_lm_span_right"][:len(labels)])))
        lines.append("  masked spans (boundary positions): " +
                     " ".join(f"({left} | {right})" for left, right in spans))
    return lines


def inspect_file(path, num_records=3, vocab_file=None, compression=None, out=print):
    """Prints the first `num_records` records of `path`; returns how many were printed."""
    try:
        metadata = metadata_lib.read_metadata(path) or {}
    except metadata_lib.MetadataError as error:
        raise InspectError(f"{error}; or pass --vocab_file/--compression") from None
    if vocab_file is None:
        vocab_file = metadata.get("vocab_file")
        if vocab_file and not os.path.isfile(vocab_file):
            out(f"note: the vocab named in {metadata_lib.metadata_path(path)} ({vocab_file}) "
                "is missing; showing ids (pass --vocab_file)")
            vocab_file = None
    elif not os.path.isfile(vocab_file):
        raise InspectError(f"--vocab_file={vocab_file}: file not found")
    names = TokenNames(vocab_file, metadata.get("tokenizer") == "sentencepiece")
    if not input_exists(path):
        raise InspectError(f"{path}: file not found")
    try:
        compression = metadata_lib.detect_compression(path, metadata, compression)
    except metadata_lib.MetadataError as error:
        raise InspectError(str(error)) from None
    records = read_records(path, num_records, compression)
    mode = metadata.get("mode")
    out(f"{path}: compression={compression}, mode={mode or 'unknown (no .meta.json)'}, "
        f"vocab={vocab_file or 'none (ids shown)'}")
    inspector = modes.for_records(mode, records[0] if records else None).room.inspector
    failed = []
    for index, record in enumerate(records):
        out(f"record {index}:")
        if inspector is not None:  # the mode's own records (else BERT-style ones)
            problems = inspector.problems(record, metadata)
            lines = [f"  problem: {problem}" for problem in problems]
            if not problems or "lacks" not in problems[0]:
                lines = inspector.format(record, names, metadata) + lines
            if problems:
                failed.append(index)
        else:
            lines = format_record(record, names, metadata_lib.sentence_task(metadata))
        for line in lines:
            out(line)
    if not records:
        out(f"{path}: no records")
    if failed:
        raise InspectError(f"{path}: record(s) {', '.join(map(str, failed))} are not valid "
                           f"{inspector.invalid} (see the problem lines above)")
    return len(records)


@dataclasses.dataclass
class InspectOptions:
    """Flags of `python -m data_gen.tools.inspect_records` (files may also be given as arguments)."""
    input_file: str = cli_options.required("TFRecord file(s), plain or gzip: comma-separated "
                                           "files or globs, or positional arguments.")
    num_records: int = cli_options.option(3, "Records to print per file.", short_name="n")
    vocab_file: str = cli_options.option(None, "Vocab to turn ids into tokens (default: from "
                                         "FILE.meta.json).")
    compression: str = cli_options.option(None, "Default: from FILE.meta.json, else detected "
                                          "from the file.", choices=metadata_lib.COMPRESSIONS)


def run(options):
    """Prints the first records of every file of `options.input_file`."""
    if options.num_records < 0:
        raise InspectError(f"--num_records={options.num_records}: must be >= 0")
    for path in expand_input_patterns(options.input_file, error=InspectError):
        inspect_file(path, options.num_records, options.vocab_file, options.compression)


def main(argv=None):
    cli_options.run_main(InspectOptions, run, argv, expected=(InspectError, VocabError),
                         positional="input_file")


if __name__ == "__main__":
    main()
