#!/usr/bin/env bash
# Builds pretraining TFRecords with `python -m data_gen.create_pretraining_data`.
# With no arguments: the demo (shipped sample corpus -> output/demo/).
# Run `bash scripts/create_pretrain_data.sh --help` for every setting.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
DEFAULT_VOCAB="${REPO_ROOT}/output/demo/vocab.txt"

# Settings: environment variable, else default. Arguments below override both.
MODE="${MODE:-roberta}"
INPUT="${INPUT:-${REPO_ROOT}/data/sample/corpus_zh.txt}"
OUTPUT_DIR="${OUTPUT_DIR:-${REPO_ROOT}/output/demo/data}"
OUTPUT_NAME="${OUTPUT_NAME:-sample}"
VOCAB="${VOCAB:-${DEFAULT_VOCAB}}"
BUILD_VOCAB="${BUILD_VOCAB:-auto}"
VOCAB_INPUT="${VOCAB_INPUT:-${REPO_ROOT}/data/sample/*.txt}"
VOCAB_SIZE="${VOCAB_SIZE:-5000}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-128}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-20}"
MASKED_LM_PROB="${MASKED_LM_PROB:-0.15}"
DUPE_FACTOR="${DUPE_FACTOR:-10}"
RANDOM_SEED="${RANDOM_SEED:-12345}"
NUM_WORKERS="${NUM_WORKERS:-0}"
COMPRESSION="${COMPRESSION:-none}"
DO_LOWER_CASE="${DO_LOWER_CASE:-true}"
DRY_RUN="${DRY_RUN:-0}"

usage() {
  cat <<EOF
Usage: bash scripts/create_pretrain_data.sh [OPTIONS] [-- EXTRA_CLI_FLAGS...]

Turns a corpus (blank-line-separated documents, one sentence per line) into
pretraining TFRecords plus a .meta.json sidecar. With no arguments it runs the
demo: builds output/demo/vocab.txt from data/sample/*.txt if it is absent, then
writes output/demo/data/sample.tfrecord from data/sample/corpus_zh.txt.
Works from any directory; default paths are relative to the repository
(${REPO_ROOT}); paths you give are relative to your current directory.

Every setting is an option or an environment variable (the option wins):

  --mode M              MODE            roberta | albert | bert          [${MODE}]
  --input GLOBS         INPUT           corpus, comma-separated globs    [${INPUT}]
  --output_dir D        OUTPUT_DIR      where the TFRecord goes          [${OUTPUT_DIR}]
  --output_name N       OUTPUT_NAME     file is D/N.tfrecord (.gz added with gzip) [${OUTPUT_NAME}]
  --vocab F             VOCAB           vocab file                       [${VOCAB}]
  --build_vocab W       BUILD_VOCAB     auto: build the default vocab if it is missing;
                                        always: (re)build VOCAB; never: VOCAB must exist [${BUILD_VOCAB}]
  --vocab_input GLOBS   VOCAB_INPUT     text the vocab is built from     [${VOCAB_INPUT}]
  --vocab_size N        VOCAB_SIZE      exact size of a built vocab      [${VOCAB_SIZE}]
  --max_seq_length N    MAX_SEQ_LENGTH  tokens per instance              [${MAX_SEQ_LENGTH}]
  --max_predictions N   MAX_PREDICTIONS masked positions per instance    [${MAX_PREDICTIONS}]
  --masked_lm_prob P    MASKED_LM_PROB  fraction of tokens masked        [${MASKED_LM_PROB}]
  --dupe_factor N       DUPE_FACTOR     passes over the corpus, each with new masks [${DUPE_FACTOR}]
  --seed N              RANDOM_SEED     random seed                      [${RANDOM_SEED}]
  --num_workers N       NUM_WORKERS     worker processes, 0 = all cores  [${NUM_WORKERS}]
  --compression C       COMPRESSION     none | gzip                      [${COMPRESSION}]
  --do_lower_case B     DO_LOWER_CASE   true | false (vocab build and generation) [${DO_LOWER_CASE}]
  --python P            PYTHON          interpreter; default .venv/bin/python if present, else python3
  --dry_run             DRY_RUN=1       print the commands with every path resolved, run nothing
  -h, --help                            this text

Arguments after "--" go unchanged to python -m data_gen.create_pretraining_data,
e.g.  bash scripts/create_pretrain_data.sh --mode albert -- --ngram=2 --short_seq_prob=0.2
Examples:
  MODE=albert bash scripts/create_pretrain_data.sh
  bash scripts/create_pretrain_data.sh --input 'corpus/*.txt' --vocab ../shared/data/vocab/bert_chinese_vocab.txt \\
      --output_dir output/full --dupe_factor 5
Inspect the result:  python -m data_gen.inspect_records OUTPUT_DIR/OUTPUT_NAME.tfrecord -n 3
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

EXTRA_ARGS=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --dry_run) DRY_RUN=1; shift; continue ;;
    --) shift; EXTRA_ARGS=("$@"); break ;;
    --*=*) set -- "${option%%=*}" "${option#*=}" "${@:2}"; continue ;;
    --mode|--input|--output_dir|--output_name|--vocab|--build_vocab|--vocab_input|--vocab_size|\
    --max_seq_length|--max_predictions|--masked_lm_prob|--dupe_factor|--seed|--num_workers|\
    --compression|--do_lower_case|--python)
      [[ $# -ge 2 ]] || die "${option} needs a value (see --help)"
      value="$2"; shift 2
      case "${option}" in
        --mode) MODE="${value}" ;;
        --input) INPUT="${value}" ;;
        --output_dir) OUTPUT_DIR="${value}" ;;
        --output_name) OUTPUT_NAME="${value}" ;;
        --vocab) VOCAB="${value}" ;;
        --build_vocab) BUILD_VOCAB="${value}" ;;
        --vocab_input) VOCAB_INPUT="${value}" ;;
        --vocab_size) VOCAB_SIZE="${value}" ;;
        --max_seq_length) MAX_SEQ_LENGTH="${value}" ;;
        --max_predictions) MAX_PREDICTIONS="${value}" ;;
        --masked_lm_prob) MASKED_LM_PROB="${value}" ;;
        --dupe_factor) DUPE_FACTOR="${value}" ;;
        --seed) RANDOM_SEED="${value}" ;;
        --num_workers) NUM_WORKERS="${value}" ;;
        --compression) COMPRESSION="${value}" ;;
        --do_lower_case) DO_LOWER_CASE="${value}" ;;
        --python) PYTHON="${value}" ;;
      esac ;;
    *) die "unknown argument '${option}' (see --help; flags for the Python CLI go after --)" ;;
  esac
done

case "${MODE}" in roberta|albert|bert) ;; *) die "MODE/--mode must be roberta, albert or bert, not '${MODE}'" ;; esac
case "${COMPRESSION}" in none|gzip) ;; *) die "COMPRESSION/--compression must be none or gzip, not '${COMPRESSION}'" ;; esac
case "${BUILD_VOCAB}" in auto|always|never) ;; *) die "BUILD_VOCAB/--build_vocab must be auto, always or never, not '${BUILD_VOCAB}'" ;; esac
case "${DO_LOWER_CASE}" in true|false) ;; *) die "DO_LOWER_CASE/--do_lower_case must be true or false, not '${DO_LOWER_CASE}'" ;; esac
for pair in "VOCAB_SIZE=${VOCAB_SIZE}" "MAX_SEQ_LENGTH=${MAX_SEQ_LENGTH}" "MAX_PREDICTIONS=${MAX_PREDICTIONS}" \
            "DUPE_FACTOR=${DUPE_FACTOR}" "RANDOM_SEED=${RANDOM_SEED}" "NUM_WORKERS=${NUM_WORKERS}"; do
  [[ "${pair#*=}" =~ ^[0-9]+$ ]] || die "${pair%%=*} must be a non-negative integer, not '${pair#*=}'"
done

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

LOWER_FLAG="--do_lower_case"
[[ "${DO_LOWER_CASE}" == "false" ]] && LOWER_FLAG="--nodo_lower_case"

if [[ "${BUILD_VOCAB}" == "always" || ( "${BUILD_VOCAB}" == "auto" && ! -f "${VOCAB}" ) ]]; then
  if [[ "${BUILD_VOCAB}" == "auto" && "${VOCAB}" != "${DEFAULT_VOCAB}" ]]; then
    die "vocab ${VOCAB} not found. Give an existing vocab, or pass --build_vocab always (BUILD_VOCAB=always) to build it from ${VOCAB_INPUT}"
  fi
  echo "== building vocab ${VOCAB} (${VOCAB_SIZE} entries) from ${VOCAB_INPUT}"
  run "${PYTHON}" -m data_gen.build_vocab --input_file="${VOCAB_INPUT}" --output_file="${VOCAB}" \
    --vocab_size="${VOCAB_SIZE}" "${LOWER_FLAG}"
elif [[ ! -f "${VOCAB}" ]]; then
  die "vocab ${VOCAB} not found (BUILD_VOCAB=never)"
else
  echo "== using existing vocab ${VOCAB}"
fi

run mkdir -p "${OUTPUT_DIR}"
OUTPUT_FILE="${OUTPUT_DIR}/${OUTPUT_NAME}.tfrecord"
[[ "${COMPRESSION}" == "gzip" ]] && OUTPUT_FILE="${OUTPUT_FILE}.gz"
echo "== generating ${MODE} data: ${INPUT} -> ${OUTPUT_FILE}"
run "${PYTHON}" -m data_gen.create_pretraining_data \
  --input_file="${INPUT}" \
  --output_file="${OUTPUT_FILE}" \
  --vocab_file="${VOCAB}" \
  --mode="${MODE}" \
  "${LOWER_FLAG}" \
  --max_seq_length="${MAX_SEQ_LENGTH}" \
  --max_predictions_per_seq="${MAX_PREDICTIONS}" \
  --masked_lm_prob="${MASKED_LM_PROB}" \
  --dupe_factor="${DUPE_FACTOR}" \
  --random_seed="${RANDOM_SEED}" \
  --num_workers="${NUM_WORKERS}" \
  --compression="${COMPRESSION}" \
  ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
[[ "${DRY_RUN}" == "1" ]] || echo "== done: ${OUTPUT_FILE} (+ .meta.json). Inspect: ${PYTHON} -m data_gen.inspect_records ${OUTPUT_FILE} -n 3"
