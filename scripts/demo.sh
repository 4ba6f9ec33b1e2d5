#!/usr/bin/env bash
# The whole chain on the shipped sample, in a few minutes on CPU (`make demo`):
# sample text -> vocab + TFRecords -> tiny pretraining -> fine-tuning on the
# demo's question pairs from random init and from the pretrained checkpoint ->
# the comparison table. Run `bash scripts/demo.sh --help` for the settings.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"

SCRIPT_NAME="demo.sh"

DEMO_DIR="${DEMO_DIR:-${REPO_ROOT}/output/demo}"
CONFIG="${CONFIG:-${REPO_ROOT}/common/model_configs/demo_tiny_bert.json}"
PAIRS_DIR="${PAIRS_DIR:-${REPO_ROOT}/data/sample/pairs}"
CORPUS="${CORPUS:-${REPO_ROOT}/data/sample/corpus_zh.txt}"
PRETRAIN_MAX_SEQ_LENGTH="${PRETRAIN_MAX_SEQ_LENGTH:-64}"
PRETRAIN_MAX_PREDICTIONS="${PRETRAIN_MAX_PREDICTIONS:-10}"
DUPE_FACTOR="${DUPE_FACTOR:-10}"
PRETRAIN_STEPS="${PRETRAIN_STEPS:-1500}"
PRETRAIN_LEARNING_RATE="${PRETRAIN_LEARNING_RATE:-1e-3}"
FINETUNE_EPOCHS="${FINETUNE_EPOCHS:-8}"
FINETUNE_LEARNING_RATE="${FINETUNE_LEARNING_RATE:-3e-4}"
FINETUNE_MAX_SEQ_LENGTH="${FINETUNE_MAX_SEQ_LENGTH:-40}"
EVAL_EVERY="${EVAL_EVERY:-125}"
SEED="${SEED:-12345}"
DRY_RUN="${DRY_RUN:-0}"

usage() {
  cat <<EOF
Usage: bash scripts/demo.sh [--dry_run] [--help]

Runs the whole toolkit on the shipped sample (data/sample/), CPU only:
  1. the demo question pairs' TRAIN split becomes pretraining documents
     (python -m data_gen.tools.lcqmc_to_docs; dev/test text never enters pretraining)
  2. a 5000-entry vocab from the sample corpus + train pairs, and roberta-mode
     TFRecords from both (scripts/create_pretrain_data.sh)
  3. tiny pretraining from scratch (scripts/pretrain.sh, ${PRETRAIN_STEPS} steps)
  4. fine-tuning on data/sample/pairs from random initialisation and from the
     pretrained checkpoint, same seed and settings (scripts/lcqmc_finetune.sh)
  5. the comparison table (also in DEMO_DIR/lcqmc/results.md, plot dev_curve.png)
Each run starts fresh: DEMO_DIR/pretrain and DEMO_DIR/lcqmc are replaced.
--dry_run (DRY_RUN=1) prints the command of every step and runs nothing.

Settings (environment variables):
  DEMO_DIR                  everything goes here                [${DEMO_DIR}]
  CONFIG                    model config (vocab_size 5000)      [${CONFIG}]
  PAIRS_DIR                 train/dev/test pairs                [${PAIRS_DIR}]
  CORPUS                    extra pretraining text              [${CORPUS}]
  PRETRAIN_MAX_SEQ_LENGTH   pretraining sequence length         [${PRETRAIN_MAX_SEQ_LENGTH}]
  PRETRAIN_MAX_PREDICTIONS  masked positions per sequence       [${PRETRAIN_MAX_PREDICTIONS}]
  DUPE_FACTOR               masking passes over the text        [${DUPE_FACTOR}]
  PRETRAIN_STEPS            pretraining steps (batch 32)        [${PRETRAIN_STEPS}]
  PRETRAIN_LEARNING_RATE    pretraining peak learning rate      [${PRETRAIN_LEARNING_RATE}]
  FINETUNE_EPOCHS           fine-tuning epochs                  [${FINETUNE_EPOCHS}]
  FINETUNE_LEARNING_RATE    fine-tuning peak learning rate      [${FINETUNE_LEARNING_RATE}]
  FINETUNE_MAX_SEQ_LENGTH   tokens per question pair            [${FINETUNE_MAX_SEQ_LENGTH}]
  EVAL_EVERY                dev evaluation interval (steps)     [${EVAL_EVERY}]
  SEED                      seed for data, pretraining, fine-tuning [${SEED}]
  PYTHON                    interpreter (default .venv/bin/python, else python3)
EOF
}

for argument in "$@"; do
  case "${argument}" in
    -h|--help) usage; exit 0 ;;
    --dry_run) DRY_RUN=1 ;;
    *) echo "${SCRIPT_NAME}: error: unknown argument '${argument}' (settings are environment variables; see --help)" >&2
       exit 2 ;;
  esac
done

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
  else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "${PYTHON}" ]] || { echo "demo.sh: error: no Python; run 'make setup' or set PYTHON" >&2; exit 2; }
export PYTHON
export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
[[ "${DEMO_DIR}" = /* ]] || DEMO_DIR="${PWD}/${DEMO_DIR}"

STARTED=${SECONDS}
step() {
  echo
  echo "================================================================================"
  echo "== [$1/5] $2   (t = $(( SECONDS - STARTED )) s)"
  echo "================================================================================"
}
show() { printf '%q ' "$@"; printf '\n'; }
run() {  # runs a command, or with --dry_run prints it (shell-quoted) instead
  if [[ "${DRY_RUN}" == "1" ]]; then show "$@"; else "$@"; fi
}

run mkdir -p "${DEMO_DIR}"

step 1 "question pairs (train split) -> pretraining documents"
run "${PYTHON}" -m data_gen.tools.lcqmc_to_docs --lcqmc_dir="${PAIRS_DIR}" \
  --output_file="${DEMO_DIR}/pairs_docs.txt"

step 2 "vocab (5000 entries) and roberta-mode TFRecords"
run rm -rf "${DEMO_DIR}/data"
run bash "${SCRIPT_DIR}/create_pretrain_data.sh" \
  --build_vocab always --vocab "${DEMO_DIR}/vocab.txt" --vocab_size 5000 \
  --vocab_input "${CORPUS},${PAIRS_DIR}/train.txt" \
  --input "${CORPUS},${DEMO_DIR}/pairs_docs.txt" \
  --output_dir "${DEMO_DIR}/data" --mode roberta \
  --max_seq_length "${PRETRAIN_MAX_SEQ_LENGTH}" --max_predictions "${PRETRAIN_MAX_PREDICTIONS}" \
  --dupe_factor "${DUPE_FACTOR}" --seed "${SEED}"

step 3 "tiny pretraining from scratch (${PRETRAIN_STEPS} steps)"
run rm -rf "${DEMO_DIR}/pretrain"
run bash "${SCRIPT_DIR}/pretrain.sh" \
  --config "${CONFIG}" --input "${DEMO_DIR}/data/*.tfrecord" --output_dir "${DEMO_DIR}/pretrain" \
  --steps "${PRETRAIN_STEPS}" --warmup_steps "$(( PRETRAIN_STEPS / 10 ))" \
  --learning_rate "${PRETRAIN_LEARNING_RATE}" --batch_size 32 --eval_batch_size 32 --eval_steps 20 \
  --log_every 50 --save_every "${PRETRAIN_STEPS}" --strategy cpu --seed "${SEED}"

step 4 "fine-tuning on ${PAIRS_DIR}: random init vs pretrained"
run rm -rf "${DEMO_DIR}/lcqmc"
FINETUNE_COMMAND=(bash "${SCRIPT_DIR}/lcqmc_finetune.sh"
  --lcqmc_dir "${PAIRS_DIR}" --after "${DEMO_DIR}/pretrain" --vocab "${DEMO_DIR}/vocab.txt"
  --config "${CONFIG}" --out "${DEMO_DIR}/lcqmc" --max_seq_length "${FINETUNE_MAX_SEQ_LENGTH}"
  --epochs "${FINETUNE_EPOCHS}" --learning_rate "${FINETUNE_LEARNING_RATE}" --eval_every "${EVAL_EVERY}"
  --seed "${SEED}" --before_label "random init" --after_label "after tiny pretraining")
if [[ "${DRY_RUN}" == "1" ]]; then
  show "${FINETUNE_COMMAND[@]}"
  exit 0
fi
"${FINETUNE_COMMAND[@]}" 2>&1 | tee "${DEMO_DIR}/finetune.log" \
  | { grep --line-buffered -E "^(== |step [0-9]+: dev|best dev|train step)" || true; } \
  || { tail -n 30 "${DEMO_DIR}/finetune.log"
       echo "demo.sh: fine-tuning failed (full log: ${DEMO_DIR}/finetune.log)" >&2; exit 1; }

step 5 "the table"
cat "${DEMO_DIR}/lcqmc/results.md"
echo "Files: ${DEMO_DIR}/lcqmc/results.md, results.json, dev_curve.png; full fine-tuning log ${DEMO_DIR}/finetune.log"
echo "Done in $(( SECONDS - STARTED )) s."
