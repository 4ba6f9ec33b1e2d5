"""What the Python behind every scripts/*.sh shares: its command line, its settings, its tools'
commands.

The entry scripts are thin wrappers that exec a module (the experiment runners in experiments/,
the stage scripts' modules in data_gen/, pretrain/ and finetune/), which keeps the script's
command line: `-h`/`--help`, `--dry_run`, and every setting an environment variable of the
script's name for it (unset or empty: the default; the stage scripts' options:
common.script_options). Each tool runs as `$PYTHON -m MODULE ...` (PYTHON: the interpreter the
wrapper chose, else this one); a dry run prints each command shell-quoted as bash's `printf
%q` quotes it, so the printed lines are the ones the bash scripts printed. A refusal is one
line, `SCRIPT.sh: error: ...`, and exit code 2.
"""
import os
import re
import subprocess
import sys
import time

from common.cli_options import UserError

# The checkout the package sits in: the scripts' default paths (runs/, ../shared/data) hang
# from it, and the tools the runners start import the package from it.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(REPO_ROOT, "..", "shared", "data")
# Characters `printf %q` escapes with a backslash anywhere; ~ and # only at the start.
_SHELL_SPECIAL = set(" \t\n'\"\\|&;()<>!{}*[?]^$`,")
EXIT_REFUSED = 2


class Refusal(UserError):
    """Bad input or a stage folder that must not be reused: the message says what to do."""


def bash_quote(word):
    """`word` as bash's `printf %q` writes it (C.UTF-8 locale)."""
    if word == "":
        return "''"
    if any(ord(char) < 32 or ord(char) == 127 for char in word):
        escapes = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "'": "\\'", "\\": "\\\\"}
        return "$'" + "".join(escapes.get(char, char) for char in word) + "'"
    quoted = "".join("\\" + char if char in _SHELL_SPECIAL else char for char in word)
    return "\\" + quoted if quoted[0] in "~#" else quoted


def shown(command):
    """The line a dry run prints for `command`: each word quoted, then a space."""
    return "".join(bash_quote(word) + " " for word in command)


def setting(name, default=""):
    """Environment variable `name`, or `default` when it is unset or empty."""
    return os.environ.get(name) or default


def clock():
    return time.strftime("%H:%M:%S")


def caller_path(path):
    """`path` made absolute from the caller's directory (as `${PWD}/path` in the scripts)."""
    if not path or path.startswith("/"):
        return path
    here = os.environ.get("PWD", "")
    if not here or not os.path.isdir(here) or not os.path.samefile(here, os.getcwd()):
        here = os.getcwd()
    return f"{here}/{path}"


def split_list(text):
    """Bash's `IFS=, read -r -a` of `text`: comma-separated items, a trailing empty one
    dropped."""
    items = text.split(",") if text else []
    return items[:-1] if items and items[-1] == "" else items


class ScriptRun:
    """One run of a runner: its name in messages, whether it only prints, its interpreter."""

    def __init__(self, script_name, usage):
        self.script_name = script_name
        self.usage = usage
        self.dry_run = setting("DRY_RUN", "0") == "1"
        self.python = setting("PYTHON", sys.executable)

    def positional(self, argv, unknown="unknown option '{}' (see --help; settings are "
                                       "environment variables)"):
        """The positional arguments; --help prints the usage and exits 0, --dry_run sets a
        dry run, another option is refused (`unknown` names it)."""
        found = []
        for argument in argv:
            if argument in ("-h", "--help"):
                print(self.usage(), flush=True)
                sys.exit(0)
            if argument == "--dry_run":
                self.dry_run = True
            elif argument.startswith("-"):
                raise Refusal(unknown.format(argument))
            else:
                found.append(argument)
        return found

    def usage_error(self):
        """The usage on stderr, exit 2 (wrong number of arguments)."""
        print(self.usage(), file=sys.stderr, flush=True)
        sys.exit(EXIT_REFUSED)

    def tool(self, module, *flags):
        """The command running `python -m module flags...`."""
        return [self.python, "-m", module, *flags]

    def run(self, command):
        """Runs `command`, or in a dry run prints it; a failing tool ends the run with its
        exit code (its own message said why)."""
        if self.dry_run:
            print(shown(command), flush=True)
            return
        done = subprocess.run(command, env=tool_environment(), check=False)
        if done.returncode:
            sys.exit(done.returncode)

    def run_logged(self, command, log_file, what):
        """Runs `command` into `log_file`; on failure its last lines and a refusal naming
        the log."""
        with open(log_file, "w", encoding="utf-8") as log:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                  env=tool_environment(), check=False)
        if done.returncode:
            with open(log_file, encoding="utf-8", errors="replace") as log:
                sys.stderr.write("".join(log.readlines()[-5:]))
            raise Refusal(f"{what} failed; its log: {log_file}")

    def status(self, command):
        """The exit code of `command` (its output shown)."""
        return subprocess.run(command, env=tool_environment(), check=False).returncode

    def main(self, body, argv=None):
        """Runs `body(argv)` (the command line's arguments when None); a Refusal, or a data
        file that cannot be read, becomes one line on stderr and exit code 2."""
        try:
            body(sys.argv[1:] if argv is None else argv)
        except UserError as refusal:
            sys.stdout.flush()
            print(f"{self.script_name}: error: {refusal}", file=sys.stderr, flush=True)
            sys.exit(EXIT_REFUSED)

    def warn(self, message):
        print(f"{self.script_name}: warning: {message}", file=sys.stderr, flush=True)


def tool_environment():
    """The tools' environment: this checkout importable, TensorFlow's C++ INFO lines off."""
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=REPO_ROOT + (os.pathsep + path if path else ""),
                TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))


def matches(pattern, text):
    return re.fullmatch(pattern, text) is not None
