r"""Corpus text -> pretraining TFRecords on Apache Beam: the CLI's files, on many machines.

  python -m data_gen.runner.beam_pipeline \
    --input_file='gs://BUCKET/corpus/*.txt' --output_file=gs://BUCKET/data/train \
    --num_output_shards=256 --vocab_file=gs://BUCKET/vocab.txt --mode=roberta \
    --runner=DataflowRunner --project=P --region=R --temp_location=gs://BUCKET/tmp \
    --extra_package=dist/zh_pretrain-0.1.0.tar.gz
  python -m data_gen.runner.beam_pipeline ... --runner=DaskRunner --dask_client_address=tcp://HOST:8786

Flags: every flag of data_gen.create_pretraining_data, same names and
meanings (--num_workers is the local runner's and is not used, only recorded
in the sidecars as the CLI records it: the Beam runner sizes its own workers;
--profile_workers is refused), plus Beam's pipeline options (--runner,
--direct_num_workers, --direct_running_mode, --temp_location, ...; with the
[dask] extra, the Dask runner's --dask_client_address, --dask_connection_timeout,
...: data_gen.runner.beam_dask).

The pipeline does what the local runner does, step for step, so for the same
flags it writes byte-identical files, on any runner (tested: the DirectRunner
and the DaskRunner, `--runner=DaskRunner --dask_client_address=tcp://HOST:PORT`):
  chunk indices -> Reshuffle -> MakePieces: a worker reads chunk k's byte range
    (data_gen.runner.corpus_chunks), makes and encodes its shard pieces with the same
    code (data_gen.runner.parallel.run_chunk) and writes each piece to a hidden
    temporary folder beside the output; only small descriptions move on, with
    the chunk's counts;
  grouped by shard -> WriteShard: the pieces concatenated in chunk order into
    the shard's file in that folder, and the counts of 1/N of the chunks summed;
  grouped into one -> Summarize: the shards' totals and the run's counts.
Then this command checks the summary, moves the shards to their final names and
writes their sidecars: a failed run (a lost worker's half-written piece
included) leaves nothing under a final name.
Inputs and outputs go through Beam's FileSystems: local paths, gs:// (with
google-cloud-storage installed), and the other schemes Beam knows.
"""
import collections
import dataclasses
import json
import logging
import os
import socket
import tempfile
import time
import uuid

try:
    import apache_beam as beam
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions
except ImportError:  # the [beam] extra is not installed; main() says so
    beam = None

from common import cli_options
from data_gen import modes
from data_gen.runner import beam_dask
from data_gen.config import GenerationConfig
from data_gen.runner.corpus_chunks import CorpusLayout
from data_gen.text.corpus_reader import (CorpusError, check_unreadable_share,
                                         expand_input_patterns)
from data_gen.text.document_split import DocumentSplit
from data_gen.runner.run_account import (USER_ERRORS, EmptyOutputError, format_account,
                                         make_account, why_empty)
from data_gen.records.metadata import build_metadata, metadata_path
from data_gen.runner.parallel import ChunkJob, run_chunk
from data_gen.records.shard_pieces import ShardTotals, piece_name
from data_gen.records.tfrecord_writer import encode_framed

_MARK = "<<data_gen error>>"  # around a user error's message inside the runner's error
_INDEX_BATCH = 1000  # at most so many chunk indices per element of the initial Create
_TARGET_BATCHES = 256  # and at least so many elements (a Dask task each) if there are chunks
_RUN_MARKER = "run"  # in the run's folder: workers that see it write there
_SUMMARY = "summary.json"
_COPY_BLOCK = 8 << 20


def open_for_reading(path):
    """A seekable binary file through Beam (no decompression guessed from the name)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _create(path):
    return FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _hidden_sibling(path, tag):
    directory, name = FileSystems.split(path)
    return FileSystems.join(directory, f".{name}.{tag}")


def _write_atomically(path, data):
    """Writes bytes under a hidden name, then renames it to `path`."""
    temporary = _hidden_sibling(path, f"incomplete-{uuid.uuid4().hex[:12]}")
    with _create(temporary) as handle:
        handle.write(data)
    FileSystems.rename([temporary], [path])


def localize(path):
    """A local copy of a remote file (the vocab, a jieba dictionary); local paths as they are."""
    if not path or "://" not in path:
        return path
    local = os.path.join(tempfile.mkdtemp(prefix="zh_pretrain_"), os.path.basename(path))
    with open_for_reading(path) as source, open(local, "wb") as target:
        for block in iter(lambda: source.read(_COPY_BLOCK), b""):
            target.write(block)
    return local


def _limit_malloc_arenas(count=2):
    """At most `count` glibc malloc arenas in this process (no-op elsewhere).

    An SDK worker runs many threads (gRPC, bundles); glibc gives threads
    arenas of their own, and memory freed in one is not reused by another, so
    a worker's memory creeps up chunk after chunk. Two arenas keep it flat.
    """
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        ctypes.CDLL(None).mallopt(-8, count)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


_jobs = collections.OrderedDict()  # this process's (ChunkJob, processor) by MakePieces.key
_JOBS_KEPT = 4  # of as many pipelines (jobs sharing a Dask cluster), the latest used


class MakePieces(beam.DoFn if beam else object):
    """Chunk index -> (shard, ("piece", ShardPiece)) per piece, its data written under
    temp_dir and dropped; then (index mod shards, ("counts", the chunk's Counter))."""

    def __init__(self, config, layout, num_shards, temp_dir, document_split=None):
        super().__init__()
        self.config, self.layout = config, layout
        self.num_shards, self.temp_dir = num_shards, temp_dir
        self.document_split = document_split  # --eval_share: this pass's documents only
        self.key = uuid.uuid4().hex  # one per pipeline: the job cache's key
        self.job = self.processor = None

    def setup(self):
        """Loads the tokenizer and dictionaries once per process: the Dask runner sets a
        DoFn up for every task, other runners once per worker."""
        _limit_malloc_arenas()
        if self.key not in _jobs:
            local = dataclasses.replace(
                self.config, vocab_file=localize(self.config.vocab_file),
                jieba_user_dict=localize(self.config.jieba_user_dict),
                similar_words_file=localize(self.config.similar_words_file),
                spm_model_file=localize(self.config.spm_model_file))
            job = ChunkJob(local, self.layout, self.num_shards, opener=open_for_reading,
                           document_split=self.document_split)
            _jobs[self.key] = (job, job.processor())
            while len(_jobs) > _JOBS_KEPT:
                _jobs.popitem(last=False)
        _jobs.move_to_end(self.key)
        self.job, self.processor = _jobs[self.key]

    def process(self, index):
        try:
            _check_run_folder(self.temp_dir)
            outcome = run_chunk(self.job, self.processor, index)
        except USER_ERRORS as error:  # the runner wraps it: mark the words to say in the end
            raise RuntimeError(f"{_MARK}{error}{_MARK}") from error
        for piece in outcome.pieces:
            _write_from_worker(FileSystems.join(self.temp_dir, piece_name(index, piece.shard)),
                               piece.data)
            piece.data = None
            yield piece.shard, ("piece", piece)
        yield index % self.num_shards, ("counts", outcome.counts)


def _check_run_folder(temp_dir):
    """Raises CorpusError when this worker does not see the run's folder (made by the
    command before the pipeline starts): the run has ended, or this worker is on another
    file system than the command."""
    if not FileSystems.exists(FileSystems.join(temp_dir, _RUN_MARKER)):
        raise CorpusError(
            f"{temp_dir}, the run's folder beside --output_file, does not exist on worker "
            f"host {socket.gethostname()}: --output_file must be on a file system that this "
            "machine and every worker share (the same path everywhere: a network file "
            "system, or an object store such as gs://)")


def _write_from_worker(path, data):
    try:
        _write_atomically(path, data)
    except (OSError, IOError) as error:  # Beam wraps remote failures in IOError subclasses
        raise RuntimeError(f"{_MARK}worker host {socket.gethostname()} cannot write {path} "
                           f"({error}): give an --output_file every worker may write{_MARK}"
                           ) from error


def _sum_counters(counters):
    total = collections.Counter()
    for counts in counters:
        total.update(counts)
    return total


class _WriteShard:
    """(shard, tagged values) -> the shard's file in temp_dir (its pieces in chunk order),
    and ("run", [shard, instances, masked tokens, largest id, summed counts])."""

    def __init__(self, compression, num_shards, temp_dir):
        self.compression, self.num_shards, self.temp_dir = compression, num_shards, temp_dir

    def __call__(self, shard_and_values):
        shard, values = shard_and_values[0], list(shard_and_values[1])
        pieces = sorted((value for tag, value in values if tag == "piece"),
                        key=lambda piece: piece.chunk)
        totals = ShardTotals(self.num_shards)
        for piece in pieces:
            totals.add(piece)
        path = FileSystems.join(self.temp_dir, f"shard-{shard:05d}")
        temporary = _hidden_sibling(path, f"incomplete-{uuid.uuid4().hex[:12]}")
        with _create(temporary) as target:
            for piece in pieces:
                with open_for_reading(FileSystems.join(
                        self.temp_dir, piece_name(piece.chunk, shard))) as source:
                    for block in iter(lambda: source.read(_COPY_BLOCK), b""):
                        target.write(block)
            if not pieces and self.compression == "gzip":
                target.write(encode_framed(b"", "gzip"))  # a valid empty stream
        FileSystems.rename([temporary], [path])
        counts = _sum_counters(value for tag, value in values if tag == "counts")
        return "run", [shard, totals.counts[shard]["instances"],
                       totals.counts[shard]["masked_tokens"], totals.max_ids[shard],
                       dict(counts)]


class _Summarize:
    """("run", every shard's row) -> temp_dir/summary.json, read by the command."""

    def __init__(self, temp_dir):
        self.temp_dir = temp_dir

    def __call__(self, run_and_rows):
        rows = sorted(run_and_rows[1], key=lambda row: row[0])
        summary = {"shards": [row[1:4] for row in rows],
                   "counts": dict(_sum_counters(row[4] for row in rows))}
        _write_atomically(FileSystems.join(self.temp_dir, _SUMMARY),
                          json.dumps(summary, ensure_ascii=False).encode("utf-8"))
        return len(rows)


def _glob_with_beam(pattern):
    results = FileSystems.match([pattern])[0].metadata_list
    hidden = os.path.basename(pattern).startswith(".")
    return [m.path for m in results if hidden or not os.path.basename(m.path).startswith(".")]


def _file_sizes(files):
    metadata = FileSystems.match(files)
    return [result.metadata_list[0].size_in_bytes for result in metadata]


def _index_batches(num_chunks):
    """[(low, high)] chunk index ranges: at least _TARGET_BATCHES of them when there are
    that many chunks, at most _INDEX_BATCH chunks each."""
    size = min(_INDEX_BATCH, max(1, -(-num_chunks // _TARGET_BATCHES)))
    return [(low, min(low + size, num_chunks)) for low in range(0, num_chunks, size)]


def build_pipeline(pipeline, config, layout, num_shards, temp_dir, document_split=None):
    """Adds the generation steps to `pipeline`: the shards' files and summary.json in
    temp_dir. Only Create, ParDo, Flatten and GroupByKey, each read as a main input (no
    side input, no global combine), with one final step that depends on all the others:
    what every Beam runner, the Dask runner included, runs as written."""
    made = (pipeline
            | "ChunkIndexRanges" >> beam.Create(_index_batches(layout.num_chunks))
            | "ChunkIndices" >> beam.FlatMap(lambda bounds: range(*bounds))
            | "Spread" >> beam.Reshuffle()
            | "MakePieces" >> beam.ParDo(MakePieces(config, layout, num_shards, temp_dir,
                                                    document_split)))
    every_shard = pipeline | "Shards" >> beam.Create([(s, ("shard", None))
                                                      for s in range(num_shards)])
    _ = ((made, every_shard) | "AllShards" >> beam.Flatten()
         | "GroupByShard" >> beam.GroupByKey()
         | "WriteShard" >> beam.Map(_WriteShard(config.compression, num_shards, temp_dir))
         | "GatherRun" >> beam.GroupByKey()
         | "Summarize" >> beam.Map(_Summarize(temp_dir)))


class _HideMarkedErrors(logging.Filter):
    """While active, drops the runner's log records (tracebacks) of a marked user error:
    the error is said once, in one line, by the command."""

    def filter(self, record):
        text = record.getMessage() + str(record.exc_info[1] if record.exc_info else "")
        return _MARK not in text

    def __enter__(self):
        for handler in logging.getLogger().handlers:
            handler.addFilter(self)
        return self

    def __exit__(self, *unused):
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self)
        return False


def run(config, beam_args):
    """Runs the pipeline; returns the account (a dict), as create_pretraining_data.run does.

    The pipeline writes only inside a hidden folder beside the first output; this command
    then checks the summary, moves the shards to their final names and writes their
    sidecars, so a failed run leaves nothing under a final name."""
    if beam is None:
        raise cli_options.UserError("apache-beam is not installed: pip install 'zh-pretrain[beam]' "
                                    "(or `pip install -e '.[beam]'` in a checkout)")
    started = time.time()
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")  # local worker processes inherit it
    if not any(arg.startswith("--default_sdk_harness_log_level") for arg in beam_args):
        # Local worker processes log to this terminal; a failure reaches the command anyway
        # (a user error as one line, any other with the worker's traceback).
        beam_args = list(beam_args) + ["--default_sdk_harness_log_level=CRITICAL"]
    if config.profile_workers:
        raise cli_options.UserError(
            "--profile_workers profiles the local runner's worker processes; on Beam, the "
            "runner's own monitoring (e.g. Dataflow's step times) says where time goes: drop it")
    on_dask = beam_dask.is_dask(beam_args)
    if on_dask:
        # Beam's local Dask cluster (no --dask_client_address) logs its workers' failures
        # here too; the command says them once.
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    beam_args = beam_dask.prepare(beam_args)
    options = PipelineOptions(beam_args)
    unknown = sorted(set(options.get_all_options(retain_unknown_options=True))
                     - set(options.get_all_options()))
    if unknown:
        raise cli_options.UserError(
            "unknown flag(s) " + ", ".join("--" + name for name in unknown) + ": neither a "
            "create_pretraining_data flag nor a Beam pipeline option; see --help")
    local = {path: localize(path) for path in (config.vocab_file, config.spm_model_file)}
    dataclasses.replace(config, vocab_file=local[config.vocab_file],
                        spm_model_file=local[config.spm_model_file],
                        jieba_user_dict=localize(config.jieba_user_dict),
                        similar_words_file=localize(config.similar_words_file)).validate()
    vocabulary = modes.get(config.mode).load_vocabulary(config, local.get)
    files = expand_input_patterns(config.input_file, glob_files=_glob_with_beam)
    layout = CorpusLayout(files, _file_sizes(files), config.chunk_bytes)
    runner = "DaskRunner" if on_dask else options.get_all_options()["runner"] or "DirectRunner"

    def one_pass(pass_config, paths, document_split):
        account = _generate(pass_config, options, on_dask, vocabulary, files, layout,
                            [_absolute(path) for path in paths], document_split, started)
        account["runner"] = runner
        return account

    if not config.eval_share:
        return one_pass(config, config.output_paths(), None)
    # --eval_share: the CLI's two passes (data_gen.text.document_split), one pipeline each.
    account = one_pass(config, config.output_paths(), DocumentSplit(
        config.eval_share, config.random_seed, "train"))
    try:
        account["eval"] = one_pass(
            dataclasses.replace(config, dupe_factor=config.eval_dupe_factor),
            config.eval_output_paths(),
            DocumentSplit(config.eval_share, config.random_seed, "eval"))
    except BaseException:  # the training files alone would look like a finished run
        FileSystems.delete([path for output in account["output_files"]
                            for path in (output, metadata_path(output))
                            if FileSystems.exists(path)])
        raise
    return account


def _generate(config, options, on_dask, vocabulary, files, layout, output_paths,
              document_split, started):
    """One pipeline writing `output_paths` (document_split: its documents only) -> account."""
    temp_dir = _hidden_sibling(output_paths[0], f"beam-temp-{uuid.uuid4().hex[:12]}")
    try:
        _make_run_folder(temp_dir)
        _run_pipeline(options, lambda pipeline: build_pipeline(
            pipeline, config, layout, len(output_paths), temp_dir, document_split), on_dask)
        account, totals = _account(_read_summary(temp_dir), layout.total, started)
        # The sidecars hold the CLI's run_counts for the same flags, its worker count too.
        account["num_workers"] = min(config.resolved_num_workers(), layout.num_chunks)
        check_unreadable_share(account, files, config.max_unreadable_share)
        if account["instances"] == 0:
            raise EmptyOutputError(why_empty(account, files, document_split, config.mode))
        _commit(config, vocabulary, account, totals, temp_dir, output_paths,
                document_split.sidecar() if document_split else {})
    finally:
        _remove_run_folder(temp_dir)
    account["seconds"] = round(time.time() - started, 3)
    account["mb_per_second"] = round(layout.total / 1e6 / max(account["seconds"], 1e-9), 4)
    account["output_files"] = output_paths
    account["masking"] = config.masking_account()
    if document_split is not None:
        account["document_split"] = document_split.split
    return account


def _absolute(path):
    """Local paths made absolute: workers may run in another directory."""
    return path if "://" in path else os.path.abspath(path)


def _make_run_folder(temp_dir):
    """Makes the run's hidden folder and its marker, or says why it cannot."""
    try:
        FileSystems.mkdirs(temp_dir)
        _write_atomically(FileSystems.join(temp_dir, _RUN_MARKER), b"")
    except (OSError, IOError) as error:  # Beam's file systems wrap the OSError
        cause = error.args[0] if error.args and isinstance(error.args[0], Exception) else error
        raise CorpusError(f"--output_file: cannot write {temp_dir}, the run's folder beside "
                          f"it ({cause}); give an --output_file in a folder this machine and "
                          "every worker may write") from None


def _remove_run_folder(temp_dir):
    try:
        FileSystems.delete([temp_dir])
    except IOError:  # Beam's BeamIOError; fine when the folder was never made
        if FileSystems.exists(temp_dir):
            raise


def _run_pipeline(options, build, on_dask):
    """Builds and runs the pipeline; a worker's marked user error becomes a CorpusError,
    a Dask cluster that cannot load the steps a UserError."""
    pipeline = beam.Pipeline(options=options)
    build(pipeline)
    result = None
    try:
        with _HideMarkedErrors():
            result = pipeline.run()
            result.wait_until_finish()
    except Exception as error:  # pylint: disable=broad-except
        if result is not None:
            beam_dask.cancel(result)
        marked = str(error).split(_MARK)
        if len(marked) >= 3:
            raise CorpusError(marked[1]) from None
        if on_dask and beam_dask.explain(error):
            raise cli_options.UserError(beam_dask.explain(error)) from None
        raise
    finally:
        if result is not None:
            beam_dask.finish(result)


def _read_summary(temp_dir):
    path = FileSystems.join(temp_dir, _SUMMARY)
    if not FileSystems.exists(path):
        raise CorpusError(f"the pipeline ended without writing {path}: its workers wrote "
                          "where this machine does not see; give an --output_file on a file "
                          "system this machine and every worker share")
    with open_for_reading(path) as reader:
        return json.loads(reader.read().decode("utf-8"))


def _account(summary, total_bytes, started):
    """(the run's account as the local CLI makes it, the shards' ShardTotals)."""
    totals = ShardTotals(len(summary["shards"]))
    for shard, (instances, masked, max_id) in enumerate(summary["shards"]):
        totals.counts[shard].update(instances=instances, masked_tokens=masked)
        totals.max_ids[shard] = max_id
    return make_account(collections.Counter(summary["counts"]), totals, total_bytes,
                        time.time() - started, num_workers=0), totals


def _commit(config, vocabulary, account, totals, temp_dir, output_paths, split_sidecar):
    """Moves the shards to their final names and writes their sidecars; on any failure
    removes what it had put there."""
    run_counts = {key: value for key, value in account.items() if isinstance(value, int)}
    committed = []
    try:
        for shard, path in enumerate(output_paths):
            committed.append(path)
            FileSystems.rename([FileSystems.join(temp_dir, f"shard-{shard:05d}")], [path])
        for shard, path in enumerate(output_paths):
            metadata = build_metadata(config, modes.get(config.mode), vocabulary.size,
                                      vocabulary.sha256, totals.max_ids[shard],
                                      totals.file_counts(shard), run_counts,
                                      dict(vocabulary.sidecar or {}, **split_sidecar))
            committed.append(metadata_path(path))
            _write_atomically(metadata_path(path), (json.dumps(
                metadata, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
    except BaseException:
        FileSystems.delete([path for path in committed if FileSystems.exists(path)])
        raise


def _run_and_report(config, beam_args):
    print(format_account(run(config, beam_args)))


def main(argv=None):
    """Console-script and `python -m` entry: create_pretraining_data's flags + Beam's."""
    cli_options.run_main(GenerationConfig, _run_and_report, argv,
                         expected=USER_ERRORS + (CorpusError,), pass_other_args=True)


if __name__ == "__main__":
    # As data_gen.runner.beam_pipeline, not __main__: the steps then travel to the workers as
    # references to this module (importable there), not as copies of __main__'s code.
    from data_gen.runner import beam_pipeline  # pylint: disable=import-self
    beam_pipeline.main()
