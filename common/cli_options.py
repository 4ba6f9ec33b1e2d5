"""One convention for the command-line tools: a dataclass of options -> absl flags.

    @dataclasses.dataclass
    class ExportOptions:
        init_checkpoint: str = cli_options.required("Checkpoint prefix or directory.")
        output_dir: str = cli_options.required("Directory to write.")
        format: str = cli_options.option("hf", "hf|saved_model.")

    def main(argv=None):
        cli_options.run_main(ExportOptions, export, argv)

Every field becomes a flag of the same name, typed by the field's type, with
the field's default and help text. `run_main` defines the flags inside
`main()` (so `--help` works from a console script), builds the dataclass from
the parsed flags, calls the function, and turns the expected failures into one
`error: ...` line on stderr and exit code 2, without a traceback:
  * `UserError` and the classes in `expected` (bad flag values, bad input);
  * an OSError of the environment (missing file, permission denied, disk full,
    file too large, read-only file system, a file where a directory should be),
    named with its file and what to do (`describe_os_error`).
Ctrl-C / SIGTERM (KeyboardInterrupt) ends with one line and exit code 130.
Unexpected errors keep their traceback.
It lives in common, below every stage, like file_utils, so every stage can use it.
"""
import dataclasses
import errno
import sys

_HELP = "help"
_REQUIRED = "required"
_CHOICES = "choices"
_SHORT_NAME = "short_name"
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
_HELP_FLAGS = ("help", "?", "helpshort", "helpfull", "helpxml")  # absl's, all exit with code 1


class UserError(ValueError):
    """An expected failure caused by the input or a flag: the message says what to do."""


def option(default, help_text, choices=None, short_name=None):
    """A dataclass field with a default and a help text; `choices` makes it an enum flag,
    `short_name` adds a one-letter form (`-n 3`)."""
    metadata = {_HELP: help_text, _SHORT_NAME: short_name}
    if choices is not None:
        metadata[_CHOICES] = list(choices)
    return dataclasses.field(default=default, metadata=metadata)


# What to do about an OSError the environment caused, by errno.
_OS_ERROR_ADVICE = {
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a directory; choose another path",
    errno.EISDIR: "the path is a directory; give a file name",
    errno.EACCES: "choose a location you may read/write, or change its permissions",
    errno.EPERM: "choose a location you may read/write, or change its permissions",
    errno.EROFS: "the file system is read-only; write somewhere else",
    errno.ENOSPC: "free some space or write somewhere else; the partial output was removed",
    errno.EDQUOT: "the disk quota is used up; free some space or write somewhere else",
    errno.EFBIG: "the file size limit was reached (ulimit -f); raise it or write more, "
                 "smaller shards; the partial output was removed",
}


def is_environment_error(error):
    """True for an OSError that a user fixes outside the program (see _OS_ERROR_ADVICE)."""
    return isinstance(error, OSError) and error.errno in _OS_ERROR_ADVICE


def describe_os_error(error):
    """`STRERROR: FILE; what to do` for an environment OSError."""
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}; {_OS_ERROR_ADVICE.get(error.errno, 'check it')}"


def required(help_text):
    """A dataclass field that must be given on the command line (default None)."""
    return dataclasses.field(default=None, metadata={_HELP: help_text, _REQUIRED: True})


def _field_type(field):
    kind = field.type
    if isinstance(kind, str):  # `from __future__ import annotations`
        kind = {"str": str, "int": int, "float": float, "bool": bool,
                "tuple": tuple}.get(kind, str)
    return kind


def define_flags(options_class, flag_values=None):
    """Defines one absl flag per field of `options_class` (idempotent per name)."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    flag_values = flag_values or flags.FLAGS
    definers = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
                float: flags.DEFINE_float, str: flags.DEFINE_string,
                tuple: flags.DEFINE_multi_string}  # a tuple field: a repeatable flag
    for field in dataclasses.fields(options_class):
        if field.name in flag_values:
            continue
        default = None if field.default is dataclasses.MISSING else field.default
        if _field_type(field) is tuple:
            default = list(default or ())
        help_text = field.metadata.get(_HELP, field.name)
        if field.metadata.get(_REQUIRED):
            help_text += " (required)"
        # Registered as the main program's own flags, so `--help` lists them
        # (absl's --help shows only the flags of the module named sys.argv[0]).
        common = dict(flag_values=flag_values, module_name=sys.argv[0],
                      short_name=field.metadata.get(_SHORT_NAME))
        if _CHOICES in field.metadata:
            flags.DEFINE_enum(field.name, default, field.metadata[_CHOICES], help_text, **common)
        else:
            definers.get(_field_type(field), flags.DEFINE_string)(field.name, default, help_text,
                                                                  **common)


def options_from_flags(options_class, flag_values=None, positional_args=(), positional=None):
    """The dataclass filled from parsed flags; a missing required flag is a UserError.

    positional_args go to the field named `positional` (comma-joined after its
    flag value); without such a field they are refused.
    """
    from absl import flags  # pylint: disable=import-outside-toplevel
    flag_values = flag_values or flags.FLAGS
    values = {field.name: getattr(flag_values, field.name)
              for field in dataclasses.fields(options_class)}
    if positional_args:
        if positional is None:
            raise UserError(f"unexpected argument(s) {' '.join(positional_args)}: this tool "
                            "takes flags only (--name=value); see --help")
        values[positional] = ",".join([v for v in [values[positional]] if v]
                                      + list(positional_args))
    return make_options(options_class, values)


def make_options(options_class, values):
    """The dataclass from a dict (the Python entry); unknown keys and missing required ones are refused."""
    names = {field.name for field in dataclasses.fields(options_class)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise UserError(f"unknown option(s) {unknown}; known: {sorted(names)}")
    options = options_class(**values)
    missing = [field.name for field in dataclasses.fields(options_class)
               if field.metadata.get(_REQUIRED) and getattr(options, field.name) in (None, "")]
    if missing:
        raise UserError("missing required flag(s): " + ", ".join("--" + n for n in missing))
    return options


def asks_for_help(args):
    """True when `args` (without the program name) hold absl's --help, -?, --helpshort,
    --helpfull or --helpxml before any `--`."""
    for arg in args:
        if arg == "--":
            return False
        if arg.startswith("-") and arg.lstrip("-").split("=")[0] in _HELP_FLAGS:
            return True
    return False


def run_main(options_class, function, argv=None, expected=(), positional=None,
             pass_other_args=False):
    """Console-script body: define flags, parse, run `function(options)`, fail cleanly.

    positional: name of a comma-separated string field that also takes the
    positional arguments (`tool A B` = `tool --FIELD=A,B`); without it a
    positional argument is an error. pass_other_args: arguments that are not
    this tool's flags go, as a list, to `function(options, other_args)`, which
    must check them (e.g. Beam's pipeline options).
    """
    from absl import logging  # pylint: disable=import-outside-toplevel
    define_flags(options_class)
    expected = (UserError,) + tuple(expected)

    def _main(arguments):
        logging.set_verbosity(logging.INFO)
        _one_line_per_log_record()
        try:
            if pass_other_args:
                function(options_from_flags(options_class), arguments[1:])
            else:
                function(options_from_flags(options_class, positional_args=arguments[1:],
                                            positional=positional))
        except KeyboardInterrupt as stop:
            print(f"\ninterrupted ({stop or 'Ctrl-C'}); no partial output is left under a "
                  "final name", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
        except Exception as err:  # pylint: disable=broad-except
            if is_environment_error(err):
                message = describe_os_error(err)
            elif isinstance(err, expected):
                message = str(err)
            else:
                raise
            print(f"error: {message}", file=sys.stderr)
            sys.exit(EXIT_USER_ERROR)

    run_app(_main, argv, known_only=pass_other_args)


def _one_line_per_log_record():
    """TensorFlow imported before absl's handler was on the root logger gave its logger a
    handler of its own, so every record printed twice (`INFO:tensorflow:...` and absl's
    `I1127 ...`); absl's line, with its time and source, is the one kept."""
    import logging as python_logging  # pylint: disable=import-outside-toplevel
    tf_logger = python_logging.Logger.manager.loggerDict.get("tensorflow")
    if isinstance(tf_logger, python_logging.Logger) and python_logging.getLogger().handlers:
        for handler in list(tf_logger.handlers):
            tf_logger.removeHandler(handler)


def run_app(main_function, argv=None, known_only=False):
    """absl's `app.run`, except that `--help` (which lists the tool's flags) exits 0 and a
    flag that does not parse is one `error:` line with exit code 2. known_only: flags
    absl does not know stay in the arguments given to `main_function`."""
    from absl import app, flags  # pylint: disable=import-outside-toplevel

    def parse_flags(arguments):
        try:
            return flags.FLAGS(arguments, known_only=known_only)
        except flags.Error as error:  # an unknown flag or a value of the wrong type/choice
            print(f"error: {error}; see --help", file=sys.stderr)
            sys.exit(EXIT_USER_ERROR)

    try:
        app.run(main_function, argv=argv, flags_parser=parse_flags)
    except SystemExit as stop:
        # absl ends the help it prints with exit code 1; help that was asked for is a success.
        if stop.code == 1 and asks_for_help(list(sys.argv if argv is None else argv)[1:]):
            sys.exit(0)
        raise
