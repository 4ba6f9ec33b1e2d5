r"""Corpus text -> pretraining TFRecords (roberta / albert / bert / xlnet), streaming and parallel.

  python -m data_gen.create_pretraining_data \
    --input_file='corpus/*.txt' --output_file=out/train.tfrecord \
    --vocab_file=vocab.txt --mode=roberta --dupe_factor=5

Flags keep google-research/bert's names and meanings; see --help.
Tests and scripts can call `run(GenerationConfig(...))` without absl.
"""
import collections
import dataclasses
import os
import signal
import sys
import time

from common import cli_options
from data_gen import modes
from data_gen.config import GenerationConfig
from data_gen.runner.corpus_chunks import CorpusLayout
from data_gen.text.corpus_reader import check_unreadable_share, expand_input_patterns
from data_gen.text.document_split import DocumentSplit
from common.file_utils import (BackgroundSync, input_size, make_parent_folder,
                               remove_all_temporaries)
from data_gen.records.metadata import build_metadata, metadata_path, write_metadata
from data_gen.runner.parallel import ChunkJob, process_chunks
from data_gen.records.shard_pieces import ShardTotals
from data_gen.records.tfrecord_writer import TFRecordWriter
from data_gen.runner.run_account import (USER_ERRORS, EmptyOutputError, format_account,
                                         make_account, why_empty)
from data_gen.runner.worker_profile import RunProfile

PROGRESS_SECONDS = 2.0


class Terminated(KeyboardInterrupt):
    """Raised from the SIGTERM handler so that cleanup code runs (and the CLI ends as on Ctrl-C)."""


def _raise_terminated(signum, frame):
    raise Terminated(f"received signal {signum}")


class _Progress:
    """A \r-updated progress line on stderr, at most every PROGRESS_SECONDS."""

    def __init__(self, enabled, total_bytes):
        self.enabled = enabled
        self.total_bytes = max(total_bytes, 1)
        self.started = time.monotonic()
        self.last = self.started
        self.printed = False

    def update(self, bytes_read, instances, force=False):
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < PROGRESS_SECONDS):
            return
        self.last = now
        elapsed = max(now - self.started, 1e-9)
        sys.stderr.write(f"\r[data_gen] {bytes_read / 1e6:8.2f} MB read "
                         f"({100.0 * bytes_read / self.total_bytes:5.1f}%), "
                         f"{instances} instances, {bytes_read / 1e6 / elapsed:.3f} MB/s   ")
        sys.stderr.flush()
        self.printed = True

    def finish(self):
        if self.printed:
            sys.stderr.write("\n")
            sys.stderr.flush()


def run(config):
    """Generates the output files of `config`; returns the account (a dict).

    With --eval_share, a second pass writes the held-out documents' records to the eval
    files (data_gen.text.document_split); the account of that pass is account["eval"].
    Raises ConfigError / CorpusError / VocabError / SegmenterError with a
    message naming the flag, file or line at fault. On any exception or
    SIGTERM, partially written files are removed (both passes' files).
    """
    config.validate()
    vocabulary = modes.get(config.mode).load_vocabulary(config)
    files = expand_input_patterns(config.input_file)
    layout = CorpusLayout(files, [input_size(path) for path in files], config.chunk_bytes)
    output_paths = config.output_paths()
    if not config.eval_share:
        return _generate(config, output_paths, None, vocabulary, files, layout)[0]
    eval_paths = config.eval_output_paths()
    account, committed = _generate(config, output_paths, DocumentSplit(
        config.eval_share, config.random_seed, "train"), vocabulary, files, layout)
    try:
        eval_config = dataclasses.replace(config, dupe_factor=config.eval_dupe_factor)
        account["eval"] = _generate(eval_config, eval_paths, DocumentSplit(
            config.eval_share, config.random_seed, "eval"), vocabulary, files, layout)[0]
    except BaseException:
        _remove(committed)  # the training files alone would look like a finished run
        raise
    return account


def _generate(config, output_paths, document_split, vocabulary, files, layout):
    """One pass over the corpus writing `output_paths` -> (account, committed paths)."""
    profile = RunProfile()  # its clock times every run; chunks are added when profiling
    num_workers = min(config.resolved_num_workers(), layout.num_chunks)
    progress = _Progress(config.progress, layout.total)
    work_counts = collections.Counter()
    totals = ShardTotals(len(output_paths))

    previous_handler = None
    if hasattr(signal, "SIGTERM") and _in_main_thread():
        previous_handler = signal.signal(signal.SIGTERM, _raise_terminated)
    writers = []
    committed = []
    outcomes = None
    try:
        for path in output_paths:  # the folders of the outputs, as the README's recipes assume
            make_parent_folder(path)
        writers = [TFRecordWriter(path, config.compression) for path in output_paths]
        with BackgroundSync(writers):
            outcomes = process_chunks(ChunkJob(config, layout, len(output_paths),
                                               document_split=document_split), num_workers,
                                      [writer.temporary for writer in writers],
                                      [writer.path for writer in writers],
                                      profile if config.profile_workers else None)
            for outcome in outcomes:
                for piece in outcome.pieces:
                    if piece.data is not None:  # else a worker has written it
                        writing_started = time.monotonic()
                        writers[piece.shard].write_encoded(piece.data, piece.records)
                        profile.parent_writing += time.monotonic() - writing_started
                    totals.add(piece)
                work_counts.update(outcome.counts)
                if config.profile_workers:
                    profile.add(outcome.timing)
                progress.update(outcome.end, totals.total("instances"))
        progress.update(layout.total, totals.total("instances"), force=True)
        progress.finish()
        account = make_account(work_counts, totals, layout.total,
                                time.monotonic() - profile.started, num_workers)
        account["masking"] = config.masking_account()
        account["input_file"] = config.input_file
        check_unreadable_share(account, files, config.max_unreadable_share)
        if account["instances"] == 0:
            raise EmptyOutputError(why_empty(account, files, document_split, config.mode))
        for writer in writers:
            writer.close()
            committed.append(writer.path)
        run_counts = {key: value for key, value in account.items()
                      if isinstance(value, int)}
        extra = dict(vocabulary.sidecar or {}, **(document_split.sidecar() if document_split
                                                   else {}))
        for index, path in enumerate(output_paths):
            write_metadata(path, build_metadata(
                config, modes.get(config.mode), vocabulary.size, vocabulary.sha256,
                totals.max_ids[index], totals.file_counts(index), run_counts, extra))
        account["output_files"] = output_paths
        if document_split is not None:
            account["document_split"] = document_split.split
        if config.profile_workers:
            profile.finish()
            account["profile"] = profile.summary()
        return account, committed
    except BaseException:
        for writer in writers:
            writer.abort()
        remove_all_temporaries()
        _remove(committed)  # complete data without its sidecar must not stay either
        raise
    finally:
        if outcomes is not None:
            outcomes.close()  # terminates the worker pool if still running
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)


def _remove(paths):
    """Deletes finished data files and their sidecars."""
    for path in paths:
        for leftover in (path, metadata_path(path)):
            if os.path.exists(leftover):
                os.remove(leftover)


def _in_main_thread():
    import threading
    return threading.current_thread() is threading.main_thread()


def _run_and_report(config):
    print(format_account(run(config)))


def main(argv=None):
    """Console-script and `python -m` entry: flags from GenerationConfig's fields."""
    cli_options.run_main(GenerationConfig, _run_and_report, argv, expected=USER_ERRORS)


if __name__ == "__main__":
    main()
