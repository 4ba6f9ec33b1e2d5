#!/usr/bin/env bash
# Did pretraining help? Fine-tunes on LCQMC from each starting point (BEFORE or
# random init, then AFTER) with the same seed and settings and prints the table.
# Behind `make lcqmc-finetune`. Run `bash scripts/lcqmc_finetune.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"

# Settings: environment variable, else default. Options below override both.
LCQMC_DIR="${LCQMC_DIR:-${REPO_ROOT}/../shared/data/lcqmc}"
BEFORE="${BEFORE:-}"
AFTER="${AFTER:-${REPO_ROOT}/output/demo/pretrain}"
CONFIG="${CONFIG:-}"
VOCAB="${VOCAB:-}"
OUT="${OUT:-${REPO_ROOT}/results/lcqmc}"
BEFORE_LABEL="${BEFORE_LABEL:-}"
AFTER_LABEL="${AFTER_LABEL:-after pretraining}"
RERUN="${RERUN:-0}"
# Training settings, VARIABLE:flag of finetune.compare. Unset or empty = that flag's default
# in finetune/run_lcqmc.py, so this script holds no second copy of the defaults.
TRAINING_SETTINGS=(MAX_TRAIN_EXAMPLES:max_train_examples MAX_DEV_EXAMPLES:max_dev_examples
  EPOCHS:num_train_epochs MAX_SEQ_LENGTH:max_seq_length BATCH_SIZE:train_batch_size
  LEARNING_RATE:learning_rate WARMUP:warmup_proportion EVAL_EVERY:eval_every_steps
  SEED:random_seed STRATEGY:strategy)
for pair in "${TRAINING_SETTINGS[@]}"; do variable="${pair%%:*}"; declare "${variable}=${!variable:-}"; done

usage() {
  cat <<EOF
Usage: bash scripts/lcqmc_finetune.sh [OPTIONS] [-- EXTRA_FLAGS_FOR_finetune.compare...]

Fine-tunes a sentence-pair classifier on LCQMC-format data from each starting
point, with the same seed and settings, and prints a Markdown table (starting
point, dev accuracy, test accuracy, difference to the first row). It saves the
table to OUT/results.md, every run's numbers to OUT/results.json and a plot of
dev accuracy per evaluation step to OUT/dev_curve.png. Runs live in OUT/runs/;
a finished run with unchanged settings is collected, not retrained.

Starting points: BEFORE (a checkpoint; when empty, random initialisation of
the same architecture), then AFTER (a pretraining output directory: its latest
checkpoint). Works from any directory; relative paths you give are relative to
your current directory.

Every setting is an option or an environment variable (the option wins):

  --lcqmc_dir D          LCQMC_DIR           train.txt, dev.txt, test.txt   [${LCQMC_DIR}]
  --before C             BEFORE              baseline checkpoint, empty = random init [${BEFORE:-<random init>}]
  --after C              AFTER               pretraining output dir or checkpoint [${AFTER}]
  --config F             CONFIG              model config for a starting point without
                                             bert_config.json beside it    [${CONFIG:-<none>}]
  --vocab F              VOCAB               the pretraining vocab; empty = AFTER/vocab.txt [${VOCAB:-<auto>}]
  --out D                OUT                 results folder                 [${OUT}]
  --before_label L       BEFORE_LABEL        table label of the first row   [${BEFORE_LABEL:-<auto>}]
  --after_label L        AFTER_LABEL         table label of the AFTER row   [${AFTER_LABEL}]
  --rerun                RERUN=1             retrain even finished runs
  --python P             PYTHON              interpreter; default .venv/bin/python, else python3
  -h, --help                                 this text

Training settings; unset = the default of the finetune.compare flag in
parentheses (python -m finetune.compare --help lists them):

  --max_train_examples N MAX_TRAIN_EXAMPLES  first N train pairs, 0 = all   (--max_train_examples)${MAX_TRAIN_EXAMPLES:+ [${MAX_TRAIN_EXAMPLES}]}
  --max_dev_examples N   MAX_DEV_EXAMPLES    first N dev pairs, 0 = all     (--max_dev_examples)${MAX_DEV_EXAMPLES:+ [${MAX_DEV_EXAMPLES}]}
  --epochs E             EPOCHS              training epochs                (--num_train_epochs)${EPOCHS:+ [${EPOCHS}]}
  --max_seq_length N     MAX_SEQ_LENGTH      tokens per pair                (--max_seq_length)${MAX_SEQ_LENGTH:+ [${MAX_SEQ_LENGTH}]}
  --batch_size N         BATCH_SIZE          training batch                 (--train_batch_size)${BATCH_SIZE:+ [${BATCH_SIZE}]}
  --learning_rate R      LEARNING_RATE       peak AdamW learning rate       (--learning_rate)${LEARNING_RATE:+ [${LEARNING_RATE}]}
  --warmup P             WARMUP              warmup proportion              (--warmup_proportion)${WARMUP:+ [${WARMUP}]}
  --eval_every N         EVAL_EVERY          dev evaluation interval (steps) (--eval_every_steps)${EVAL_EVERY:+ [${EVAL_EVERY}]}
  --seed N               SEED                one seed for every run         (--random_seed)${SEED:+ [${SEED}]}
  --strategy S           STRATEGY            cpu | gpu | mirrored | auto    (--strategy)${STRATEGY:+ [${STRATEGY}]}

LCQMC format: one pair per line, text_a<TAB>text_b<TAB>label (label 1 =
same meaning, 0 = not), UTF-8, files train.txt, dev.txt and test.txt.
A model whose config sets "layer_norm_cond_size": C (conditional LayerNorm)
needs a 4th field, the condition, on every line:
text_a<TAB>text_b<TAB>label<TAB>COND, COND being one class id in [0, C) (fed
as a one-hot vector) or C comma-separated numbers (e.g. 2 or 0.5,0,1 for C=3).
Examples:
  make lcqmc-finetune AFTER=output/lcqmc_pretrain VOCAB=output/lcqmc_vocab.txt
  bash scripts/lcqmc_finetune.sh --after output/pretrain --max_train_examples 20000 --epochs 1
EOF
}

die() { echo "lcqmc_finetune.sh: error: $*" >&2; exit 2; }

EXTRA_ARGS=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --rerun) RERUN=1; shift; continue ;;
    --) shift; EXTRA_ARGS=("$@"); break ;;
    --*=*) set -- "${option%%=*}" "${option#*=}" "${@:2}"; continue ;;
    --lcqmc_dir|--before|--after|--config|--vocab|--max_train_examples|--max_dev_examples|\
    --epochs|--out|--max_seq_length|--batch_size|--learning_rate|--warmup|--eval_every|--seed|\
    --strategy|--before_label|--after_label|--python)
      [[ $# -ge 2 ]] || die "${option} needs a value (see --help)"
      value="$2"; shift 2
      case "${option}" in
        --lcqmc_dir) LCQMC_DIR="${value}" ;;
        --before) BEFORE="${value}" ;;
        --after) AFTER="${value}" ;;
        --config) CONFIG="${value}" ;;
        --vocab) VOCAB="${value}" ;;
        --max_train_examples) MAX_TRAIN_EXAMPLES="${value}" ;;
        --max_dev_examples) MAX_DEV_EXAMPLES="${value}" ;;
        --epochs) EPOCHS="${value}" ;;
        --out) OUT="${value}" ;;
        --max_seq_length) MAX_SEQ_LENGTH="${value}" ;;
        --batch_size) BATCH_SIZE="${value}" ;;
        --learning_rate) LEARNING_RATE="${value}" ;;
        --warmup) WARMUP="${value}" ;;
        --eval_every) EVAL_EVERY="${value}" ;;
        --seed) SEED="${value}" ;;
        --strategy) STRATEGY="${value}" ;;
        --before_label) BEFORE_LABEL="${value}" ;;
        --after_label) AFTER_LABEL="${value}" ;;
        --python) PYTHON="${value}" ;;
      esac ;;
    *) die "unknown argument '${option}' (see --help; flags for finetune.compare go after --)" ;;
  esac
done

for pair in "MAX_TRAIN_EXAMPLES=${MAX_TRAIN_EXAMPLES}" "MAX_DEV_EXAMPLES=${MAX_DEV_EXAMPLES}" \
            "MAX_SEQ_LENGTH=${MAX_SEQ_LENGTH}" "BATCH_SIZE=${BATCH_SIZE}" "EVAL_EVERY=${EVAL_EVERY}" \
            "SEED=${SEED}"; do
  [[ "${pair#*=}" =~ ^[0-9]*$ ]] || die "${pair%%=*} must be a non-negative integer, not '${pair#*=}'"
done
[[ -z "${EPOCHS}" || "${EPOCHS}" =~ ^[0-9]*\.?[0-9]+$ ]] || die "EPOCHS must be a positive number, not '${EPOCHS}'"

# Absolute paths (relative ones are taken from the caller's directory).
absolute() { [[ -z "$1" ]] && return 0; if [[ "$1" = /* ]]; then echo "$1"; else echo "${PWD}/$1"; fi; }
LCQMC_DIR="$(absolute "${LCQMC_DIR}")"; BEFORE="$(absolute "${BEFORE}")"; AFTER="$(absolute "${AFTER}")"
CONFIG="$(absolute "${CONFIG}")"; VOCAB="$(absolute "${VOCAB}")"; OUT="$(absolute "${OUT}")"

missing=()
for split in train dev test; do [[ -f "${LCQMC_DIR}/${split}.txt" ]] || missing+=("${split}.txt"); done
if [[ ${#missing[@]} -gt 0 ]]; then
  cat >&2 <<EOF
lcqmc_finetune.sh: no LCQMC data at ${LCQMC_DIR} (missing: ${missing[*]}).
Put LCQMC there (or pass LCQMC_DIR=/path/to/lcqmc / --lcqmc_dir): three files
train.txt, dev.txt and test.txt, one pair per line in the format
    text_a<TAB>text_b<TAB>label        (label 1 = same meaning, 0 = not)
e.g. 喜欢打篮球的男生喜欢什么样的女生<TAB>爱打篮球的男生喜欢什么样的女生<TAB>1
LCQMC (Liu et al., COLING 2018) is available from its authors and in Chinese NLP
benchmark collections. A header line is tolerated; malformed lines are reported.
EOF
  exit 2
fi

checkpoint_exists() {  # a directory with a checkpoint index, or a checkpoint prefix
  [[ -f "$1/checkpoint" || -f "$1.index" ]]
}
checkpoint_exists "${AFTER}" || die "AFTER=${AFTER} holds no checkpoint. Pretrain first (make pretrain, \
or bash scripts/pretrain.sh --output_dir ...) or point AFTER= / --after at a pretraining output dir or checkpoint prefix"
if [[ -n "${BEFORE}" ]]; then
  checkpoint_exists "${BEFORE}" || die "BEFORE=${BEFORE} is neither a checkpoint directory nor a checkpoint prefix"
fi
if [[ -z "${VOCAB}" ]]; then
  for folder in "${AFTER}" "$(dirname "${AFTER}")"; do
    if [[ -f "${folder}/vocab.txt" ]]; then VOCAB="${folder}/vocab.txt"; break; fi
  done
  [[ -n "${VOCAB}" ]] || die "no vocab: set VOCAB= / --vocab to the vocab file the model was pretrained with \
(none found as ${AFTER}/vocab.txt)"
fi
[[ -f "${VOCAB}" ]] || die "VOCAB=${VOCAB} not found"
[[ -z "${CONFIG}" || -f "${CONFIG}" ]] || die "CONFIG=${CONFIG} not found"

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
  else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "${PYTHON}" ]] && command -v "${PYTHON}" >/dev/null 2>&1 \
  || die "no Python found; run 'make setup' or set PYTHON=/path/to/python3.11"
export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

if [[ -n "${BEFORE}" ]]; then
  FIRST_RUN="${BEFORE_LABEL:-before pretraining}=${BEFORE}"
else
  FIRST_RUN="${BEFORE_LABEL:-random init}="
fi
RERUN_FLAG="--norerun"; [[ "${RERUN}" == "1" ]] && RERUN_FLAG="--rerun"
SETTING_ARGS=()
for pair in "${TRAINING_SETTINGS[@]}"; do
  variable="${pair%%:*}"
  if [[ -n "${!variable}" ]]; then SETTING_ARGS+=("--${pair#*:}=${!variable}"); fi
done
CONFIG_ARGS=(); [[ -n "${CONFIG}" ]] && CONFIG_ARGS=(--bert_config_file="${CONFIG}")

echo "== LCQMC fine-tuning comparison: ${LCQMC_DIR} -> ${OUT}"
echo "   starting points: '${FIRST_RUN}', '${AFTER_LABEL}=${AFTER}'; vocab ${VOCAB}"
mkdir -p "${OUT}"
"${PYTHON}" -m finetune.compare \
  --data_dir="${LCQMC_DIR}" \
  --vocab_file="${VOCAB}" \
  ${CONFIG_ARGS[@]+"${CONFIG_ARGS[@]}"} \
  --output_dir="${OUT}" \
  --run="${FIRST_RUN}" \
  --run="${AFTER_LABEL}=${AFTER}" \
  ${SETTING_ARGS[@]+"${SETTING_ARGS[@]}"} \
  "${RERUN_FLAG}" \
  ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
PLOT="${OUT}/dev_curve.png"; [[ -f "${PLOT}" ]] || PLOT="none (results.md says why)"
echo "== table: ${OUT}/results.md   numbers: ${OUT}/results.json   plot: ${PLOT}"
