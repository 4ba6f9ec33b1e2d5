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
the parsed flags, calls the function, and turns the expected failures
(`UserError` and the classes in `expected`) into one `error: ...` line and
exit code 2, without a traceback. Unexpected errors keep their traceback.
Tools that define their own absl flags call `run_app` for the same `--help`.
It lives in data_gen, the bottom layer, like file_utils, so every stage can use it.
"""
import dataclasses
import sys

_HELP = "help"
_REQUIRED = "required"
_HELP_FLAGS = ("help", "?", "helpshort", "helpfull", "helpxml")  # absl's, all exit with code 1


class UserError(ValueError):
    """An expected failure caused by the input or a flag: the message says what to do."""


def option(default, help_text):
    """A dataclass field with a default and a help text."""
    return dataclasses.field(default=default, metadata={_HELP: help_text})


def required(help_text):
    """A dataclass field that must be given on the command line (default None)."""
    return dataclasses.field(default=None, metadata={_HELP: help_text, _REQUIRED: True})


def _field_type(field):
    kind = field.type
    if isinstance(kind, str):  # `from __future__ import annotations`
        kind = {"str": str, "int": int, "float": float, "bool": bool}.get(kind, str)
    return kind


def define_flags(options_class, flag_values=None):
    """Defines one absl flag per field of `options_class` (idempotent per name)."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    flag_values = flag_values or flags.FLAGS
    definers = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
                float: flags.DEFINE_float, str: flags.DEFINE_string}
    for field in dataclasses.fields(options_class):
        if field.name in flag_values:
            continue
        default = None if field.default is dataclasses.MISSING else field.default
        help_text = field.metadata.get(_HELP, field.name)
        if field.metadata.get(_REQUIRED):
            help_text += " (required)"
        # Registered as the main program's own flags, so `--help` lists them
        # (absl's --help shows only the flags of the module named sys.argv[0]).
        definers.get(_field_type(field), flags.DEFINE_string)(
            field.name, default, help_text, flag_values=flag_values, module_name=sys.argv[0])


def options_from_flags(options_class, flag_values=None):
    """The dataclass filled from parsed flags; a missing required flag is a UserError."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    flag_values = flag_values or flags.FLAGS
    values = {field.name: getattr(flag_values, field.name)
              for field in dataclasses.fields(options_class)}
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


def run_main(options_class, function, argv=None, expected=()):
    """Console-script body: define flags, parse, run `function(options)`, fail cleanly."""
    from absl import logging  # pylint: disable=import-outside-toplevel
    define_flags(options_class)
    expected = (UserError,) + tuple(expected)

    def _main(_argv):
        logging.set_verbosity(logging.INFO)
        try:
            function(options_from_flags(options_class))
        except expected as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)

    run_app(_main, argv)


def run_app(main_function, argv=None, flag_module=None):
    """absl's `app.run` for every tool: `--help` lists the tool's flags and exits 0.

    flag_module: name of the module that defined the tool's own absl flags
    (outside `define_flags`); they are listed by `--help` as the program's own
    (absl lists only the flags of the module named sys.argv[0], which a
    console-script wrapper is not).
    """
    from absl import app, flags  # pylint: disable=import-outside-toplevel
    if flag_module:
        for flag in flags.FLAGS.flags_by_module_dict().get(flag_module, []):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    try:
        app.run(main_function, argv=argv)
    except SystemExit as stop:
        # absl ends the help it prints with exit code 1; help that was asked for is a success.
        if stop.code == 1 and asks_for_help(list(sys.argv if argv is None else argv)[1:]):
            sys.exit(0)
        raise
