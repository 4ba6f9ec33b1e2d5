#!/usr/bin/env bash
# Builds pretraining TFRecords with `python -m data_gen.create_pretraining_data`.
# With no arguments: the demo (shipped sample corpus -> output/demo/).
# Run `bash scripts/create_pretrain_data.sh --help` for every setting.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
DEFAULT_VOCAB="${REPO_ROOT}/output/demo/vocab.txt"

# Settings of this script: environment variable, else default. Options override both.
INPUT="${INPUT:-${REPO_ROOT}/data/sample/corpus_zh.txt}"
OUTPUT_DIR="${OUTPUT_DIR:-${REPO_ROOT}/output/demo/data}"
OUTPUT_NAME="${OUTPUT_NAME:-sample}"
VOCAB="${VOCAB:-${DEFAULT_VOCAB}}"
BUILD_VOCAB="${BUILD_VOCAB:-auto}"
VOCAB_INPUT="${VOCAB_INPUT:-${REPO_ROOT}/data/sample/*.txt}"
DEMO_VOCAB_SIZE=5000  # the default vocab is the demo's: the shipped config demo_tiny_bert has 5000 ids
DRY_RUN="${DRY_RUN:-0}"
# Settings of the Python tools, VARIABLE:flag. Unset or empty = that flag's default in
# data_gen/config.py (generation) or data_gen/tools/build_vocab.py (VOCAB_SIZE), so this script
# holds no second copy of the defaults (tests/scripts/test_script_defaults.py checks it).
GENERATION_SETTINGS=(MODE:mode MAX_SEQ_LENGTH:max_seq_length MAX_PREDICTIONS:max_predictions_per_seq
  MASKED_LM_PROB:masked_lm_prob DUPE_FACTOR:dupe_factor SEED:random_seed
  NUM_WORKERS:num_workers COMPRESSION:compression DO_LOWER_CASE:do_lower_case)
VOCAB_SETTINGS=(VOCAB_SIZE:vocab_size DO_LOWER_CASE:do_lower_case)
SCRIPT_NAME="create_pretrain_data.sh"
for pair in "${GENERATION_SETTINGS[@]}" "${VOCAB_SETTINGS[@]}"; do
  variable="${pair%%:*}"; declare "${variable}=${!variable:-}"
done

usage() {
  cat <<EOF
Usage: bash scripts/create_pretrain_data.sh [OPTIONS] [-- EXTRA_CLI_FLAGS...]

Turns a corpus (blank-line-separated documents, one sentence per line) into
pretraining TFRecords plus a .meta.json sidecar. With no arguments it runs the
demo: builds output/demo/vocab.txt from data/sample/*.txt if it is absent, then
writes output/demo/data/sample.tfrecord from data/sample/corpus_zh.txt.
Works from any directory; default paths are relative to the repository
(${REPO_ROOT}); paths you give are relative to your current directory.

Every setting is an option or an environment variable (the option wins).
Settings marked (--flag) are the Python tools' flags: unset, the tool's own
default applies (see python -m data_gen.create_pretraining_data --help).

  --input GLOBS         INPUT           corpus, comma-separated globs    [${INPUT}]
  --output_dir D        OUTPUT_DIR      where the TFRecord goes          [${OUTPUT_DIR}]
  --output_name N       OUTPUT_NAME     file is D/N.tfrecord (.gz added with gzip) [${OUTPUT_NAME}]
  --vocab F             VOCAB           vocab file                       [${VOCAB}]
  --build_vocab W       BUILD_VOCAB     auto: build the default vocab if it is missing;
                                        always: (re)build VOCAB; never: VOCAB must exist [${BUILD_VOCAB}]
  --vocab_input GLOBS   VOCAB_INPUT     text the vocab is built from     [${VOCAB_INPUT}]
  --vocab_size N        VOCAB_SIZE      exact size of a built vocab (--vocab_size of build_vocab;
                                        the default vocab: ${DEMO_VOCAB_SIZE})
  --mode M              MODE            roberta | albert | bert | xlnet  (--mode)
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
e.g.  bash scripts/create_pretrain_data.sh --mode albert -- --ngram=2 --short_seq_prob=0.2
Examples:
  MODE=albert bash scripts/create_pretrain_data.sh
  bash scripts/create_pretrain_data.sh --input 'corpus/*.txt' --vocab ../shared/data/vocab/bert_chinese_vocab.txt \\
      --output_dir output/full --dupe_factor 5
Inspect the result:  python -m data_gen.tools.inspect_records OUTPUT_DIR/OUTPUT_NAME.tfrecord -n 3
EOF
}

die() { echo "create_pretrain_data.sh: error: $*" >&2; exit 2; }

# Runs a command, or with DRY_RUN=1 prints it (shell-quoted) instead.
run() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    printf '%q ' "$@"; printf '\n'
  else
    "$@"
  fi
}

# Options taking a value: --variable (lower case) sets VARIABLE.
VALUE_OPTIONS=(INPUT OUTPUT_DIR OUTPUT_NAME VOCAB BUILD_VOCAB VOCAB_INPUT PYTHON)
for pair in "${GENERATION_SETTINGS[@]}" "${VOCAB_SETTINGS[@]}"; do VALUE_OPTIONS+=("${pair%%:*}"); done

EXTRA_ARGS=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --dry_run) DRY_RUN=1; shift; continue ;;
    --) shift; EXTRA_ARGS=("$@"); break ;;
    --*=*) set -- "${option%%=*}" "${option#*=}" "${@:2}"; continue ;;
    --*) variable="${option#--}"; variable="${variable^^}" ;;
    *) die "unknown argument '${option}' (see --help; flags for the Python CLI go after --)" ;;
  esac
  [[ " ${VALUE_OPTIONS[*]} " == *" ${variable} "* ]] \
    || die "unknown argument '${option}' (see --help; flags for the Python CLI go after --)"
  [[ $# -ge 2 ]] || die "${option} needs a value (see --help)"
  declare "${variable}=$2"
  shift 2
done

case "${BUILD_VOCAB}" in auto|always|never) ;; *) die "BUILD_VOCAB/--build_vocab must be auto, always or never, not '${BUILD_VOCAB}'" ;; esac
case "${DO_LOWER_CASE}" in true|false|"") ;; *) die "DO_LOWER_CASE/--do_lower_case must be true or false, not '${DO_LOWER_CASE}'" ;; esac

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then
    PYTHON="${REPO_ROOT}/.venv/bin/python"
  else
    PYTHON="$(command -v python3 || true)"
  fi
fi
[[ -n "${PYTHON}" ]] && command -v "${PYTHON}" >/dev/null 2>&1 \
  || die "no Python found; run 'make setup' or set PYTHON=/path/to/python3.11"
# The repository on the import path, so the modules run from any directory.
export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"

# The flags of the settings that are set: --flag=value (booleans --flag / --noflag).
tool_flags() {
  local pair variable flag
  for pair in "$@"; do
    variable="${pair%%:*}"; flag="${pair#*:}"
    case "${!variable}" in
      "") ;;
      true) printf '%s\n' "--${flag}" ;;
      false) printf '%s\n' "--no${flag}" ;;
      *) printf '%s\n' "--${flag}=${!variable}" ;;
    esac
  done
}

if [[ "${BUILD_VOCAB}" == "always" || ( "${BUILD_VOCAB}" == "auto" && ! -f "${VOCAB}" ) ]]; then
  if [[ "${BUILD_VOCAB}" == "auto" && "${VOCAB}" != "${DEFAULT_VOCAB}" ]]; then
    die "vocab ${VOCAB} not found. Give an existing vocab, or pass --build_vocab always (BUILD_VOCAB=always) to build it from ${VOCAB_INPUT}"
  fi
  [[ "${VOCAB}" == "${DEFAULT_VOCAB}" && -z "${VOCAB_SIZE}" ]] && VOCAB_SIZE="${DEMO_VOCAB_SIZE}"
  echo "== building vocab ${VOCAB} from ${VOCAB_INPUT}"
  mapfile -t vocab_flags < <(tool_flags "${VOCAB_SETTINGS[@]}")
  run "${PYTHON}" -m data_gen.tools.build_vocab --input_file="${VOCAB_INPUT}" --output_file="${VOCAB}" \
    ${vocab_flags[@]+"${vocab_flags[@]}"}
elif [[ ! -f "${VOCAB}" ]]; then
  die "vocab ${VOCAB} not found (BUILD_VOCAB=never)"
else
  echo "== using existing vocab ${VOCAB}"
fi

run mkdir -p "${OUTPUT_DIR}"
OUTPUT_FILE="${OUTPUT_DIR}/${OUTPUT_NAME}.tfrecord"
[[ "${COMPRESSION}" == "gzip" ]] && OUTPUT_FILE="${OUTPUT_FILE}.gz"
echo "== generating ${MODE:-default-mode} data: ${INPUT} -> ${OUTPUT_FILE}"
mapfile -t generation_flags < <(tool_flags "${GENERATION_SETTINGS[@]}")
run "${PYTHON}" -m data_gen.create_pretraining_data \
  --input_file="${INPUT}" \
  --output_file="${OUTPUT_FILE}" \
  --vocab_file="${VOCAB}" \
  ${generation_flags[@]+"${generation_flags[@]}"} \
  ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
[[ "${DRY_RUN}" == "1" ]] || echo "== done: ${OUTPUT_FILE} (+ .meta.json). Inspect: ${PYTHON} -m data_gen.tools.inspect_records ${OUTPUT_FILE} -n 3"
