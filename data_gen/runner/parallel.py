"""The local runner's process pool: workers read, process and write whole chunks.

A task is a chunk index only. The worker finds the chunk's byte range itself
(data_gen.runner.corpus_chunks), reads it, makes its records with the generator of
(seed, chunk) and encodes its shard pieces (data_gen.records.shard_pieces). Its writer
thread then puts them at the chunk's places in the shard files, handed out in
chunk order (data_gen.runner.ordered_writes), while the worker goes on with its next
chunk; what comes back is a small ChunkOutcome. The parent reads and writes no
corpus byte, the output is byte-identical for any --num_workers, and at most
2 * num_workers chunks are handed out plus ordered_writes.QUEUED_CHUNKS made
but unwritten per worker, so memory does not grow with the corpus.
"""
import concurrent.futures
import dataclasses
import gc
import itertools
import multiprocessing
import os
import signal
import sys

from common.file_utils import open_binary_input
from data_gen import modes
from data_gen.runner.ordered_writes import OrderedOffsets
from data_gen.records.shard_pieces import ChunkOutcome, shard_pieces
from data_gen.runner.worker_profile import ChunkClock


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
    document_split: object = None  # data_gen.text.document_split.DocumentSplit, or all documents

    def processor(self):
        """The chunk processor of the run's mode (data_gen.modes)."""
        return modes.get(self.config.mode).make_processor(self.config)


def run_chunk(job, processor, index):
    """Chunk `index` -> ChunkOutcome. With job.offsets set, the pieces go to this
    process's writer thread and the outcome's pieces carry no data."""
    clock = ChunkClock()
    span = job.layout.chunk(index, job.opener)
    result = processor.process_span(span, job.opener, job.document_split)
    pieces = shard_pieces(result, job.num_shards, job.config.compression)
    clock.busy_done()
    blocked = 0.0
    if job.offsets is not None:
        blocked = job.offsets.submit(index, pieces)
        pieces = [dataclasses.replace(piece, data=None) for piece in pieces]
    return ChunkOutcome(index, span.end, result.counts, pieces, clock.done(blocked))


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


def _worker_processes(executor):
    return list((getattr(executor, "_processes", None) or {}).values())


def _in_chunk_order(executor, indices, window, offsets):
    """Submits `indices` with at most `window` running; yields their outcomes in index order.

    A new chunk is handed out as soon as any running one is done, not when
    the oldest is: a slow chunk holds back only the outcomes' order (kept
    here, small), never the other workers.
    """
    running, done = set(), {}
    next_index = 0
    for index in itertools.islice(indices, window):
        running.add(executor.submit(_run_in_worker, index))
    while running:
        finished, running = concurrent.futures.wait(
            running, timeout=0.5, return_when=concurrent.futures.FIRST_COMPLETED)
        offsets.check()  # a worker's write error ends the run
        for future in finished:
            outcome = future.result()
            done[outcome.index] = outcome
        for index in itertools.islice(indices, len(finished)):
            running.add(executor.submit(_run_in_worker, index))
        while next_index in done:
            yield done.pop(next_index)
            next_index += 1


def _terminate(executor):
    """Stops the workers now (error or signal path): kill, then reap."""
    processes = _worker_processes(executor)
    for process in processes:
        if process.is_alive():
            process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)


def process_chunks(job, num_workers, shard_paths, shard_names=None, profile=None):
    """Yields the ChunkOutcome of every chunk of job.layout, in chunk order.

    num_workers == 1 runs in this process and leaves the pieces' data to the
    caller. Otherwise worker processes (started as default_start_method()
    says) write the pieces into the existing files `shard_paths` (called
    `shard_names` in errors), with at most 2 * num_workers chunks handed out
    and not yet made; all is written when the generator ends, and the writer
    threads' times go to `profile` (a worker_profile.RunProfile). A worker
    that dies or fails to start raises BrokenProcessPool (or RuntimeError)
    instead of hanging; a write error raises OSError naming the file.
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
    offsets = OrderedOffsets(shard_paths, context, shard_names, num_workers)
    job = dataclasses.replace(job, offsets=offsets)
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
    pending = iter(indices)
    finished = False
    try:
        yield from _in_chunk_order(executor, pending, 2 * num_workers, offsets)
        processes = _worker_processes(executor)
        offsets.wait_written(job.layout.num_chunks,
                             lambda: all(process.is_alive() for process in processes))
        if profile is not None:
            profile.add_writer_stats(offsets.worker_stats())
        finished = True
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _terminate(executor)
        _worker = None
        gc.unfreeze()
