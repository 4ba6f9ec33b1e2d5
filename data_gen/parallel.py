"""Chunking of the document stream and the bounded multi-process pipeline.

Chunk boundaries depend only on the documents (a chunk closes once it holds
`chunk_chars` characters), never on the number of workers; chunk k is
processed with a generator seeded from (seed, k); results are yielded in
chunk order. Together these make the output byte-identical for any
--num_workers. At most `2 * num_workers` chunks are in flight, so memory is
bounded whatever the corpus size.
"""
import collections
import concurrent.futures
import multiprocessing
import os
import signal
import sys

from data_gen.chunk_processing import ChunkProcessor


def chunk_documents(documents, chunk_chars):
    """Groups an iterable of documents into lists holding >= chunk_chars chars."""
    chunk = []
    size = 0
    for document in documents:
        chunk.append(document)
        size += sum(len(sentence) for sentence in document)
        if size >= chunk_chars:
            yield chunk
            chunk = []
            size = 0
    if chunk:
        yield chunk


_worker_processor = None


def _init_worker(config):
    """Spawned worker: builds its own processor (tokenizer, jieba dictionary)."""
    global _worker_processor
    _worker_processor = ChunkProcessor(config)


def _init_forked_worker():
    """Forked worker: the processor is inherited; only the parent's SIGTERM
    handler (which raises to clean up output files) must not run here."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def default_start_method():
    """"fork" when TensorFlow is not loaded here, else "spawn".

    Forked workers inherit the tokenizer and jieba dictionary the parent
    loaded once (no per-worker start-up); forking a process that runs
    TensorFlow's thread pools is unsafe, so then workers are spawned.
    """
    if "tensorflow" in sys.modules or not hasattr(os, "fork"):
        return "spawn"
    return "fork"


def _process_in_worker(chunk_index, documents):
    return _worker_processor.process(chunk_index, documents)


def _terminate(executor):
    """Stops the workers now (error or signal path): kill, then reap."""
    processes = list(getattr(executor, "_processes", {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)


def process_chunks(config, chunks, num_workers):
    """Yields ChunkResult for every chunk, in chunk order.

    num_workers == 1 runs in this process; otherwise worker processes
    (started as default_start_method() says) receive at
    most 2 * num_workers chunks ahead of the writer. A worker that dies or
    fails to start raises BrokenProcessPool instead of hanging.
    """
    if num_workers <= 1:
        processor = ChunkProcessor(config)
        for chunk_index, documents in enumerate(chunks):
            yield processor.process(chunk_index, documents)
        return

    global _worker_processor
    start_method = default_start_method()
    if start_method == "fork":
        _worker_processor = ChunkProcessor(config)
        initializer, initargs = _init_forked_worker, ()
    else:
        initializer, initargs = _init_worker, (config,)
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=num_workers, mp_context=multiprocessing.get_context(start_method),
        initializer=initializer, initargs=initargs)
    in_flight = collections.deque()
    max_in_flight = 2 * num_workers
    finished = False
    try:
        chunk_iter = enumerate(chunks)
        exhausted = False
        while True:
            while not exhausted and len(in_flight) < max_in_flight:
                try:
                    chunk_index, documents = next(chunk_iter)
                except StopIteration:
                    exhausted = True
                    break
                in_flight.append(executor.submit(_process_in_worker, chunk_index, documents))
            if not in_flight:
                break
            yield in_flight.popleft().result()
        finished = True
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _terminate(executor)
        _worker_processor = None
