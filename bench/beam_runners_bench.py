"""One corpus through the local CLI and the Beam pipeline's runners, side by side, as JSON lines.

    python bench/beam_runners_bench.py [CORPUS.txt] [--mode=roberta] [--shards=2]

Runs, on ../shared/data/corpus/clue_small_sample.txt (or CORPUS) with Google's
Chinese vocab, seq 128, 20 predictions, dupe_factor 5:
  cli     python -m data_gen.create_pretraining_data --num_workers=2
  direct  python -m data_gen.runner.beam_pipeline --runner=DirectRunner
          --direct_num_workers=2 --direct_running_mode=multi_processing
  dask    python -m data_gen.runner.beam_pipeline --runner=DaskRunner
          --dask_client_address=... on a `dask scheduler` and 2 `dask worker`
          processes (1 thread each) on 127.0.0.1, started before the run
          (their start-up is `cluster_start_seconds`, not in the run's time);
  dask_again  the same on the same cluster once more (workers warm).
One line per run: input MB/s (whole command, interpreter start-up included),
peak RSS per process (the command's tree; for dask also the scheduler, each
worker's nanny and worker process), their sum, and whether every shard and
sidecar is byte-identical to the CLI's (each run writes the same --output_file
in turn). A missing corpus, vocab or extra gives a JSON "skipped" line.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, REPO)
from process_tree import tree_rss_kb  # noqa: E402  (after the path)

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
DEFAULT_CORPUS = os.path.join(SHARED, "corpus", "clue_small_sample.txt")
VOCAB = os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt")
START_SECONDS = 90


def _emit(record):
    print(json.dumps(record, sort_keys=True), flush=True)


def _free_port():
    import socket  # pylint: disable=import-outside-toplevel
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DaskCluster:
    """`dask scheduler` and `workers` `dask worker` processes on 127.0.0.1."""

    def __init__(self, directory, workers=2):
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.log = open(os.path.join(directory, "cluster.log"), "w")
        env = dict(os.environ, PYTHONPATH=REPO)
        started = time.monotonic()
        self.roles = {}
        self._start("scheduler", ["distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", self.address.rsplit(":", 1)[1], "--no-dashboard"],
                    directory, env)
        for index in range(workers):
            self._start(f"worker-{index}", [
                "distributed.cli.dask_worker", self.address, "--nthreads", "1", "--no-dashboard",
                "--memory-limit", "0", "--local-directory", directory], directory, env)
        from distributed import Client  # pylint: disable=import-outside-toplevel
        with Client(self.address, timeout=START_SECONDS) as client:
            client.wait_for_workers(workers, timeout=START_SECONDS)
        self.start_seconds = round(time.monotonic() - started, 2)

    def _start(self, role, module_args, directory, env):
        process = subprocess.Popen([sys.executable, "-m", *module_args], cwd=directory, env=env,
                                   stdout=self.log, stderr=subprocess.STDOUT)
        self.roles[role] = process

    def stop(self):
        for process in reversed(list(self.roles.values())):
            process.terminate()
        for process in self.roles.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.close()


class PeakRss(threading.Thread):
    """Peak VmRSS of every process in the trees under `roots` ({role: pid}), sampled every
    `interval` seconds by one thread (one /proc walk per tree: light beside the run)."""

    def __init__(self, roots, interval=0.1):
        super().__init__(daemon=True)
        self.roots, self.interval = roots, interval
        self.peak_kb = {}  # (role, pid) -> KB
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for role, root in self.roots.items():
                for pid, rss in tree_rss_kb(root):
                    self.peak_kb[(role, pid)] = max(self.peak_kb.get((role, pid), 0), rss)
            self.done.wait(self.interval)

    def stop(self):
        self.done.set()
        self.join()

    def labelled_mb(self):
        """{label: peak MB}: each root as its role, the processes under it `role/child-N`."""
        peaks, children = {}, {}
        for role, pid in sorted(self.peak_kb):
            if pid == self.roots[role]:
                label = role
            else:
                children[role] = children.get(role, 0) + 1
                label = f"{role}/child-{children[role]}"
            if self.peak_kb[(role, pid)]:  # zombies have no VmRSS
                peaks[label] = round(self.peak_kb[(role, pid)] / 1024, 1)
        return peaks


def run_once(name, command, cluster=None):
    """Runs `command` (a list), sampling memory; -> (seconds, {label: peak MB}, output)."""
    log = tempfile.TemporaryFile(mode="w+")
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                               text=True)
    roots = {"command": process.pid}
    roots.update({role: member.pid for role, member in (cluster.roles.items() if cluster
                                                          else ())})
    sampler = PeakRss(roots)
    sampler.start()
    code = process.wait()
    seconds = time.monotonic() - started
    sampler.stop()
    log.seek(0)
    output = log.read()
    if code != 0:
        raise RuntimeError(f"{name}: {' '.join(command)} failed:\n{output[-3000:]}")
    return seconds, sampler.labelled_mb(), output


def _same_bytes(folder, reference):
    names = sorted(os.listdir(reference))
    if sorted(os.listdir(folder)) != names:
        return False
    for name in names:
        with open(os.path.join(folder, name), "rb") as a, open(os.path.join(reference, name),
                                                              "rb") as b:
            if a.read() != b.read():
                return False
    return True


def main(argv):
    options = {"mode": "roberta", "shards": "2"}
    corpus = DEFAULT_CORPUS
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            options[key] = value
        else:
            corpus = arg
    for path, what in ((corpus, "corpus"), (VOCAB, "Google vocab")):
        if not os.path.exists(path):
            _emit({"bench": "beam_runners", "skipped": f"{what} {path} not present"})
            return
    try:
        import apache_beam  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        import distributed  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as error:
        _emit({"bench": "beam_runners", "skipped": f"{error}: pip install -e '.[beam,dask]'"})
        return
    input_mb = os.path.getsize(corpus) / 1e6
    with tempfile.TemporaryDirectory(prefix="beam_runners_bench_") as work:
        output = os.path.join(work, "run", "train")
        flags = [f"--input_file={corpus}", f"--output_file={output}", f"--vocab_file={VOCAB}",
                 f"--mode={options['mode']}", "--max_seq_length=128",
                 "--max_predictions_per_seq=20", "--dupe_factor=5",
                 f"--num_output_shards={options['shards']}", "--num_workers=2", "--noprogress"]

        def measure(name, module, runner_flags=(), cluster=None, **extra):
            os.makedirs(os.path.dirname(output))
            seconds, peaks, _ = run_once(name, [sys.executable, "-m", module, *flags,
                                                *runner_flags], cluster)
            kept = os.path.join(work, name)
            shutil.move(os.path.dirname(output), kept)
            with open(f"{kept}/train-00000-of-{int(options['shards']):05d}.meta.json") as meta:
                instances = json.load(meta)["run_counts"]["instances"]
            _emit(dict({
                "bench": "beam_runners", "runner": name, "corpus": corpus,
                "mode": options["mode"], "input_mb": round(input_mb, 3),
                "seconds": round(seconds, 2), "input_mb_per_s": round(input_mb / seconds, 4),
                "instances": instances, "peak_rss_mb_by_process": peaks,
                "peak_rss_mb_sum_of_processes": round(sum(peaks.values()), 1),
                "identical_to_cli": _same_bytes(kept, os.path.join(work, "cli")),
                "load_average_1min": round(os.getloadavg()[0], 2),
                "flags": "seq 128, 20 predictions, dupe_factor 5, 2 workers",
            }, **extra))

        measure("cli", "data_gen.create_pretraining_data")
        measure("direct", "data_gen.runner.beam_pipeline", ("--runner=DirectRunner",
                "--direct_num_workers=2", "--direct_running_mode=multi_processing"))
        cluster = DaskCluster(work)
        try:
            dask_flags = ("--runner=DaskRunner", f"--dask_client_address={cluster.address}")
            about = dict(cluster_start_seconds=cluster.start_seconds, dask_workers=2,
                         dask_threads_per_worker=1)
            measure("dask", "data_gen.runner.beam_pipeline", dask_flags, cluster, **about,
                    note="the cluster's first job: its workers import Beam and load the "
                         "tokenizer")
            measure("dask_again", "data_gen.runner.beam_pipeline", dask_flags, cluster, **about,
                    note="a second job on the same cluster")
        finally:
            cluster.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
