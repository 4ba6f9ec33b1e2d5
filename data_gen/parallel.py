"""Chunking of the document stream and the bounded multi-process pipeline.

Chunk boundaries depend only on the documents (a chunk closes once it holds
`chunk_chars` characters), never on the number of workers; chunk k is
processed with a generator seeded from (seed, k); results are yielded in
chunk order. Together these make the output byte-identical for any
--num_workers. At most `2 * num_workers` chunks are in flight, so memory is
bounded whatever the corpus size.
"""
import collections
import multiprocessing

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
_worker_setup_error = None


def _init_worker(config):
    # An initializer that raises makes multiprocessing.Pool respawn workers
    # forever; keep the error and report it with the first task instead.
    global _worker_processor, _worker_setup_error
    try:
        _worker_processor = ChunkProcessor(config)
    except Exception as error:  # reported by _process_in_worker
        _worker_setup_error = error


def _process_in_worker(chunk_index, documents):
    if _worker_setup_error is not None:
        raise _worker_setup_error
    return _worker_processor.process(chunk_index, documents)


def process_chunks(config, chunks, num_workers):
    """Yields ChunkResult for every chunk, in chunk order.

    num_workers == 1 runs in this process; otherwise a pool of freshly
    spawned processes (spawn: safe even if the caller imported TensorFlow)
    receives at most 2 * num_workers chunks ahead of the writer.
    """
    if num_workers <= 1:
        processor = ChunkProcessor(config)
        for chunk_index, documents in enumerate(chunks):
            yield processor.process(chunk_index, documents)
        return

    context = multiprocessing.get_context("spawn")
    pool = context.Pool(num_workers, initializer=_init_worker, initargs=(config,))
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
                in_flight.append(pool.apply_async(_process_in_worker, (chunk_index, documents)))
            if not in_flight:
                break
            yield in_flight.popleft().get()
        finished = True
    finally:
        if finished:
            pool.close()
        else:
            pool.terminate()
        pool.join()
