"""The F.meta.json sidecar beside every data file F (docs/architecture.md §2).

Written here by data_gen (`build_metadata`, `write_metadata`); read here by
every reader (`read_metadata`), which also takes from it the file's sentence
task and compression (`sentence_task`, `detect_compression`). pretrain
imports this module; it needs no TensorFlow except for remote (gs://) paths.
"""
import json
import os

from common.file_utils import (SIDECAR_SUFFIX, input_exists, is_remote, open_input,
                                 write_json_atomically)

FORMAT_VERSION = 1
TOOL = "data_gen.create_pretraining_data"
COMPRESSIONS = ("none", "gzip")
TF_COMPRESSION_TYPES = {"none": "", "gzip": "GZIP"}  # tf.data.TFRecordDataset's names
GZIP_MAGIC = b"\x1f\x8b\x08"  # gzip header: magic and the deflate method


class MetadataError(ValueError):
    """A sidecar that cannot be used (not JSON, not an object, a bad value)."""


def metadata_path(output_path):
    return output_path + SIDECAR_SUFFIX


def build_metadata(config, mode, vocab_size, vocab_sha256, max_token_id, file_counts,
                   run_counts, extra=None):
    """Returns the sidecar dict for one output file; mode: config.mode's DataMode
    (data_gen.modes); `extra`: the fields of data_gen.text.vocabulary.RunVocabulary.sidecar
    (the mode's own), added as they are.

    With --spm_model_file, vocab_file / vocab_sha256 name the sentencepiece model."""
    vocab_file = config.vocab_file or config.spm_model_file
    meta = {
        "format_version": FORMAT_VERSION,
        "tool": TOOL,
        "mode": config.mode,
        "sentence_task": mode.sentence_task,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "has_token_boundary": mode.token_boundary,
        "masking": config.masking_recipe(),
        "has_span_boundaries": config.masking_recipe() == "span",
        "compression": config.compression,
        "vocab_file": vocab_file if is_remote(vocab_file) else os.path.abspath(vocab_file),
        "vocab_size": vocab_size,
        "vocab_sha256": vocab_sha256,
        "max_token_id": max_token_id,
        "flags": config.as_flags(),
        "file_counts": dict(file_counts),
        "run_counts": dict(run_counts),
    }
    meta.update(extra or {})
    return meta


def write_metadata(output_path, metadata):
    """Writes OUTPUT.meta.json atomically (hidden temporary name, then rename)."""
    write_json_atomically(metadata_path(output_path), metadata)


def read_metadata(path):
    """The sidecar of data file `path` as a dict, or None when there is none (local or gs://)."""
    meta_path = metadata_path(path)
    if not input_exists(meta_path):
        return None
    try:
        with open_input(meta_path, "r") as reader:
            text = reader.read()
    except (OSError, UnicodeDecodeError) as error:
        raise MetadataError(f"metadata file {meta_path} cannot be read: {error}") from None
    try:
        meta = json.loads(text)
    except ValueError as error:
        raise MetadataError(f"metadata file {meta_path} is not valid JSON: {error}; fix or "
                            "delete it") from None
    if not isinstance(meta, dict):
        raise MetadataError(f"metadata file {meta_path} must hold a JSON object")
    return meta


def sentence_task(meta):
    """'none' | 'sop' | 'nsp' of a sidecar dict (build_metadata writes it), or None when
    there is no sidecar or it has no such field."""
    return meta.get("sentence_task") if meta else None


def detect_compression(path, meta=None, requested=None):
    """'gzip' or 'none' for data file `path`.

    The first of: `requested` (a flag's value), the sidecar's "compression"
    field (the authority when there is a sidecar; `meta` is its dict if the
    caller has read it already), the file's first bytes (the gzip magic).
    File names do not count.
    """
    if requested:
        return _compression(requested, "--compression")
    if meta is None:
        meta = read_metadata(path)
    if meta and meta.get("compression"):
        return _compression(meta["compression"], metadata_path(path))
    if not input_exists(path):
        raise FileNotFoundError(f"{path}: file not found")
    with open_input(path, "rb") as reader:
        head = reader.read(len(GZIP_MAGIC))
    return "gzip" if head == GZIP_MAGIC else "none"


def _compression(value, source):
    value = str(value).lower()
    if value not in COMPRESSIONS:
        raise MetadataError(f"{source}: compression={value!r} is not one of "
                            f"{', '.join(COMPRESSIONS)}")
    return value


def shares_documents(train_meta, eval_meta):
    """Why the records of two sidecars (training, eval) may hold the same documents, or None
    when they cannot.

    Disjoint: the two splits of one --eval_share run over the same corpus and seed. Anything
    else made from the same --input_file may overlap (unknown corpora are not compared)."""
    if train_meta is None or eval_meta is None:
        return None
    train_flags, eval_flags = train_meta.get("flags") or {}, eval_meta.get("flags") or {}
    corpus = train_flags.get("input_file")
    if not corpus or corpus != eval_flags.get("input_file"):
        return None
    split = (train_meta.get("document_split"), eval_meta.get("document_split"))
    same_split_run = (train_meta.get("eval_share") == eval_meta.get("eval_share")
                      and train_meta.get("split_seed") == eval_meta.get("split_seed"))
    if split == ("train", "eval") and same_split_run:
        return None
    return (f"both were made from --input_file={train_flags.get('input_file')} without "
            "holding the eval documents out of training (create_pretraining_data "
            "--eval_share > 0 writes both splits)")
