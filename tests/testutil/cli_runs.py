"""Running the tools as a user does: console-script entries and subprocesses in parallel."""
import concurrent.futures
import configparser
import contextlib
import importlib
import io
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
PARALLEL_RUNS = 4
TIMEOUT_SECONDS = 240


def console_scripts():
    """[(script name, module, function)] from setup.cfg."""
    parser = configparser.ConfigParser()
    parser.read(REPO_ROOT / "setup.cfg", encoding="utf-8")
    entries = []
    for line in parser["options.entry_points"]["console_scripts"].strip().splitlines():
        name, target = (part.strip() for part in line.split("=", 1))
        module, function = target.split(":")
        entries.append((name, module, function))
    return entries


def tool_env(**extra):
    """The environment a tool runs in: the repository importable, TF's C++ INFO lines off, and
    PYTHON (which the scripts run their tools with) this runtime's interpreter, not .venv's."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        TF_CPP_MIN_LOG_LEVEL="2", PYTHON=sys.executable)
    env.update(extra)
    return env


# TensorFlow >= 2.16 logs through absl before absl is set up, so TF_CPP_MIN_LOG_LEVEL does not
# hold back its start-up notes: "WARNING: All log messages before absl::InitializeLog() ..."
# and glog-style "I0000 00:00:1796585607.342884   22760 port.cc:153] oneDNN custom operations
# are on ..." (printed when TF_ENABLE_ONEDNN_OPTS is set, as `import pretrain` does).
TENSORFLOW_STARTUP_LINE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
    r"|[IW]\d{4} [\d:.]+\s+\d+ \w+\.cc:\d+\] ")


def tool_lines(stderr):
    """The lines a tool wrote to stderr, TensorFlow's own start-up notes left out."""
    return [line for line in stderr.strip().splitlines()
            if not TENSORFLOW_STARTUP_LINE.match(line)]


def run_parallel(commands, cwd, env=None, preexec_fn=None):
    """{key: (exit code, stdout, stderr, seconds)} of `commands` [(key, argv), (key, argv, env
    of that command) or (key, argv, env or None, preexec_fn of that command)], run
    PARALLEL_RUNS at a time in `cwd`, in the order given: a slot is refilled as soon as any
    command ends (give the slowest commands first: the run ends with the last one)."""
    env = env or tool_env()

    def run_one(command):
        key, argv, *own = command
        own_env = own[0] if own and own[0] is not None else env
        own_preexec = own[1] if len(own) > 1 else preexec_fn
        started = time.time()
        process = subprocess.Popen(argv, cwd=cwd, env=own_env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=own_preexec)
        try:
            out, err = process.communicate(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return key, (process.returncode, out, err, time.time() - started)

    with concurrent.futures.ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        return dict(pool.map(run_one, commands))


def module_command(module, *args):
    return [sys.executable, "-m", module, *args]


def free_ports(count):
    """`count` loopback ports free right now (for TF_CONFIG clusters of local workers)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def clean_env(**settings):
    """The caller's environment without any upper-case setting (PATH, HOME, LANG, TMPDIR kept),
    the interpreter as PYTHON, plus `settings`: what the shell scripts see in a test."""
    env = {key: value for key, value in os.environ.items()
           if not re.fullmatch(r"[A-Z_]+", key) or key in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PYTHON"] = sys.executable
    env.update(settings)
    return env


def remove_tool_flags():
    """Deletes every flag a tool defined in this process (absl's and TensorFlow's stay)."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    flags.FLAGS.unparse_flags()
    for name in list(flags.FLAGS):
        module = flags.FLAGS.find_module_defining_flag(name) or ""
        if not module.startswith(("absl.", "tensorflow.")):
            delattr(flags.FLAGS, name)


def run_main_in_process(module, args, cwd):
    """(exit code, stdout, stderr, seconds) of `module`.main([module, *args]) run in `cwd`, as
    its console script calls it, for refusals that come before any model is built (no
    TensorFlow start-up per case). Afterwards absl's flags are reset and the tool's own are
    removed, so that the next tool defines its flags (its choices, its defaults) afresh. An
    uncaught exception fails the calling test here."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    tool = importlib.import_module(module)
    out, err, code = io.StringIO(), io.StringIO(), 0
    previous = os.getcwd()
    remove_tool_flags()  # an earlier tool's same-named flag would keep its default
    defined_before = set(flags.FLAGS)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                tool.main([module, *args])
            except SystemExit as stop:
                code = stop.code or 0
    finally:
        os.chdir(previous)
        flags.FLAGS.unparse_flags()
        for name in set(flags.FLAGS) - defined_before:
            if not (flags.FLAGS.find_module_defining_flag(name) or "").startswith("absl."):
                delattr(flags.FLAGS, name)
    return code, out.getvalue(), err.getvalue(), 0.0


# The two runtimes make setup builds (README): TensorFlow 2.15 on Python 3.11, 2.21 on 3.12/3.13.
RUNTIMES = (".venv", ".venv-tf2.21")


def _venv_python_version(venv):
    """(major, minor) of a built venv's Python (from its pyvenv.cfg), or None."""
    config = venv / "pyvenv.cfg"
    if not (venv / ".installed").exists() or not config.exists():
        return None
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", config.read_text(), re.M)
    return (int(found[1]), int(found[2])) if found else None


def other_runtime():
    """The interpreter of the built runtime whose Python is not this one's, or None."""
    for name in RUNTIMES:
        version = _venv_python_version(REPO_ROOT / name)
        if version is not None and version != sys.version_info[:2]:
            return REPO_ROOT / name / "bin" / "python"
    return None
