"""Where a data generation run spends its time: per worker and in the parent.

Each chunk carries a ChunkTiming from the process that made it (timestamps
are time.monotonic(), one clock for every process of the machine). The
parent adds them to a RunProfile, which splits every worker's share of the
parallel part (first chunk's start to last chunk's end) into

  busy     reading, tokenizing, masking, encoding its chunks;
  waiting  blocked because its writer thread still held
           ordered_writes.QUEUED_CHUNKS chunks whose places (in chunk order)
           were not yet free: the ordered-offset hand-off holding it back;
  idle     the rest: waiting for its next chunk index, or done early.

Its writer thread's times (data_gen.runner.ordered_writes) run beside those: waiting
for a chunk's turn, and writing (os.pwrite). The parent's own serial time is
from the run's start to the first chunk's start (flags, vocab, dictionary,
worker start-up) and from the last chunk's end to the run's end (the last
writes, stopping the workers, syncing and naming the files, sidecars); with
one worker, the parent also writes, and that time is `parent_writing`.
"""
import collections
import dataclasses
import os
import resource
import time


@dataclasses.dataclass
class ChunkTiming:
    """One chunk in the process that made it (seconds; started/finished are monotonic)."""
    pid: int
    started: float
    busy: float
    waiting: float = 0.0
    finished: float = 0.0


class ChunkClock:
    """Times one chunk in its worker: `clock.busy_done()`, then `clock.done(waited)`."""

    def __init__(self):
        self.started = time.monotonic()
        self.timing = None

    def busy_done(self):
        self.timing = ChunkTiming(os.getpid(), self.started, time.monotonic() - self.started)
        return self.timing

    def done(self, waiting=0.0):
        self.timing.waiting = waiting
        self.timing.finished = time.monotonic()
        return self.timing


class RunProfile:
    """Sums ChunkTimings by worker; `summary()` is the profile of the whole run."""

    def __init__(self, started=None):
        self.started = time.monotonic() if started is None else started
        self._cpu_at_start = _own_cpu_seconds()
        self.parent_cpu = None
        self.finished = None
        self.workers = collections.OrderedDict()  # pid -> Counter, in order of first chunk
        self.first_start = self.last_finish = None
        self.chunk_seconds = []  # busy seconds of every chunk, in the order they came
        self.parent_writing = 0.0

    def add(self, timing):
        if timing is None:
            return
        worker = self.workers.setdefault(timing.pid, collections.Counter())
        worker["chunks"] += 1
        self.chunk_seconds.append(timing.busy)
        worker["busy"] += timing.busy
        worker["waiting"] += timing.waiting
        worker["longest_wait"] = max(worker["longest_wait"], timing.waiting)
        self.first_start = min(self.first_start or timing.started, timing.started)
        self.last_finish = max(self.last_finish or timing.finished, timing.finished)

    def add_writer_stats(self, stats):
        """Writer-thread totals (ordered_writes.OrderedOffsets.worker_stats()) by pid."""
        for entry in stats:
            worker = self.workers.get(int(entry["pid"]))
            if worker is not None:
                worker["writer_waiting"] += entry["waiting"]
                worker["writer_writing"] += entry["writing"]

    def finish(self):
        self.finished = time.monotonic()
        self.parent_cpu = _own_cpu_seconds() - self._cpu_at_start

    def summary(self):
        """A dict of seconds: wall, the parent's serial start and end, and per worker."""
        finished = self.finished or time.monotonic()
        wall = finished - self.started
        if self.first_start is None:
            return {"wall_seconds": round(wall, 3), "workers": []}
        workers = []
        span = self.last_finish - self.first_start  # the run's parallel part
        for number, worker in enumerate(self.workers.values()):
            accounted = worker["busy"] + worker["waiting"]
            workers.append({
                "worker": number, "chunks": worker["chunks"],
                "busy_seconds": round(worker["busy"], 3),
                "waiting_for_offsets_seconds": round(worker["waiting"], 3),
                "longest_wait_seconds": round(worker["longest_wait"], 3),
                "idle_seconds": round(max(span - accounted, 0.0), 3),
                "writer_waiting_seconds": round(worker["writer_waiting"], 3),
                "writer_writing_seconds": round(worker["writer_writing"], 3),
            })
        chunks = sorted(self.chunk_seconds)
        return {
            "wall_seconds": round(wall, 3),
            "serial_start_seconds": round(self.first_start - self.started, 3),
            "serial_end_seconds": round(finished - self.last_finish, 3),
            "parent_writing_seconds": round(self.parent_writing, 3),
            "parent_cpu_seconds": round(self.parent_cpu or 0.0, 3),
            "chunk_busy_seconds": {name: round(chunks[int(q * (len(chunks) - 1))], 4)
                                   for name, q in (("p50", 0.5), ("p90", 0.9), ("max", 1.0))},
            "workers": workers,
        }


def _own_cpu_seconds():
    """User + system CPU seconds of this process's threads (not of its children)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def format_profile(summary):
    """The --profile_workers lines of the final account."""
    lines = ["[data_gen] profile: {wall:.2f} s wall; parent alone {start:.2f} s before the "
             "first chunk, {end:.2f} s after the last".format(
                 wall=summary["wall_seconds"], start=summary.get("serial_start_seconds", 0.0),
                 end=summary.get("serial_end_seconds", 0.0))]
    lines[0] += ", {:.2f} s of CPU in all".format(summary.get("parent_cpu_seconds", 0.0))
    if summary.get("parent_writing_seconds"):
        lines[0] += " (writing {:.2f} s)".format(summary["parent_writing_seconds"])
    if "chunk_busy_seconds" in summary:
        lines[0] += "; chunk busy s p50 {p50} p90 {p90} max {max}".format(
            **summary["chunk_busy_seconds"])
    for worker in summary["workers"]:
        line = ("[data_gen]   worker {worker}: {chunks} chunks, busy {busy_seconds:.2f} s, waiting "
                "for offsets {waiting_for_offsets_seconds:.2f} s (longest "
                "{longest_wait_seconds:.3f} s), idle {idle_seconds:.2f} s").format(**worker)
        if not summary.get("parent_writing_seconds"):  # workers with writer threads
            line += ("; its writer thread: waiting {writer_waiting_seconds:.2f} s, writing "
                     "{writer_writing_seconds:.2f} s").format(**worker)
        lines.append(line)
    return "\n".join(lines)
