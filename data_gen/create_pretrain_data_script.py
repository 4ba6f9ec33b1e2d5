"""scripts/create_pretrain_data.sh: a corpus to pretraining TFRecords with
`python -m data_gen.create_pretraining_data`, building the vocab first when asked
(`data_gen.tools.build_vocab`). With no arguments: the demo (the shipped sample corpus ->
output/demo/).

    python -m data_gen.create_pretrain_data_script [OPTIONS] [-- EXTRA_CLI_FLAGS...]

Every setting is an environment variable and the option of its name in lower case
(common.script_options); the tools' settings go to their flags only when set. Default paths
hang from the checkout; paths given are used as given (from the caller's directory).
"""
import os
import sys

from common.script_options import (read_options, script_main, tool_flags, use_settings,
                                   variables)
from common.script_runs import REPO_ROOT, Refusal, setting
from data_gen import modes

SCRIPT = "create_pretrain_data.sh"
DEFAULT_VOCAB = f"{REPO_ROOT}/output/demo/vocab.txt"
DEMO_VOCAB_SIZE = "5000"  # the demo's vocab: the shipped config demo_tiny_bert has 5000 ids
# This script's own settings and their defaults.
OWN_SETTINGS = {
    "INPUT": f"{REPO_ROOT}/data/sample/corpus_zh.txt",
    "OUTPUT_DIR": f"{REPO_ROOT}/output/demo/data", "OUTPUT_NAME": "sample",
    "VOCAB": DEFAULT_VOCAB, "BUILD_VOCAB": "auto", "VOCAB_INPUT": f"{REPO_ROOT}/data/sample/*.txt"}
# The tools' settings, (VARIABLE, flag): data_gen/config.py's and build_vocab's flags.
GENERATION_SETTINGS = (
    ("MODE", "mode"), ("MAX_SEQ_LENGTH", "max_seq_length"),
    ("MAX_PREDICTIONS", "max_predictions_per_seq"), ("MASKED_LM_PROB", "masked_lm_prob"),
    ("DUPE_FACTOR", "dupe_factor"), ("SEED", "random_seed"), ("NUM_WORKERS", "num_workers"),
    ("COMPRESSION", "compression"), ("DO_LOWER_CASE", "do_lower_case"))
VOCAB_SETTINGS = (("VOCAB_SIZE", "vocab_size"), ("DO_LOWER_CASE", "do_lower_case"))
VALUE_OPTIONS = [*OWN_SETTINGS, "PYTHON", *variables(GENERATION_SETTINGS, VOCAB_SETTINGS)]


def read_settings():
    """{VARIABLE: value} from the environment (unset: empty, or the script's own default)."""
    values = {name: setting(name) for name in variables(GENERATION_SETTINGS, VOCAB_SETTINGS)}
    values.update({name: setting(name, default) for name, default in OWN_SETTINGS.items()})
    values.update(DRY_RUN=setting("DRY_RUN", "0"), PYTHON=setting("PYTHON", sys.executable))
    return values


def usage(values):
    # The modes as data_gen.modes lists them; the example is the mode --ngram applies to.
    mode_names = " | ".join(modes.MODES)
    ngram_mode = next(name for name, mode in modes.MODES.items() if mode.masking == "ngram")
    return f"""Usage: bash scripts/create_pretrain_data.sh [OPTIONS] [-- EXTRA_CLI_FLAGS...]

Turns a corpus (blank-line-separated documents, one sentence per line) into
pretraining TFRecords plus a .meta.json sidecar. With no arguments it runs the
demo: builds output/demo/vocab.txt from data/sample/*.txt if it is absent, then
writes output/demo/data/sample.tfrecord from data/sample/corpus_zh.txt.
Works from any directory; default paths are relative to the repository
({REPO_ROOT}); paths you give are relative to your current directory.

Every setting is an option or an environment variable (the option wins).
Settings marked (--flag) are the Python tools' flags: unset, the tool's own
default applies (see python -m data_gen.create_pretraining_data --help).

  --input GLOBS         INPUT           corpus, comma-separated globs    [{values['INPUT']}]
  --output_dir D        OUTPUT_DIR      where the TFRecord goes          [{values['OUTPUT_DIR']}]
  --output_name N       OUTPUT_NAME     file is D/N.tfrecord (.gz added with gzip) [{values['OUTPUT_NAME']}]
  --vocab F             VOCAB           vocab file                       [{values['VOCAB']}]
  --build_vocab W       BUILD_VOCAB     auto: build the default vocab if it is missing;
                                        always: (re)build VOCAB; never: VOCAB must exist [{values['BUILD_VOCAB']}]
  --vocab_input GLOBS   VOCAB_INPUT     text the vocab is built from     [{values['VOCAB_INPUT']}]
  --vocab_size N        VOCAB_SIZE      exact size of a built vocab (--vocab_size of build_vocab;
                                        the default vocab: {DEMO_VOCAB_SIZE})
  --mode M              MODE            {mode_names}  (--mode)
  --max_seq_length N    MAX_SEQ_LENGTH  tokens per instance              (--max_seq_length)
  --max_predictions N   MAX_PREDICTIONS masked positions per instance    (--max_predictions_per_seq)
  --masked_lm_prob P    MASKED_LM_PROB  fraction of tokens masked        (--masked_lm_prob)
  --dupe_factor N       DUPE_FACTOR     passes over the corpus, each with new masks (--dupe_factor)
  --seed N              SEED            random seed                      (--random_seed)
  --num_workers N       NUM_WORKERS     worker processes, 0 = all cores  (--num_workers)
  --compression C       COMPRESSION     none | gzip                      (--compression)
  --do_lower_case B     DO_LOWER_CASE   true | false, for the vocab build and generation (--do_lower_case)
  --python P            PYTHON          interpreter; default .venv/bin/python if present, else python3
  --dry_run             DRY_RUN=1       print the commands with every path resolved, run nothing
  -h, --help                            this text

Arguments after "--" go unchanged to python -m data_gen.create_pretraining_data,
e.g.  bash scripts/create_pretrain_data.sh --mode {ngram_mode} -- --ngram=2 --short_seq_prob=0.2
Examples:
  MODE={ngram_mode} bash scripts/create_pretrain_data.sh
  bash scripts/create_pretrain_data.sh --input 'corpus/*.txt' --vocab ../shared/data/vocab/bert_chinese_vocab.txt \\
      --output_dir output/full --dupe_factor 5
Inspect the result:  python -m data_gen.tools.inspect_records OUTPUT_DIR/OUTPUT_NAME.tfrecord -n 3"""


def check_values(values):
    if values["BUILD_VOCAB"] not in ("auto", "always", "never"):
        raise Refusal("BUILD_VOCAB/--build_vocab must be auto, always or never, not "
                      f"'{values['BUILD_VOCAB']}'")
    if values["DO_LOWER_CASE"] not in ("", "true", "false"):
        raise Refusal("DO_LOWER_CASE/--do_lower_case must be true or false, not "
                      f"'{values['DO_LOWER_CASE']}'")


def vocab(run, values):
    """Builds VOCAB (always, or when auto finds the demo's missing) or checks it exists."""
    vocab_file, build = values["VOCAB"], values["BUILD_VOCAB"]
    if build == "always" or (build == "auto" and not os.path.isfile(vocab_file)):
        if build == "auto" and vocab_file != DEFAULT_VOCAB:
            raise Refusal(f"vocab {vocab_file} not found. Give an existing vocab, or pass "
                          "--build_vocab always (BUILD_VOCAB=always) to build it from "
                          f"{values['VOCAB_INPUT']}")
        if vocab_file == DEFAULT_VOCAB and not values["VOCAB_SIZE"]:
            values["VOCAB_SIZE"] = DEMO_VOCAB_SIZE
        print(f"== building vocab {vocab_file} from {values['VOCAB_INPUT']}", flush=True)
        run.run(run.tool("data_gen.tools.build_vocab", f"--input_file={values['VOCAB_INPUT']}",
                         f"--output_file={vocab_file}", *tool_flags(VOCAB_SETTINGS, values)))
    elif not os.path.isfile(vocab_file):
        raise Refusal(f"vocab {vocab_file} not found (BUILD_VOCAB=never)")
    else:
        print(f"== using existing vocab {vocab_file}", flush=True)


def create_pretrain_data(run, argv):
    values = read_settings()
    extra = read_options(argv, values, usage, value_options=VALUE_OPTIONS,
                         tool="the Python CLI", words={"--dry_run": ("DRY_RUN", "1")},
                         unknown_option="unknown argument '{}'")
    check_values(values)
    use_settings(run, values)
    vocab(run, values)
    run.run(["mkdir", "-p", values["OUTPUT_DIR"]])
    output_file = f"{values['OUTPUT_DIR']}/{values['OUTPUT_NAME']}.tfrecord"
    if values["COMPRESSION"] == "gzip":
        output_file += ".gz"
    print(f"== generating {values['MODE'] or 'default-mode'} data: {values['INPUT']} -> "
          f"{output_file}", flush=True)
    run.run(run.tool("data_gen.create_pretraining_data", f"--input_file={values['INPUT']}",
                     f"--output_file={output_file}", f"--vocab_file={values['VOCAB']}",
                     *tool_flags(GENERATION_SETTINGS, values), *extra))
    if not run.dry_run:
        print(f"== done: {output_file} (+ .meta.json). Inspect: {run.python} -m "
              f"data_gen.tools.inspect_records {output_file} -n 3")


def main(argv=None):
    script_main(SCRIPT, create_pretrain_data, argv)


if __name__ == "__main__":
    main()
