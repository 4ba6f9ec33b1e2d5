#!/usr/bin/env bash
# Pretrain a model with pretrain.run_pretraining. With no --input: the demo
# (tiny BERT on the demo TFRecords, a few hundred steps on CPU, then eval).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"

# Training settings, VARIABLE:flag of pretrain.run_pretraining. Unset or empty = that
# flag's default in pretrain/run_pretraining.py, so this script holds no second copy
# of the defaults (tests/scripts/test_script_defaults.py checks it). Each is also the option
# --variable (lower case).
TRAINING_SETTINGS=(STEPS:num_train_steps WARMUP_STEPS:num_warmup_steps BATCH_SIZE:train_batch_size
  EVAL_BATCH_SIZE:eval_batch_size EVAL_STEPS:max_eval_steps LEARNING_RATE:learning_rate
  OPTIMIZER:optimizer STRATEGY:strategy PRECISION:precision
  ACCUMULATION:gradient_accumulation_steps MAX_SEQ_LENGTH:max_seq_length
  MAX_PREDICTIONS:max_predictions_per_seq LOG_EVERY:log_every_n_steps
  SAVE_EVERY:save_checkpoints_steps INIT_CHECKPOINT:init_checkpoint
  EVAL_INPUT:eval_input_file SEED:random_seed VOCAB:vocab_file)
SCRIPT_NAME="pretrain.sh"
for pair in "${TRAINING_SETTINGS[@]}"; do variable="${pair%%:*}"; declare "${variable}=${!variable:-}"; done
# The demo: used when no --input/INPUT is given, for the settings left empty.
DEMO_PATHS=(CONFIG="${REPO_ROOT}/common/model_configs/demo_tiny_bert.json"
  INPUT="${REPO_ROOT}/output/demo/data/*.tfrecord" OUTPUT_DIR="${REPO_ROOT}/output/demo/pretrain")
DEMO_SETTINGS=(STEPS=300 WARMUP_STEPS=30 LEARNING_RATE=1e-3 EVAL_BATCH_SIZE=32 EVAL_STEPS=20
  LOG_EVERY=50 SAVE_EVERY=300)
CONFIG="${CONFIG:-}"
INPUT="${INPUT:-}"
OUTPUT_DIR="${OUTPUT_DIR:-}"
DO_EVAL="${DO_EVAL:-true}"
DRY_RUN="${DRY_RUN:-0}"
# Options taking a value: --variable (lower case) sets VARIABLE.
VALUE_OPTIONS=(CONFIG INPUT OUTPUT_DIR PYTHON)
for pair in "${TRAINING_SETTINGS[@]}"; do VALUE_OPTIONS+=("${pair%%:*}"); done

usage() {
  cat <<EOF
Usage: bash scripts/pretrain.sh [OPTIONS] [-- EXTRA_FLAGS_FOR_run_pretraining...]

Runs python -m pretrain.run_pretraining --do_train (and --do_eval). Every
setting is an option or the environment variable beside it (the option wins).
Training settings left unset take run_pretraining's own defaults (see
python -m pretrain.run_pretraining --help); MAX_SEQ_LENGTH and MAX_PREDICTIONS
default to the data's .meta.json. Rerunning with the same output directory
resumes from its last checkpoint.

  --config FILE           CONFIG           model config JSON (required, except in the demo)
  --input GLOBS           INPUT            training TFRecord globs; unset = the demo
  --output_dir DIR        OUTPUT_DIR       checkpoints + eval results (required, except in the demo)
  --eval_input GLOBS      EVAL_INPUT       eval TFRecord globs (default: --input)
  --init_checkpoint P     INIT_CHECKPOINT  start from these weights
  --vocab FILE            VOCAB            the data's vocab (default: the one its .meta.json names)
  --steps N               STEPS            optimizer updates
  --warmup_steps N        WARMUP_STEPS     warmup updates
  --batch_size N          BATCH_SIZE       global train batch
  --eval_batch_size N     EVAL_BATCH_SIZE  eval batch
  --eval_steps N          EVAL_STEPS       max eval batches
  --learning_rate R       LEARNING_RATE    peak learning rate
  --seed N                SEED             graph seed; also fixes the input order
  --optimizer NAME        OPTIMIZER        adamw | lamb
  --strategy NAME         STRATEGY         auto|cpu|gpu|mirrored|multi_worker|tpu
  --precision NAME        PRECISION        auto|fp32|fp16|bf16
  --accumulation K        ACCUMULATION     gradient accumulation steps
  --max_seq_length N      MAX_SEQ_LENGTH   sequence length of the data
  --max_predictions N     MAX_PREDICTIONS  masked positions per sequence
  --log_every N           LOG_EVERY        log/summary interval
  --save_every N          SAVE_EVERY       checkpoint interval (updates)
  --no_eval               DO_EVAL=false    train only
  --python PATH           PYTHON           interpreter (else .venv/bin/python, else python3)
  --dry_run               DRY_RUN=1        print the command, run nothing
  -h, --help                               this help

The demo (no --input): ${DEMO_PATHS[*]}
  and, for the settings left unset: ${DEMO_SETTINGS[*]}
Arguments after -- go to run_pretraining unchanged (e.g. -- --keep_checkpoint_max=2).
EOF
}

die() { echo "pretrain.sh: error: $*" >&2; exit 2; }

EXTRA=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --no_eval) DO_EVAL=false; shift; continue ;;
    --dry_run) DRY_RUN=1; shift; continue ;;
    --) shift; EXTRA=("$@"); break ;;
    --*=*) set -- "${option%%=*}" "${option#*=}" "${@:2}"; continue ;;
    --*) variable="${option#--}"; variable="${variable^^}" ;;
    *) die "unknown argument '${option}' (see --help; flags for run_pretraining go after --)" ;;
  esac
  [[ " ${VALUE_OPTIONS[*]} " == *" ${variable} "* ]] \
    || die "unknown option ${option} (see --help; flags for run_pretraining go after --)"
  [[ $# -ge 2 ]] || die "${option} needs a value (see --help)"
  declare "${variable}=$2"
  shift 2
done

DEMO=0
if [[ -z "${INPUT}" ]]; then
  DEMO=1
  for assignment in "${DEMO_PATHS[@]}" "${DEMO_SETTINGS[@]}"; do
    variable="${assignment%%=*}"
    [[ -n "${!variable}" ]] || declare "${variable}=${assignment#*=}"
  done
  compgen -G "${INPUT}" >/dev/null || die "no demo TFRecords (${INPUT}); make them first: bash scripts/create_pretrain_data.sh (or: make data)"
fi
[[ -n "${CONFIG}" ]] || die "--config (CONFIG) is required with --input"
[[ -n "${OUTPUT_DIR}" ]] || die "--output_dir (OUTPUT_DIR) is required with --input"

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
  else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "${PYTHON}" ]] || die "no Python found; run 'make setup' or set PYTHON=/path/to/python3.11"
export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"

args=(--bert_config_file="${CONFIG}" --input_file="${INPUT}" --output_dir="${OUTPUT_DIR}" --do_train)
[[ "${DO_EVAL}" == "true" ]] && args+=(--do_eval)
for pair in "${TRAINING_SETTINGS[@]}"; do
  variable="${pair%%:*}"
  [[ -n "${!variable}" ]] && args+=("--${pair#*:}=${!variable}")
done
args+=(${EXTRA[@]+"${EXTRA[@]}"})

if [[ "${DRY_RUN}" == "1" ]]; then
  printf '%q ' "${PYTHON}" -m pretrain.run_pretraining "${args[@]}"; printf '\n'
  exit 0
fi
echo "pretrain: ${CONFIG} on ${INPUT} -> ${OUTPUT_DIR}$([[ ${DEMO} == 1 ]] && echo ' (demo)')"
"${PYTHON}" -m pretrain.run_pretraining "${args[@]}"
if [[ "${DO_EVAL}" == "true" && -f "${OUTPUT_DIR}/eval_results.txt" ]]; then
  echo "eval results (${OUTPUT_DIR}/eval_results.txt):"
  cat "${OUTPUT_DIR}/eval_results.txt"
fi
