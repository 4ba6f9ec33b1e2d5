"""The local runner's process pool: workers read, process and write whole chunks.

A task is a chunk index only. The worker finds the chunk's byte range itself
(data_gen.corpus_chunks), reads it, makes its records with the generator of
(seed, chunk) and encodes its shard pieces (data_gen.shard_pieces). Then it
takes the next place in every shard file from a shared table, in chunk order
(`OrderedOffsets`), and writes its pieces there itself; what comes back is a
small ChunkOutcome. The parent reads and writes no corpus byte, the output is
byte-identical for any --num_workers, and at most 2 * num_workers chunks are
in flight, so memory does not grow with the corpus.
"""
import collections
import concurrent.futures
import dataclasses
import gc
import multiprocessing
import os
import signal
import sys

from data_gen.chunk_processing import ChunkProcessor
from common.file_utils import open_binary_input
from data_gen.shard_pieces import ChunkOutcome, shard_pieces


class OrderedOffsets:
    """Where each chunk's pieces go in the shard files, handed out in chunk order.

    Shared by the worker processes (inherited at their start): chunk k waits
    until chunk k - 1 has taken its places, takes its own and lets k + 1 go
    on; the writing itself then runs in parallel, with os.pwrite.
    """

    def __init__(self, paths, context, names=None):
        self.paths = list(paths)
        self.names = list(names or paths)  # what an error calls the files
        self._condition = context.Condition()
        self._next_chunk = context.RawValue("q", 0)
        self._offsets = context.RawArray("q", len(self.paths))
        self._fds = {}

    def write(self, index, pieces):
        """Writes chunk `index`'s pieces (their data is dropped) at their places."""
        sizes = [0] * len(self.paths)
        for piece in pieces:
            sizes[piece.shard] = len(piece.data)
        with self._condition:
            self._condition.wait_for(lambda: self._next_chunk.value == index)
            starts = self._offsets[:]
            for shard, size in enumerate(sizes):
                self._offsets[shard] += size
            self._next_chunk.value = index + 1
            self._condition.notify_all()
        for piece in pieces:
            self._pwrite(piece.shard, piece.data, starts[piece.shard])
            piece.data = None

    def _pwrite(self, shard, data, offset):
        path = self.paths[shard]
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_WRONLY)
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(fd, view, offset)
                view = view[written:]
                offset += written
        except OSError as error:  # disk full, file too large: name the output
            raise OSError(error.errno, error.strerror, self.names[shard]) from None


@dataclasses.dataclass
class ChunkJob:
    """Everything a process needs to turn chunk indices into ChunkOutcomes.

    offsets: None in a single-process run (the caller writes the pieces'
    data); else the OrderedOffsets through which workers write them.
    """
    config: object
    layout: object
    num_shards: int
    offsets: OrderedOffsets = None
    opener: object = open_binary_input

    def processor(self):
        return ChunkProcessor(self.config)


def run_chunk(job, processor, index):
    """Chunk `index` -> ChunkOutcome (its pieces written when job.offsets is set)."""
    span = job.layout.chunk(index, job.opener)
    result = processor.process_span(span, job.opener)
    pieces = shard_pieces(result, job.num_shards, job.config.compression)
    if job.offsets is not None:
        job.offsets.write(index, pieces)
    return ChunkOutcome(index, span.end, result.counts, pieces)


_worker = None  # (job, processor) of this worker process


def _init_worker(job):
    """Spawned worker: builds its own processor (tokenizer, jieba dictionary)."""
    global _worker
    _worker = (job, job.processor())


def _init_forked_worker():
    """Forked worker: the processor is inherited; only the parent's SIGTERM
    handler (which raises to clean up output files) must not run here."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_in_worker(index):
    job, processor = _worker
    return run_chunk(job, processor, index)


def default_start_method():
    """"fork" when TensorFlow is not loaded here, else "spawn".

    Forked workers inherit the tokenizer and jieba dictionary the parent
    loaded once (no per-worker start-up); forking a process that runs
    TensorFlow's thread pools is unsafe, so then workers are spawned.
    """
    if "tensorflow" in sys.modules or not hasattr(os, "fork"):
        return "spawn"
    return "fork"


def _terminate(executor):
    """Stops the workers now (error or signal path): kill, then reap."""
    processes = list(getattr(executor, "_processes", {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)


def process_chunks(job, num_workers, shard_paths, shard_names=None):
    """Yields the ChunkOutcome of every chunk of job.layout, in chunk order.

    num_workers == 1 runs in this process and leaves the pieces' data to the
    caller. Otherwise worker processes (started as default_start_method()
    says) write the pieces into the existing files `shard_paths` (called
    `shard_names` in errors) and get at
    most 2 * num_workers chunks ahead of the caller. A worker that dies or
    fails to start raises BrokenProcessPool instead of hanging.
    """
    indices = range(job.layout.num_chunks)
    if num_workers <= 1:
        processor = job.processor()
        for index in indices:
            yield run_chunk(job, processor, index)
        return

    global _worker
    start_method = default_start_method()
    context = multiprocessing.get_context(start_method)
    job = dataclasses.replace(job, offsets=OrderedOffsets(shard_paths, context, shard_names))
    if start_method == "fork":
        _worker = (job, job.processor())
        # Objects the workers inherit stay out of the cyclic collector: a
        # collection in a worker would otherwise write to every one of them
        # and copy all the shared pages (the jieba dictionary, the vocab).
        gc.freeze()
        initializer, initargs = _init_forked_worker, ()
    else:
        initializer, initargs = _init_worker, (job,)
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=num_workers, mp_context=context,
        initializer=initializer, initargs=initargs)
    in_flight = collections.deque()
    pending = iter(indices)
    finished = False
    try:
        for index in pending:
            in_flight.append(executor.submit(_run_in_worker, index))
            if len(in_flight) >= 2 * num_workers:
                break
        while in_flight:
            outcome = in_flight.popleft().result()
            for index in pending:
                in_flight.append(executor.submit(_run_in_worker, index))
                break
            yield outcome
        finished = True
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _terminate(executor)
        _worker = None
        gc.unfreeze()
