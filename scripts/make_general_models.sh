#!/usr/bin/env bash
# Stand-ins for released models, made the way a release is made: pretraining on general text
# (GENERAL_CORPUS, held out in part for their own eval), then exported with export_hf and
# imported back with import_hf, so that continued pretraining starts from a transformers model
# directory exactly as for a user who downloaded one. Run `bash scripts/make_general_models.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
SCRIPT_NAME="make_general_models.sh"
source "${SCRIPT_DIR}/settings.sh"

GENERAL_CORPUS="${GENERAL_CORPUS:-${REPO_ROOT}/../shared/data/corpus/clue_small_sample.txt}"
VOCAB="${VOCAB:-${REPO_ROOT}/../shared/data/vocab/bert_chinese_vocab.txt}"
OUT="${OUT:-${REPO_ROOT}/runs/general_models}"
MODELS="${MODELS:-bert,albert}"
# Three times a row of the LCQMC experiment (1000 steps of 64 x 64 tokens).
PRETRAIN_STEPS="${PRETRAIN_STEPS:-3000}"
PRETRAIN_BATCH_SIZE="${PRETRAIN_BATCH_SIZE:-64}"
PRETRAIN_SEED="${PRETRAIN_SEED:-1}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-64}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-10}"
DUPE_FACTOR="${DUPE_FACTOR:-10}"
EVAL_SHARE="${EVAL_SHARE:-0.05}"

usage() {
  cat <<EOF
Usage: bash scripts/make_general_models.sh [--dry_run]

Makes the general models the continued-pretraining experiment starts from (docs/experiments.md,
"Continued pretraining, measured"), one per MODELS entry:
  bert    lcqmc_small_bert (L4 H256), RoBERTa data: whole-word masking, AdamW 5e-4
  albert  lcqmc_small_albert (the same width and depth, shared layers), ALBERT
          data: sentence-order prediction + n-gram masking, LAMB at 0.00176
For each: OUT/MODEL/data (EVAL_SHARE of the documents held out in data/eval/), OUT/MODEL/pretrain
(eval_results.txt: on the held-out general text), OUT/MODEL/hf (export_hf: a transformers
directory) and OUT/MODEL/released (import_hf of it: where continuing starts). GENERAL_CORPUS must
share no text with the tasks the models are later compared on.

Settings (environment variables) [defaults]:
  GENERAL_CORPUS     blank-line-separated documents [${GENERAL_CORPUS}]
  VOCAB              vocab file                      [${VOCAB}]
  OUT                output folder                   [${OUT}]
  MODELS             comma-separated, of bert,albert [${MODELS}]
  PRETRAIN_STEPS     pretraining updates             [${PRETRAIN_STEPS}]
  PRETRAIN_BATCH_SIZE  sequences per update          [${PRETRAIN_BATCH_SIZE}]
  PRETRAIN_SEED      pretraining seed                [${PRETRAIN_SEED}]
  MAX_SEQ_LENGTH     tokens per sequence             [${MAX_SEQ_LENGTH}]
  MAX_PREDICTIONS    masked positions per sequence   [${MAX_PREDICTIONS}]
  DUPE_FACTOR        masking passes over the text    [${DUPE_FACTOR}]
  EVAL_SHARE         documents held out for eval     [${EVAL_SHARE}]
  PYTHON             interpreter                     [.venv/bin/python, else python3]
EOF
}

DRY_RUN="${DRY_RUN:-0}"
parse_script_args "$@"
[[ ${#POSITIONAL[@]} -eq 0 ]] || die "unknown argument '${POSITIONAL[0]}' (see --help; settings \
are environment variables)"
[[ -f "${GENERAL_CORPUS}" ]] || die "GENERAL_CORPUS=${GENERAL_CORPUS} not found"
[[ -f "${VOCAB}" ]] || die "VOCAB=${VOCAB} not found"
choose_python

for model in ${MODELS//,/ }; do
  case "${model}" in
    bert) CONFIG="${REPO_ROOT}/common/model_lcqmc_small_bert"; MODE=roberta
          OPTIMIZER=(--optimizer=adamw --learning_rate=5e-4 --adam_bias_correction) ;;
    albert) CONFIG="${REPO_ROOT}/common/model_lcqmc_small_albert"; MODE=albert
            OPTIMIZER=(--optimizer=lamb --learning_rate=0.00176 --noadam_bias_correction) ;;
    *) die "unknown model '${model}' in MODELS: choose bert or albert" ;;
  esac
  ROOT="${OUT}/${model}"
  echo "== [$(date +%H:%M:%S)] ${model}: pretraining data (held out: ${EVAL_SHARE} of the documents)"
  if [[ ! -f "${ROOT}/data/eval/general.tfrecord.meta.json" ]]; then
    run "${PYTHON}" -m data_gen.create_pretraining_data --input_file="${GENERAL_CORPUS}" \
      --output_file="${ROOT}/data/general.tfrecord" --vocab_file="${VOCAB}" --mode="${MODE}" \
      --max_seq_length="${MAX_SEQ_LENGTH}" --max_predictions_per_seq="${MAX_PREDICTIONS}" \
      --dupe_factor="${DUPE_FACTOR}" --eval_share="${EVAL_SHARE}" --random_seed="${PRETRAIN_SEED}"
  fi
  echo "== [$(date +%H:%M:%S)] ${model}: pretraining ${PRETRAIN_STEPS} steps"
  run "${PYTHON}" -m pretrain.run_pretraining --bert_config_file="${CONFIG}" \
    --input_file="${ROOT}/data/general.tfrecord" \
    --eval_input_file="${ROOT}/data/eval/general.tfrecord" --output_dir="${ROOT}/pretrain" \
    --do_train --do_eval --train_batch_size="${PRETRAIN_BATCH_SIZE}" \
    --num_train_steps="${PRETRAIN_STEPS}" --num_warmup_steps=100 --save_checkpoints_steps=1000 \
    --max_eval_steps=1000 --random_seed="${PRETRAIN_SEED}" --strategy=cpu "${OPTIMIZER[@]}"
  run "${PYTHON}" -m pretrain.training.learning_check --eval_results="${ROOT}/pretrain/eval_results.txt"
  echo "== [$(date +%H:%M:%S)] ${model}: export_hf, then import_hf (the 'downloaded' model)"
  run "${PYTHON}" -m pretrain.interop.export_hf --init_checkpoint="${ROOT}/pretrain" \
    --output_dir="${ROOT}/hf" --overwrite
  run "${PYTHON}" -m pretrain.interop.import_hf --model_dir="${ROOT}/hf" --output_dir="${ROOT}/released" \
    --overwrite
done
