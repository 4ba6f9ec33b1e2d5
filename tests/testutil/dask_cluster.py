"""A dask.distributed cluster on 127.0.0.1 as a user starts one: a `dask scheduler` process
and `dask worker` processes (each with its nanny, one thread), stopped and bounded in time;
and a worker plugin that kills its worker at a set point of a job."""
import os
import signal
import subprocess
import sys
import time

from distributed.diagnostics.plugin import WorkerPlugin

from tests.testutil.cli_runs import REPO_ROOT, free_ports

START_SECONDS = 60
STOP_SECONDS = 15
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Cluster:
    """A scheduler and `workers` worker processes; `address` is the scheduler's."""

    def __init__(self, directory, workers=2):
        self.directory = directory
        self.address = f"tcp://127.0.0.1:{free_ports(1)[0]}"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(
            [str(REPO_ROOT), TESTS] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.processes = []
        self.log = open(os.path.join(directory, "cluster.log"), "w")
        self._start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                     self.address.rsplit(":", 1)[1], "--no-dashboard"], env)
        for index in range(workers):
            self._start(["distributed.cli.dask_worker", self.address, "--nthreads", "1",
                         "--name", f"worker-{index}", "--no-dashboard", "--memory-limit", "0",
                         "--local-directory", directory], env)

    def _start(self, module_args, env):
        # Own session: a test's stop() ends the nanny's worker process too.
        self.processes.append(subprocess.Popen(
            [sys.executable, "-m", *module_args], cwd=self.directory, env=env,
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True))

    def client(self, timeout=START_SECONDS):
        from distributed import Client  # pylint: disable=import-outside-toplevel
        return Client(self.address, timeout=timeout)

    def wait_until_ready(self, workers=2):
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with self.client(timeout=5) as client:
                    client.wait_for_workers(workers, timeout=max(1, deadline - time.monotonic()))
                return
            except (OSError, TimeoutError):
                if time.monotonic() > deadline or any(p.poll() is not None
                                                      for p in self.processes):
                    raise RuntimeError("the test's Dask cluster did not start; its log:\n"
                                       + self.read_log()) from None
                time.sleep(0.5)

    def read_log(self):
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as handle:
            return handle.read()[-4000:]

    def stop(self):
        for process in reversed(self.processes):  # workers first
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
        self.log.close()


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


class KillOnFirstPiece(WorkerPlugin):
    """Dask worker plugin: the first worker process (of the cluster) that writes a shard piece
    of data_gen.runner.beam_pipeline writes half of it under its temporary name, records its pid in
    `claim` and dies by SIGKILL (no cleanup, as on a lost machine). Later pieces and other
    workers write as usual; teardown puts the writer back."""

    name = "kill-on-first-piece"

    def __init__(self, claim):
        self.claim = claim
        self.original = None

    def setup(self, worker):  # pylint: disable=unused-argument
        from data_gen.runner import beam_pipeline  # pylint: disable=import-outside-toplevel
        self.original = beam_pipeline._write_from_worker
        claim, original = self.claim, self.original

        def write_or_die(path, data):
            try:
                descriptor = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return original(path, data)
            os.write(descriptor, str(os.getpid()).encode())
            os.close(descriptor)
            directory, name = os.path.split(path)
            with open(os.path.join(directory, f".{name}.incomplete-killed"), "wb") as half:
                half.write(data[:len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
            return None

        beam_pipeline._write_from_worker = write_or_die

    def teardown(self, worker):  # pylint: disable=unused-argument
        if self.original is not None:
            from data_gen.runner import beam_pipeline  # pylint: disable=import-outside-toplevel
            beam_pipeline._write_from_worker = self.original


def made_chunks():
    """Run in each worker (Client.run): whether this process has made chunks of a
    data_gen.runner.beam_pipeline job."""
    module = sys.modules.get("data_gen.runner.beam_pipeline")
    return bool(module is not None and module._jobs)  # pylint: disable=protected-access
