"""What N data_gen workers would reach, from costs measured on this machine.

    python bench/data_gen_worker_model.py [--corpus=PATH | --corpus_mb=22] [--mode=bert]
        [--dupe_factor=5] [--workers=2,8,32,64] [--shards=1] [--seed=12345]

Measured here, in this process, one at a time:
  * every chunk's busy seconds and output bytes (the mode's chunk processor on each chunk
    of the corpus, as one worker makes them);
  * the parent's CPU seconds per chunk, from a 2-worker run's profile;
  * os.pwrite and copy (read + write, as a merge by name does) in MB/s;
  * multiprocessing.Condition.notify_all with K processes waiting: every
    placement in chunk order wakes every writer thread that waits.
Then a discrete-event simulation of N workers, each chunk drawn from the
measured ones (the same draws for every design), for four designs:
  lock_step     a worker waits for its chunk's turn, then writes (main before
                the writer threads);
  write_behind  a writer thread per worker waits and writes; the worker
                blocks only with QUEUED_CHUNKS unwritten (today's local runner);
  own_files     each worker appends to files of its own, merged by name in
                chunk order at the end (--shards merges run in parallel);
  beam          the Beam runner: one file per piece, then WriteShard per shard.
One JSON line per (design, N): efficiency = (busy seconds / N) / makespan of
the parallel part (1.0 = as fast as N independent processes on N cores; what
the machine's cores lose to each other is not modelled), the chunks a worker
held unwritten at most and their MB, the parent's and the placement lock's
load. --straggler_every K makes every K-th chunk --straggler_factor times
slower (a preempted worker).
"""
import argparse
import heapq
import json
import os
import random
import statistics
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
from data_gen_bench import VOCAB, _emit  # noqa: E402  (puts the repo on sys.path too)

BENCH = "data_gen_worker_model"


def measure_chunks(config):
    """(busy seconds, output bytes) of every chunk of config's corpus, made in this process."""
    from common.file_utils import input_size
    from data_gen.runner.corpus_chunks import CorpusLayout
    from data_gen.text.corpus_reader import expand_input_patterns
    from data_gen.runner.parallel import ChunkJob, run_chunk
    files = expand_input_patterns(config.input_file)
    layout = CorpusLayout(files, [input_size(path) for path in files], config.chunk_bytes)
    job = ChunkJob(config, layout, 1)
    processor = job.processor()
    chunks = []
    for index in range(layout.num_chunks):
        outcome = run_chunk(job, processor, index)
        chunks.append((outcome.timing.busy, sum(len(piece.data) for piece in outcome.pieces)))
    return chunks


def measure_parent(config):
    """The parent's CPU seconds per chunk in a 2-worker run (serial start left out)."""
    import dataclasses
    from common.file_utils import SIDECAR_SUFFIX
    from data_gen.create_pretraining_data import run
    account = run(dataclasses.replace(config, num_workers=2, profile_workers=True))
    profile = account["profile"]
    for path in account["output_files"]:
        os.remove(path)
        os.remove(path + SIDECAR_SUFFIX)
    return max(profile["parent_cpu_seconds"] - profile["serial_start_seconds"], 0.0) / max(
        account["chunks"], 1)


def measure_io(work_dir, megabytes=256, piece_mb=4):
    """(pwrite MB/s, copy MB/s) into a file in work_dir, pieces of piece_mb."""
    piece = os.urandom(piece_mb << 20)
    path, copy = os.path.join(work_dir, "io.bin"), os.path.join(work_dir, "io_copy.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    started = time.monotonic()
    for number in range(megabytes // piece_mb):
        os.pwrite(fd, piece, number * len(piece))
    pwrite = megabytes / (time.monotonic() - started)
    os.close(fd)
    started = time.monotonic()
    with open(path, "rb") as source, open(copy, "wb") as target:
        for block in iter(lambda: source.read(8 << 20), b""):
            target.write(block)
    copied = megabytes / (time.monotonic() - started)
    os.remove(path)
    os.remove(copy)
    return pwrite, copied


def measure_piece_file(work_dir, count=200):
    """Seconds to create, write (4 KiB), close and later delete one piece file, as Beam does."""
    started = time.monotonic()
    for number in range(count):
        with open(os.path.join(work_dir, f"piece-{number}"), "wb") as piece:
            piece.write(b"x" * 4096)
    for number in range(count):
        os.remove(os.path.join(work_dir, f"piece-{number}"))
    return (time.monotonic() - started) / count


def _waiter(condition, value, ready):
    with condition:
        ready.release()
        condition.wait_for(lambda: value.value < 0)


def measure_notify(waiters, repeats=200):
    """Seconds one notify_all takes with `waiters` processes waiting on the condition."""
    import multiprocessing
    context = multiprocessing.get_context("fork")
    condition, value = context.Condition(), context.RawValue("q", 0)
    ready = context.Semaphore(0)
    processes = [context.Process(target=_waiter, args=(condition, value, ready), daemon=True)
                 for _ in range(waiters)]
    for process in processes:
        process.start()
    for _ in processes:
        ready.acquire()
    times = []
    for _ in range(repeats):
        time.sleep(0.002)  # the woken go back to waiting
        with condition:
            started = time.monotonic()
            value.value += 1
            condition.notify_all()
            times.append(time.monotonic() - started)
    with condition:
        value.value = -1
        condition.notify_all()
    for process in processes:
        process.join()
    return statistics.median(times)


def simulate(design, workers, draws, costs, shards=1, queued=4):
    """Makespan of the parallel part and what it held; see the module docstring.

    draws: (busy seconds, output bytes) per chunk, in chunk order. Writing a
    chunk costs its worker's core bytes / pwrite speed, in every design.
    """
    free = [(0.0, worker) for worker in range(workers)]  # (time the worker is free, worker)
    heapq.heapify(free)
    placed_at = last_written = 0.0
    writer_free = [0.0] * workers
    unwritten = [[] for _ in range(workers)]  # when each queued chunk of a worker is written
    held_max, lock_busy, blocked = 0, 0.0, 0.0
    per_place = costs["place_s"] + costs["notify_per_waiter_s"] * max(workers - 1, 0)
    for seconds, size in draws:
        writing = size / costs["pwrite_bps"]
        start, worker = heapq.heappop(free)  # 2N handed out: a free worker finds one queued
        made = start + seconds
        if design == "lock_step":  # wait for the turn, take the places, write
            placed_at = max(made, placed_at) + per_place
            lock_busy += per_place
            blocked += placed_at - per_place - made
            finished = last_written = placed_at + writing
        elif design == "write_behind":  # hand over; block only with `queued` unwritten
            finished = made + writing  # the writer thread's pwrite runs on the worker's core
            queue = [done for done in unwritten[worker] if done > made]
            if len(queue) >= queued:
                blocked += queue[0] - made
                finished = queue.pop(0) + writing
            placed_at = max(made, writer_free[worker], placed_at) + per_place
            lock_busy += per_place
            writer_free[worker] = placed_at + writing
            last_written = max(last_written, writer_free[worker])
            queue.append(writer_free[worker])
            unwritten[worker] = queue
            held_max = max(held_max, len(queue))
        else:  # own files, piece files: nobody waits for anybody
            finished = last_written = made + writing
        heapq.heappush(free, (finished, worker))
    # The parent takes every outcome and hands out the next index, one at a time.
    parent = len(draws) * costs["parent_per_chunk_s"]
    makespan = max(max(time_ for time_, _ in free), parent, last_written)
    output_mb = sum(size for _, size in draws) / 1e6
    merge = 0.0
    if design in ("own_files", "beam"):  # merged by name after the last piece
        merge = output_mb / min(shards, workers) / costs["copy_mbps"]
        if design == "beam":
            merge += len(draws) * costs["file_s"] / workers
    total = makespan + merge
    ideal = sum(seconds + size / costs["pwrite_bps"] for seconds, size in draws) / workers
    mean_mb = output_mb / len(draws)
    return {"efficiency": round(ideal / total, 3), "makespan_s": round(total, 2),
            "merge_s": round(merge, 2), "blocked_s_per_worker": round(blocked / workers, 3),
            "held_chunks_max": held_max, "held_mb_per_worker_max": round(held_max * mean_mb, 1),
            "parent_load": round(parent / total, 3),
            "placement_lock_load": round(lock_busy / total, 3),
            "output_mb_per_s": round(output_mb / total, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="corpus file (default: built as data_gen_scale's)")
    parser.add_argument("--corpus_mb", type=float, default=22)
    parser.add_argument("--mode", default="bert")
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--workers", default="2,8,32,64")
    parser.add_argument("--shards", type=int, default=1, help="output shards (merge designs)")
    parser.add_argument("--chunks_per_worker", type=int, default=100)
    parser.add_argument("--straggler_every", type=int, default=0)
    parser.add_argument("--straggler_factor", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    if not os.path.exists(VOCAB):
        _emit({"bench": BENCH, "skipped": f"{VOCAB} not present"})
        return 0
    from data_gen.config import GenerationConfig
    from data_gen.runner.ordered_writes import QUEUED_CHUNKS
    import data_gen_scale
    work_dir = tempfile.mkdtemp(prefix="worker_model_")
    corpus = args.corpus
    if not corpus:
        corpus = os.path.join(work_dir, "corpus.txt")
        data_gen_scale.build_large_corpus(corpus, args.corpus_mb, args.seed)
    config = GenerationConfig(input_file=corpus, output_file=os.path.join(work_dir, "out.rec"),
                              vocab_file=VOCAB, mode=args.mode, dupe_factor=args.dupe_factor,
                              max_seq_length=128, max_predictions_per_seq=20, progress=False,
                              random_seed=args.seed)
    chunks = measure_chunks(config)
    pwrite_mbps, copy_mbps = measure_io(work_dir)
    notify = {waiters: measure_notify(waiters) for waiters in (1, 2, 4, 8)}
    slope = (notify[8] - notify[1]) / 7
    costs = {"pwrite_bps": pwrite_mbps * 1e6, "copy_mbps": copy_mbps,
             "place_s": notify[1], "notify_per_waiter_s": max(slope, 0.0),
             "file_s": measure_piece_file(work_dir), "parent_per_chunk_s": measure_parent(config)}
    times = sorted(busy for busy, _ in chunks)
    _emit({"bench": BENCH, "measured": True, "chunks": len(chunks),
           "chunk_busy_s": {"p50": round(times[len(times) // 2], 4),
                            "p90": round(times[int(0.9 * (len(times) - 1))], 4),
                            "max": round(times[-1], 4)},
           "chunk_output_mb_mean": round(statistics.mean(size for _, size in chunks) / 1e6, 2),
           "notify_all_s_by_waiters": {k: round(v, 6) for k, v in notify.items()},
           **{key: round(value, 6) for key, value in costs.items()}})
    rng = random.Random(args.seed)
    for workers in [int(value) for value in args.workers.split(",")]:
        draws = [rng.choice(chunks) for _ in range(workers * args.chunks_per_worker)]
        if args.straggler_every:
            draws = [(busy * args.straggler_factor, size) if number % args.straggler_every == 0
                     else (busy, size) for number, (busy, size) in enumerate(draws, 1)]
        for design in ("lock_step", "write_behind", "own_files", "beam"):
            _emit({"bench": BENCH, "design": design, "workers": workers, "shards": args.shards,
                   "straggler_every": args.straggler_every,
                   **simulate(design, workers, draws, costs, args.shards, QUEUED_CHUNKS)})
    for name in os.listdir(work_dir):
        os.remove(os.path.join(work_dir, name))
    os.rmdir(work_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
