"""--runner=DaskRunner for data_gen.runner.beam_pipeline: Beam's Dask runner, named and checked.

Beam (2.77) finds its Dask runner only by the full class path and knows the
--dask_* pipeline options only once that module is imported; `prepare` takes
the short name and the options as given, and turns what would fail deep in
the run (dask not installed, no scheduler at the address, --dask_* options
without the runner) into one UserError naming the flag and the fix.

On Dask, Beam's Reshuffle does not spread work: a task is a partition of the
first Create. Unless the user sizes partitions (--dask_npartitions or
--dask_partition_size), each Create element gets its own partition, so each
batch of chunk indices (beam_pipeline._index_batches) is one task.
"""
import importlib
import socket
import urllib.parse

from common.cli_options import UserError

RUNNER_PATH = "apache_beam.runners.dask.dask_runner.DaskRunner"
_NAMES = {"dask", "daskrunner", RUNNER_PATH.lower()}
_INSTALL = "pip install 'zh-pretrain[dask]' (or `pip install -e '.[dask]'` in a checkout)"
_PROBE_SECONDS = 5.0


def _flag_values(args, name):
    """[(index in args, value)] of --name=V / --name V in args."""
    found = []
    for index, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            found.append((index, arg.split("=", 1)[1]))
        elif arg == f"--{name}" and index + 1 < len(args):
            found.append((index, args[index + 1]))
    return found


def _runner(args):
    values = _flag_values(args, "runner")
    return values[-1][1] if values else None


def is_dask(args):
    """Whether the Beam arguments choose the Dask runner (any spelling Beam would take)."""
    return (_runner(args) or "").lower() in _NAMES


def prepare(args):
    """Beam arguments ready for Beam: the Dask runner by its full path, its options known,
    one task per Create element; the arguments unchanged for another runner.

    Raises UserError for --dask_* options without the Dask runner, a missing [dask] extra,
    or a --dask_client_address where no scheduler answers.
    """
    args = list(args)
    dask_flags = sorted({arg[2:].split("=", 1)[0] for arg in args if arg.startswith("--dask_")})
    if not is_dask(args):
        if dask_flags:
            raise UserError(", ".join("--" + name for name in dask_flags) + ": options of "
                            "the Dask runner, but the runner is "
                            f"{_runner(args) or 'DirectRunner'}: add --runner=DaskRunner")
        return args
    try:
        importlib.import_module("dask.distributed")
        importlib.import_module("apache_beam.runners.dask.dask_runner")  # its --dask_* options
    except ImportError as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UserError(f"--runner=DaskRunner needs dask.distributed ({first_line}): "
                        f"{_INSTALL}") from None
    args = [f"--runner={RUNNER_PATH}" if arg.startswith("--runner=") else arg for arg in args]
    args = [RUNNER_PATH if index and args[index - 1] == "--runner" else arg
            for index, arg in enumerate(args)]
    for _, address in _flag_values(args, "dask_client_address"):
        probe_scheduler(address)
    if not {"dask_npartitions", "dask_partition_size"} & set(dask_flags):
        args.append("--dask_partition_size=1")
    return args


def probe_scheduler(address):
    """Raises UserError unless something accepts a TCP connection at a tcp:// (or bare
    host:port) scheduler address; other schemes (tls://, ucx://) are left to dask."""
    parsed = urllib.parse.urlsplit(address if "://" in address else "tcp://" + address)
    fix = ("start one with `dask scheduler` (and `dask worker ADDRESS` on each host), or drop "
           "--dask_client_address to run on a local Dask cluster")
    if parsed.scheme != "tcp":
        return
    try:
        host, port = parsed.hostname, parsed.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise UserError(f"--dask_client_address={address}: not a scheduler address; give "
                        "tcp://HOST:PORT (`dask scheduler` prints it; port 8786 by default)")
    try:
        socket.create_connection((host, port), timeout=_PROBE_SECONDS).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UserError(f"--dask_client_address={address}: no Dask scheduler answers there "
                        f"({reason}); {fix}") from None


def explain(error):
    """The one-line message for a run's failure that comes from the cluster's software, not
    from the input: the scheduler or a worker cannot load this command's steps (zh-pretrain
    missing there, or another version: the scheduler keeps the modules it once loaded).
    None for any other error."""
    text = str(error)
    signs = ("Error during deserialization of the task graph", "No module named 'data_gen'",
             "No module named 'common'", "Can't get attribute")
    if not any(sign in text for sign in signs):
        return None
    first_line = text.strip().splitlines()[0]
    return (f"the Dask cluster cannot run this command's steps ({first_line}): install this "
            "zh-pretrain version (with its [dask] extra) where the scheduler and every worker "
            "run, then restart them (`dask scheduler`, `dask worker ADDRESS`)")


def finish(result):
    """Closes the runner's Dask client (and the local cluster it started, if any)."""
    client = getattr(result, "client", None)
    if client is not None:
        client.close()


def cancel(result):
    """Cancels the tasks of a failed run that have not started (running ones end by themselves)."""
    if getattr(result, "client", None) is not None:
        try:
            result.cancel()
        except Exception:  # pylint: disable=broad-except
            pass  # the run has failed already; its own error is the one to report
