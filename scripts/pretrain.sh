#!/usr/bin/env bash
# Pretrain a model with pretrain.run_pretraining. With no arguments: the demo's
# tiny BERT on the demo TFRecords, a few hundred steps on CPU, then eval.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: bash scripts/pretrain.sh [options] [-- extra run_pretraining flags]

Every option can also be set by the environment variable in brackets.
  --config FILE          model config JSON            [CONFIG]  (configs/demo_tiny_bert.json)
  --input GLOBS          training TFRecord globs      [INPUT]   (output/demo/data/*.tfrecord)
  --eval_input GLOBS     eval TFRecord globs          [EVAL_INPUT] (default: --input)
  --output_dir DIR       checkpoints + eval results   [OUTPUT_DIR] (output/demo/pretrain)
  --steps N              optimizer updates            [STEPS]   (300)
  --warmup N             warmup updates               [WARMUP]  (STEPS/10)
  --batch_size N         global train batch           [BATCH_SIZE] (32)
  --eval_batch_size N    eval batch                   [EVAL_BATCH_SIZE] (32)
  --eval_steps N         max eval batches             [EVAL_STEPS] (20)
  --learning_rate LR     peak learning rate           [LR]      (1e-3)
  --optimizer NAME       adamw | lamb                 [OPTIMIZER] (adamw)
  --strategy NAME        auto|cpu|gpu|mirrored|multi_worker|tpu [STRATEGY] (auto)
  --precision NAME       auto|fp32|fp16|bf16          [PRECISION] (auto)
  --accumulation K       gradient accumulation steps  [ACCUMULATION] (1)
  --max_seq_length N     default: from the data's .meta.json  [MAX_SEQ_LENGTH]
  --max_predictions N    default: from the data's .meta.json  [MAX_PREDICTIONS]
  --init_checkpoint P    start from these weights     [INIT_CHECKPOINT]
  --log_every N          log/summary interval         [LOG_EVERY] (50)
  --no_eval              train only                   [DO_EVAL=false]
  --python PATH          interpreter [PYTHON] (else .venv/bin/python, else python3)
  -h, --help             this help
Arguments after -- go to python -m pretrain.run_pretraining unchanged
(e.g. -- --save_checkpoints_steps=100 --keep_checkpoint_max=2).
Rerunning with the same --output_dir resumes from its last checkpoint.
USAGE
}

CONFIG="${CONFIG:-configs/demo_tiny_bert.json}"
INPUT="${INPUT:-output/demo/data/*.tfrecord}"
EVAL_INPUT="${EVAL_INPUT:-}"
OUTPUT_DIR="${OUTPUT_DIR:-output/demo/pretrain}"
STEPS="${STEPS:-300}"
WARMUP="${WARMUP:-}"
BATCH_SIZE="${BATCH_SIZE:-32}"
EVAL_BATCH_SIZE="${EVAL_BATCH_SIZE:-32}"
EVAL_STEPS="${EVAL_STEPS:-20}"
LR="${LR:-1e-3}"
OPTIMIZER="${OPTIMIZER:-adamw}"
STRATEGY="${STRATEGY:-auto}"
PRECISION="${PRECISION:-auto}"
ACCUMULATION="${ACCUMULATION:-1}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-}"
INIT_CHECKPOINT="${INIT_CHECKPOINT:-}"
LOG_EVERY="${LOG_EVERY:-50}"
DO_EVAL="${DO_EVAL:-true}"
PYTHON="${PYTHON:-}"
EXTRA=()

need() { [[ $# -ge 2 ]] || { echo "error: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --config) need "$@"; CONFIG="$2"; shift 2 ;;
    --input) need "$@"; INPUT="$2"; shift 2 ;;
    --eval_input) need "$@"; EVAL_INPUT="$2"; shift 2 ;;
    --output_dir) need "$@"; OUTPUT_DIR="$2"; shift 2 ;;
    --steps) need "$@"; STEPS="$2"; shift 2 ;;
    --warmup) need "$@"; WARMUP="$2"; shift 2 ;;
    --batch_size) need "$@"; BATCH_SIZE="$2"; shift 2 ;;
    --eval_batch_size) need "$@"; EVAL_BATCH_SIZE="$2"; shift 2 ;;
    --eval_steps) need "$@"; EVAL_STEPS="$2"; shift 2 ;;
    --learning_rate) need "$@"; LR="$2"; shift 2 ;;
    --optimizer) need "$@"; OPTIMIZER="$2"; shift 2 ;;
    --strategy) need "$@"; STRATEGY="$2"; shift 2 ;;
    --precision) need "$@"; PRECISION="$2"; shift 2 ;;
    --accumulation) need "$@"; ACCUMULATION="$2"; shift 2 ;;
    --max_seq_length) need "$@"; MAX_SEQ_LENGTH="$2"; shift 2 ;;
    --max_predictions) need "$@"; MAX_PREDICTIONS="$2"; shift 2 ;;
    --init_checkpoint) need "$@"; INIT_CHECKPOINT="$2"; shift 2 ;;
    --log_every) need "$@"; LOG_EVERY="$2"; shift 2 ;;
    --no_eval) DO_EVAL=false; shift ;;
    --python) need "$@"; PYTHON="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -z "$PYTHON" ]]; then
  if [[ -x "$REPO_ROOT/.venv/bin/python" ]]; then PYTHON="$REPO_ROOT/.venv/bin/python"
  else PYTHON="$(command -v python3)"; fi
fi
cd "$REPO_ROOT"
[[ -z "$WARMUP" ]] && WARMUP=$(( STEPS / 10 ))

# The demo data must exist before training.
first_input=""
IFS=',' read -ra patterns <<< "$INPUT"
for pattern in "${patterns[@]}"; do
  for f in $pattern; do
    if [[ -f "$f" && "$f" != *.meta.json ]]; then first_input="$f"; break 2; fi
  done
done
if [[ -z "$first_input" ]]; then
  echo "error: no TFRecord matches --input '$INPUT'." >&2
  if [[ "$INPUT" == "output/demo/data/*.tfrecord" ]]; then
    echo "Make the demo data first: bash scripts/create_pretrain_data.sh (or: make data)" >&2
  fi
  exit 1
fi

# Sequence length and predictions default to what the data was made with.
meta_field() {
  "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$first_input.meta.json" "$1" 2>/dev/null || true
}
[[ -z "$MAX_SEQ_LENGTH" ]] && MAX_SEQ_LENGTH="$(meta_field max_seq_length)"
[[ -z "$MAX_PREDICTIONS" ]] && MAX_PREDICTIONS="$(meta_field max_predictions_per_seq)"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-128}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-20}"

args=(
  --bert_config_file="$CONFIG" --input_file="$INPUT" --output_dir="$OUTPUT_DIR"
  --max_seq_length="$MAX_SEQ_LENGTH" --max_predictions_per_seq="$MAX_PREDICTIONS"
  --do_train --train_batch_size="$BATCH_SIZE" --eval_batch_size="$EVAL_BATCH_SIZE"
  --learning_rate="$LR" --num_train_steps="$STEPS" --num_warmup_steps="$WARMUP"
  --max_eval_steps="$EVAL_STEPS" --optimizer="$OPTIMIZER" --strategy="$STRATEGY"
  --precision="$PRECISION" --gradient_accumulation_steps="$ACCUMULATION"
  --log_every_n_steps="$LOG_EVERY" --save_checkpoints_steps="$STEPS"
)
[[ "$DO_EVAL" == "true" ]] && args+=(--do_eval)
[[ -n "$EVAL_INPUT" ]] && args+=(--eval_input_file="$EVAL_INPUT")
[[ -n "$INIT_CHECKPOINT" ]] && args+=(--init_checkpoint="$INIT_CHECKPOINT")

echo "pretrain: $CONFIG on $INPUT -> $OUTPUT_DIR ($STEPS steps, batch $BATCH_SIZE, strategy $STRATEGY)"
"$PYTHON" -m pretrain.run_pretraining "${args[@]}" "${EXTRA[@]}"
if [[ "$DO_EVAL" == "true" && -f "$OUTPUT_DIR/eval_results.txt" ]]; then
  echo "eval results ($OUTPUT_DIR/eval_results.txt):"
  cat "$OUTPUT_DIR/eval_results.txt"
fi
