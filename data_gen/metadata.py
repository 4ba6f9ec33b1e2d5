"""The F.meta.json sidecar beside every output file (docs/architecture.md §2)."""
import os

from data_gen.tfrecord_writer import write_json_atomically

FORMAT_VERSION = 1
TOOL = "data_gen.create_pretraining_data"
SENTENCE_TASKS = {"roberta": "none", "albert": "sop", "bert": "nsp"}


def build_metadata(config, vocab_size, vocab_sha256, max_token_id, file_counts, run_counts):
    """Returns the sidecar dict for one output file."""
    return {
        "format_version": FORMAT_VERSION,
        "tool": TOOL,
        "mode": config.mode,
        "sentence_task": SENTENCE_TASKS[config.mode],
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "has_token_boundary": config.mode == "albert",
        "compression": config.compression,
        "vocab_file": os.path.abspath(config.vocab_file),
        "vocab_size": vocab_size,
        "vocab_sha256": vocab_sha256,
        "max_token_id": max_token_id,
        "flags": config.as_flags(),
        "file_counts": dict(file_counts),
        "run_counts": dict(run_counts),
    }


def metadata_path(output_path):
    return output_path + ".meta.json"


def write_metadata(output_path, metadata):
    """Writes OUTPUT.meta.json atomically (hidden temporary name, then rename)."""
    write_json_atomically(metadata_path(output_path), metadata)
