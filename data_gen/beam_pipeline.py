r"""Corpus text -> pretraining TFRecords on Apache Beam: the CLI's files, on many machines.

  python -m data_gen.beam_pipeline \
    --input_file='gs://BUCKET/corpus/*.txt' --output_file=gs://BUCKET/data/train \
    --num_output_shards=256 --vocab_file=gs://BUCKET/vocab.txt --mode=roberta \
    --runner=DataflowRunner --project=P --region=R --temp_location=gs://BUCKET/tmp \
    --extra_package=dist/zh_pretrain-0.1.0.tar.gz

Flags: every flag of data_gen.create_pretraining_data, same names and
meanings (--num_workers is the local runner's and is not used: the Beam runner
sizes its own workers; --profile_workers is refused), plus Beam's pipeline options (--runner,
--direct_num_workers, --direct_running_mode, --temp_location, ...).

The pipeline does what the local runner does, step for step, so for the same
flags it writes byte-identical files:
  chunk indices -> Reshuffle -> MakePieces: a worker reads chunk k's byte range
    (data_gen.corpus_chunks), makes and encodes its shard pieces with the same
    code (data_gen.parallel.run_chunk) and writes each piece to a hidden
    temporary directory beside the output; only small descriptions move on;
  the account, summed over chunks;
  the pieces grouped by shard -> WriteShard: concatenated in chunk order into
    the shard file (hidden temporary name, then renamed), then its sidecar.
Inputs and outputs go through Beam's FileSystems: local paths, gs:// (with
google-cloud-storage installed), and the other schemes Beam knows.
"""
import collections
import dataclasses
import json
import logging
import os
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
from data_gen.config import GenerationConfig
from data_gen.corpus_chunks import CorpusLayout
from data_gen.corpus_reader import CorpusError, expand_input_patterns
from data_gen.unreadable_input import check_unreadable_share
from data_gen.create_pretraining_data import (USER_ERRORS, EmptyOutputError, format_account,
                                              make_account, why_empty)
from common.file_utils import SIDECAR_SUFFIX
from data_gen.metadata import build_metadata, metadata_path
from data_gen.parallel import ChunkJob, run_chunk
from data_gen.shard_pieces import ShardTotals, piece_name
from data_gen.tfrecord_writer import encode_framed
from data_gen.vocabulary import load_run_vocabulary

_MARK = "<<data_gen error>>"  # around a user error's message inside the runner's error
_INDEX_BATCH = 1000  # chunk indices per element of the initial Create
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


class MakePieces(beam.DoFn if beam else object):
    """Chunk index -> ("piece", ShardPiece written to temp_dir, data dropped) ...,
    ("counts", the chunk's Counter)."""

    def __init__(self, config, layout, num_shards, temp_dir):
        super().__init__()
        self.config, self.layout = config, layout
        self.num_shards, self.temp_dir = num_shards, temp_dir
        self.job = self.processor = None

    def setup(self):
        _limit_malloc_arenas()
        local = dataclasses.replace(self.config, vocab_file=localize(self.config.vocab_file),
                                    jieba_user_dict=localize(self.config.jieba_user_dict),
                                    similar_words_file=localize(self.config.similar_words_file),
                                    spm_model_file=localize(self.config.spm_model_file))
        self.job = ChunkJob(local, self.layout, self.num_shards, opener=open_for_reading)
        self.processor = self.job.processor()

    def process(self, index):
        try:
            outcome = run_chunk(self.job, self.processor, index)
        except USER_ERRORS as error:  # the runner wraps it: mark the words to say in the end
            raise RuntimeError(f"{_MARK}{error}{_MARK}") from error
        for piece in outcome.pieces:
            with _create(FileSystems.join(self.temp_dir, piece_name(index, piece.shard))) as out:
                out.write(piece.data)
            piece.data = None
            yield "piece", piece
        yield "counts", outcome.counts


def _sum_counters(counters):
    total = collections.Counter()
    for counts in counters:
        total.update(counts)
    return total


class _WriteShard:
    """(shard, pieces) -> the shard file and its sidecar; returns (shard, ShardTotals row)."""

    def __init__(self, config, output_paths, temp_dir, vocabulary):
        self.config, self.output_paths, self.temp_dir = config, output_paths, temp_dir
        self.vocabulary = vocabulary

    def __call__(self, shard_and_pieces, run_summary):
        shard, pieces = shard_and_pieces
        pieces = sorted(pieces, key=lambda piece: piece.chunk)
        totals = ShardTotals(len(self.output_paths))
        for piece in pieces:
            totals.add(piece)
        if run_summary["instances"] == 0:
            return shard, totals
        path = self.output_paths[shard]
        temporary = _hidden_sibling(path, f"incomplete-{uuid.uuid4().hex[:12]}")
        with _create(temporary) as target:
            for piece in pieces:
                with open_for_reading(FileSystems.join(
                        self.temp_dir, piece_name(piece.chunk, shard))) as source:
                    for block in iter(lambda: source.read(_COPY_BLOCK), b""):
                        target.write(block)
            if not pieces and self.config.compression == "gzip":
                target.write(encode_framed(b"", "gzip"))  # a valid empty stream
        FileSystems.rename([temporary], [path])
        vocabulary = self.vocabulary
        metadata = build_metadata(self.config, vocabulary.size, vocabulary.sha256,
                                  totals.max_ids[shard], totals.file_counts(shard),
                                  run_summary["run_counts"], vocabulary.sidecar)
        _write_atomically(path + SIDECAR_SUFFIX, (json.dumps(
            metadata, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
        return shard, totals


def _glob_with_beam(pattern):
    results = FileSystems.match([pattern])[0].metadata_list
    hidden = os.path.basename(pattern).startswith(".")
    return [m.path for m in results if hidden or not os.path.basename(m.path).startswith(".")]


def _file_sizes(files):
    metadata = FileSystems.match(files)
    return [result.metadata_list[0].size_in_bytes for result in metadata]


def build_pipeline(pipeline, config, layout, output_paths, temp_dir, vocabulary, started):
    """Adds the generation steps to `pipeline`; the run's account goes to TEMP/account.json."""
    batches = [(low, min(low + _INDEX_BATCH, layout.num_chunks))
               for low in range(0, layout.num_chunks, _INDEX_BATCH)]
    made = (pipeline
            | "ChunkIndexRanges" >> beam.Create(batches)
            | "ChunkIndices" >> beam.FlatMap(lambda bounds: range(*bounds))
            | "Spread" >> beam.Reshuffle()
            | "MakePieces" >> beam.ParDo(MakePieces(config, layout, len(output_paths), temp_dir)))
    counts = (made | "Counts" >> beam.Filter(lambda tagged: tagged[0] == "counts")
              | "CountsOnly" >> beam.Map(lambda tagged: tagged[1])
              | "SumCounts" >> beam.CombineGlobally(_sum_counters))
    pieces = (made | "Pieces" >> beam.Filter(lambda tagged: tagged[0] == "piece")
              | "ByShard" >> beam.Map(lambda tagged: (tagged[1].shard, tagged[1])))
    all_shards = pipeline | "Shards" >> beam.Create([(s, None) for s in range(len(output_paths))])
    grouped = ((pieces, all_shards) | "AllShards" >> beam.Flatten()
               | "GroupByShard" >> beam.GroupByKey()
               | "DropPlaceholders" >> beam.Map(
                   lambda item: (item[0], [p for p in item[1] if p is not None])))
    summary = (grouped | "ShardInstances" >> beam.Map(
                   lambda item: (sum(p.records for p in item[1]),
                                 sum(p.masked for p in item[1])))
               | "SumInstances" >> beam.CombineGlobally(
                   lambda pairs: tuple(map(sum, zip(*pairs))) if pairs else (0, 0))
               | "Summary" >> beam.Map(_run_summary, beam.pvalue.AsSingleton(counts),
                                       layout.total, started))
    written = grouped | "WriteShard" >> beam.Map(
        _WriteShard(config, output_paths, temp_dir, vocabulary),
        beam.pvalue.AsSingleton(summary))
    _ = (summary | "WriteAccount" >> beam.Map(
        lambda run, done: _write_atomically(FileSystems.join(temp_dir, "account.json"),
                                            json.dumps(run["account"]).encode("utf-8")),
        beam.pvalue.AsList(written)))


def _run_summary(instances_and_masked, counts, total_bytes, started):
    """The run's account (as the local CLI makes it) and the sidecars' run_counts."""
    totals = ShardTotals(1)
    totals.counts[0]["instances"], totals.counts[0]["masked_tokens"] = instances_and_masked
    account = make_account(counts, totals, total_bytes, time.time() - started, num_workers=0)
    account.pop("num_workers")  # the runner's business
    run_counts = {key: value for key, value in account.items() if isinstance(value, int)}
    return {"instances": account["instances"], "account": account, "run_counts": run_counts}


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
    """Runs the pipeline; returns the account (a dict), as create_pretraining_data.run does."""
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
    if config.eval_share:
        raise cli_options.UserError(
            f"--eval_share={config.eval_share}: the Beam pipeline writes one split; hold the "
            "documents out with python -m data_gen.create_pretraining_data --eval_share, or "
            "give the eval documents their own --input_file here")
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
    vocabulary = load_run_vocabulary(config, local.get)
    files = expand_input_patterns(config.input_file, glob_files=_glob_with_beam)
    layout = CorpusLayout(files, _file_sizes(files), config.chunk_bytes)
    output_paths = config.output_paths()
    temp_dir = _hidden_sibling(output_paths[0], f"beam-temp-{uuid.uuid4().hex[:12]}")
    FileSystems.mkdirs(temp_dir)
    quiet = _HideMarkedErrors()
    try:
        try:
            with quiet, beam.Pipeline(options=options) as pipeline:
                build_pipeline(pipeline, config, layout, output_paths, temp_dir, vocabulary,
                               started)
        except Exception as error:  # pylint: disable=broad-except
            marked = str(error).split(_MARK)
            if len(marked) < 3:
                raise
            raise CorpusError(marked[1]) from None
        with open_for_reading(FileSystems.join(temp_dir, "account.json")) as reader:
            account = json.loads(reader.read())
    finally:
        FileSystems.delete([temp_dir])
    account["seconds"] = round(time.time() - started, 3)
    account["mb_per_second"] = round(layout.total / 1e6 / max(account["seconds"], 1e-9), 4)
    try:
        check_unreadable_share(account, files, config.max_unreadable_share)
    except CorpusError:
        written = [path for output in output_paths for path in (output, metadata_path(output))
                   if FileSystems.exists(path)]
        FileSystems.delete(written)  # the loss was too large to keep what was made of the rest
        raise
    if account["instances"] == 0:
        raise EmptyOutputError(why_empty(account, files))
    account["output_files"] = output_paths
    account["masking"] = config.masking_recipe()
    account["runner"] = options.get_all_options()["runner"] or "DirectRunner"
    return account


def _run_and_report(config, beam_args):
    print(format_account(run(config, beam_args)))


def main(argv=None):
    """Console-script and `python -m` entry: create_pretraining_data's flags + Beam's."""
    cli_options.run_main(GenerationConfig, _run_and_report, argv,
                         expected=USER_ERRORS + (CorpusError,), pass_other_args=True)


if __name__ == "__main__":
    main()
