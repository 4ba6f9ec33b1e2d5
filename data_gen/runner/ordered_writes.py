"""Shard pieces written by the worker processes themselves, in chunk order.

Every chunk's pieces go at the next free place of their shard files, and the
places are handed out in chunk order: chunk k takes its places once chunk
k - 1 has taken its own. So the files hold the pieces in chunk order, as a
single process writes them, whatever the number of workers.

A worker does not wait for its turn. It hands the pieces to its writer thread
(`OrderedOffsets.submit`) and goes on to its next chunk; the thread waits for
the chunk's turn, takes the places and writes with os.pwrite. A thread holds
at most QUEUED_CHUNKS chunks not yet written; beyond that the worker waits
(that wait is what the profile calls waiting for offsets). The parent waits
until every chunk is written (`wait_written`) before it stops the workers,
and raises the first write error a worker met, naming the output file.
"""
import errno
import os
import queue
import threading
import time
import traceback

QUEUED_CHUNKS = 4  # per worker: chunks made but not yet written
_STATS = ("pid", "waiting", "writing")  # per worker slot: its writer thread's seconds


class OrderedOffsets:
    """Places in the shard files handed out in chunk order, shared by the workers.

    Made in the parent before the workers start (inherited by fork, pickled
    for spawn); num_workers bounds the per-worker statistics slots.
    """

    def __init__(self, paths, context, names=None, num_workers=1):
        self.paths = list(paths)
        self.names = list(names or paths)  # what an error calls the files
        self._condition = context.Condition()
        self._next_chunk = context.RawValue("q", 0)
        self._written = context.RawValue("q", 0)
        self._awaited = context.RawValue("q", 0)  # > 0: the parent waits for this many written
        self._offsets = context.RawArray("q", len(self.paths))
        self._error = context.RawArray("q", 2)  # errno (or -1), shard + 1; 0 = no error
        self._stats = context.RawArray("d", len(_STATS) * max(num_workers, 1))
        self._slots = context.RawValue("q", 0)
        self._local = None  # this process's writer: (pid, slot, queue, thread, fds)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_local"] = None  # threads, queues and file descriptors stay in their process
        return state

    # In a worker.

    def submit(self, index, pieces):
        """Queues chunk `index`'s pieces for this process's writer thread.

        Returns the seconds spent waiting because QUEUED_CHUNKS were still unwritten.
        """
        local = self._writer()
        started = time.monotonic()
        try:
            local["queue"].put_nowait((index, pieces))
            return 0.0
        except queue.Full:
            local["queue"].put((index, pieces))
            return time.monotonic() - started

    def _writer(self):
        local = self._local
        if local is None or local["pid"] != os.getpid():
            with self._condition:  # a restarted worker would share the last slot
                slot = min(self._slots.value, len(self._stats) // len(_STATS) - 1)
                self._slots.value = slot + 1
            self._stats[slot * len(_STATS)] = os.getpid()
            local = self._local = {"pid": os.getpid(), "slot": slot, "fds": {},
                                   "queue": queue.Queue(maxsize=QUEUED_CHUNKS)}
            # A daemon: it is idle when the parent stops the workers (all is written then).
            threading.Thread(target=self._write_queued, args=(local,), name="ordered-writes",
                             daemon=True).start()
        return local

    def _write_queued(self, local):
        while True:
            index, pieces = local["queue"].get()
            try:
                waiting, writing = self._place_and_write(index, pieces, local["fds"])
            except OSError as error:  # disk full, file too large: the parent names the file
                self._fail(error.errno or errno.EIO, getattr(error, "shard", -1))
                continue
            except Exception:  # a bug: said here, the parent stops the run
                traceback.print_exc()
                self._fail(-1, -1)
                continue
            self._add_stat(local["slot"], "waiting", waiting)
            self._add_stat(local["slot"], "writing", writing)
            with self._condition:
                self._written.value += 1
                if 0 < self._awaited.value <= self._written.value:
                    self._condition.notify_all()  # else nobody waits for a count

    def _add_stat(self, slot, name, value):
        self._stats[slot * len(_STATS) + _STATS.index(name)] += value

    def _fail(self, code, shard):
        with self._condition:
            if not self._error[0]:
                self._error[0], self._error[1] = code, shard + 1
            self._condition.notify_all()

    def _place_and_write(self, index, pieces, fds):
        """Waits for chunk `index`'s turn, takes its places, writes; -> (waiting, writing) s."""
        sizes = [0] * len(self.paths)
        for piece in pieces:
            sizes[piece.shard] = len(piece.data)
        started = time.monotonic()
        with self._condition:
            self._condition.wait_for(lambda: self._next_chunk.value == index)
            starts = self._offsets[:]
            for shard, size in enumerate(sizes):
                self._offsets[shard] += size
            self._next_chunk.value = index + 1
            self._condition.notify_all()
        placed = time.monotonic()
        for piece in pieces:
            _pwrite_all(fds, self.paths[piece.shard], piece.shard, piece.data,
                        starts[piece.shard])
            piece.data = None
        return placed - started, time.monotonic() - placed

    # In the parent.

    def check(self):
        """Raises the first write error a worker met (OSError naming the output file)."""
        code, shard = self._error[:]
        if code == -1:
            raise RuntimeError("a data_gen worker's writer thread failed; its error is printed "
                               "above")
        if code:
            name = self.names[shard - 1] if shard > 0 else "the output"
            raise OSError(code, os.strerror(code), name)

    def wait_written(self, num_chunks, workers_alive, poll_seconds=0.5):
        """Returns once all num_chunks chunks are written; raises a worker's write error,
        or RuntimeError when workers_alive() turns False first."""
        while True:
            with self._condition:
                self._awaited.value = num_chunks
                done = self._condition.wait_for(
                    lambda: self._written.value >= num_chunks or self._error[0], poll_seconds)
            self.check()
            if done:
                return
            if not workers_alive():
                raise RuntimeError(
                    f"{num_chunks - self._written.value} of {num_chunks} chunk(s) were never "
                    "written: a data_gen worker process ended early (killed, out of memory?)")

    def worker_stats(self):
        """Per worker process that wrote: {pid, waiting, writing} (its writer thread's seconds)."""
        width = len(_STATS)
        return [dict(zip(_STATS, self._stats[slot * width:(slot + 1) * width]))
                for slot in range(self._slots.value)]


def _pwrite_all(fds, path, shard, data, offset):
    fd = fds.get(path)
    if fd is None:
        fd = fds[path] = os.open(path, os.O_WRONLY)
    view = memoryview(data)
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    except OSError as error:
        error.shard = shard
        raise
