#!/usr/bin/env bash
# One row of the README's reference experiment, end to end: pretraining data
# from LCQMC train text, pretraining, then LCQMC fine-tuning from random
# initialisation and from the pretrained model, for each seed.
# Run `bash scripts/lcqmc_experiment.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
RECIPES=(roberta albert span macbert)

LCQMC_DIR="${LCQMC_DIR:-${REPO_ROOT}/../shared/data/lcqmc}"
VOCAB="${VOCAB:-${REPO_ROOT}/../shared/data/vocab/bert_chinese_vocab.txt}"
RUNS="${RUNS:-${REPO_ROOT}/runs/lcqmc_experiment}"
SEEDS="${SEEDS:-12345 2}"
# The budget shared by every row of the README's table (change it for all rows, not one).
# About 20-24 minutes of pretraining and 8 per fine-tuning run on 2 CPU cores. The README's
# earlier RoBERTa-only run used 3000 / 500 steps and 64000 pairs (eval every 1000); 500
# steps stay on the unigram plateau (MLM accuracy 4.5%).
DUPE_FACTOR="${DUPE_FACTOR:-5}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-64}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-10}"
PRETRAIN_STEPS="${PRETRAIN_STEPS:-1000}"
PRETRAIN_WARMUP="${PRETRAIN_WARMUP:-100}"
PRETRAIN_BATCH="${PRETRAIN_BATCH:-64}"
PRETRAIN_LR="${PRETRAIN_LR:-5e-4}"
FINETUNE_EXAMPLES="${FINETUNE_EXAMPLES:-16000}"
FINETUNE_EPOCHS="${FINETUNE_EPOCHS:-1}"
FINETUNE_LR="${FINETUNE_LR:-1e-4}"
FINETUNE_EVAL_EVERY="${FINETUNE_EVAL_EVERY:-250}"
# MacBERT: a similar-words file, else one built from word vectors (word2vec text format).
SIMILAR_WORDS="${SIMILAR_WORDS:-}"
VECTORS="${VECTORS:-}"

usage() {
  cat <<EOF
Usage: bash scripts/lcqmc_experiment.sh RECIPE

Runs one row of the reference experiment (README, "Did pretraining help?"):
  1. LCQMC train text as documents           RUNS/docs.txt
  2. pretraining data for RECIPE              RUNS/RECIPE/data/
  3. pretraining                              RUNS/RECIPE/pretrain/
  4. fine-tuning from random initialisation   RUNS/baseline-CONFIG/seedS/  (shared by rows
     and from the pretrained model            RUNS/RECIPE/finetune/seedS/   of one architecture)
  5. the table of every finished row          RUNS/table.md
Finished stages are reused (pretraining resumes from its last checkpoint).

RECIPE:
  roberta   full-sentence packing, whole-word masking (jieba), BERT model
  albert    sentence-order prediction + n-gram masking, ALBERT model of the same width/depth
  span      SpanBERT: geometric whole-word spans + span boundary objective, BERT model
  macbert   MacBERT: n-grams replaced by similar words (SIMILAR_WORDS, or built from VECTORS)

Settings (environment variables) [defaults]:
  LCQMC_DIR          train.txt, dev.txt, test.txt        [${LCQMC_DIR}]
  VOCAB              vocab file                          [${VOCAB}]
  RUNS               output folder                       [${RUNS}]
  SEEDS              fine-tuning seeds                   [${SEEDS}]
  DUPE_FACTOR MAX_SEQ_LENGTH MAX_PREDICTIONS             [${DUPE_FACTOR} ${MAX_SEQ_LENGTH} ${MAX_PREDICTIONS}]
  PRETRAIN_STEPS PRETRAIN_WARMUP PRETRAIN_BATCH PRETRAIN_LR
                                                         [${PRETRAIN_STEPS} ${PRETRAIN_WARMUP} ${PRETRAIN_BATCH} ${PRETRAIN_LR}]
  FINETUNE_EXAMPLES FINETUNE_EPOCHS FINETUNE_LR FINETUNE_EVAL_EVERY
                                                         [${FINETUNE_EXAMPLES} ${FINETUNE_EPOCHS} ${FINETUNE_LR} ${FINETUNE_EVAL_EVERY}]
  SIMILAR_WORDS      macbert: similar-words TSV          [${SIMILAR_WORDS:-RUNS/similar_words.tsv}]
  VECTORS            macbert: word vectors to build it from (word2vec text format;
                     scripts/train_word_vectors.sh makes them from RUNS/docs.txt)
  PYTHON             interpreter                         [.venv/bin/python, else python3]
EOF
}

die() { echo "lcqmc_experiment.sh: error: $*" >&2; exit 2; }

[[ $# -eq 1 ]] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
RECIPE="$1"
[[ " ${RECIPES[*]} " == *" ${RECIPE} "* ]] || die "unknown RECIPE '${RECIPE}': choose one of ${RECIPES[*]}"

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
  else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "${PYTHON}" ]] || die "no Python found; run 'make setup' or set PYTHON="
export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

for split in train dev test; do
  [[ -f "${LCQMC_DIR}/${split}.txt" ]] || die "no ${split}.txt in LCQMC_DIR=${LCQMC_DIR} (see bash scripts/lcqmc_finetune.sh --help for the format)"
done
[[ -f "${VOCAB}" ]] || die "VOCAB=${VOCAB} not found"
mkdir -p "${RUNS}"
RUNS="$(cd "${RUNS}" && pwd)"

CONFIG="${REPO_ROOT}/configs/lcqmc_small_bert.json"
DATA_FLAGS=(--mode=roberta)
PRETRAIN_FLAGS=()
case "${RECIPE}" in
  albert) CONFIG="${REPO_ROOT}/configs/lcqmc_small_albert.json"; DATA_FLAGS=(--mode=albert) ;;
  span) DATA_FLAGS+=(--masking=span); PRETRAIN_FLAGS=(--span_boundary_objective) ;;
  macbert)
    SIMILAR_WORDS="${SIMILAR_WORDS:-${RUNS}/similar_words.tsv}"
    if [[ ! -f "${SIMILAR_WORDS}" ]]; then
      [[ -n "${VECTORS}" && -f "${VECTORS}" ]] || die "macbert needs SIMILAR_WORDS=FILE or VECTORS=FILE \
(word vectors, word2vec text format); bash scripts/train_word_vectors.sh trains them on ${RUNS}/docs.txt"
      "${PYTHON}" -m data_gen.build_similar_words --vectors="${VECTORS}" --output_file="${SIMILAR_WORDS}" \
        --vocab_file="${VOCAB}"
    fi
    DATA_FLAGS+=(--masking=macbert --similar_words_file="${SIMILAR_WORDS}") ;;
esac
ROW="${RUNS}/${RECIPE}"
BASELINE="${RUNS}/baseline-$(basename "${CONFIG}" .json)"
mkdir -p "${ROW}/data"
stage() { echo "== [$(date +%H:%M:%S)] ${RECIPE}: $*"; }

if [[ ! -f "${RUNS}/docs.txt" ]]; then
  stage "documents from ${LCQMC_DIR}/train.txt"
  "${PYTHON}" -m data_gen.lcqmc_to_docs --lcqmc_dir="${LCQMC_DIR}" --output_file="${RUNS}/docs.txt"
fi

LAST_SHARD="${ROW}/data/lcqmc-00003-of-00004"
if [[ ! -f "${LAST_SHARD}.meta.json" ]]; then
  stage "pretraining data"
  "${PYTHON}" -m data_gen.create_pretraining_data --input_file="${RUNS}/docs.txt" \
    --output_file="${ROW}/data/lcqmc" --num_output_shards=4 --vocab_file="${VOCAB}" \
    --max_seq_length="${MAX_SEQ_LENGTH}" --max_predictions_per_seq="${MAX_PREDICTIONS}" \
    --dupe_factor="${DUPE_FACTOR}" --noprogress "${DATA_FLAGS[@]}"
fi

stage "pretraining, ${PRETRAIN_STEPS} steps of ${PRETRAIN_BATCH}"
"${PYTHON}" -m pretrain.run_pretraining --bert_config_file="${CONFIG}" \
  --input_file="${ROW}/data/lcqmc-*" --output_dir="${ROW}/pretrain" --do_train --do_eval \
  --train_batch_size="${PRETRAIN_BATCH}" --eval_batch_size=64 --max_eval_steps=20 \
  --learning_rate="${PRETRAIN_LR}" --num_train_steps="${PRETRAIN_STEPS}" \
  --num_warmup_steps="${PRETRAIN_WARMUP}" --save_checkpoints_steps=500 \
  --strategy=cpu ${PRETRAIN_FLAGS[@]+"${PRETRAIN_FLAGS[@]}"} > "${ROW}/pretrain.log" 2>&1 \
  || { tail -n 5 "${ROW}/pretrain.log" >&2; die "pretraining failed; its log: ${ROW}/pretrain.log"; }
grep -E "\] step [0-9]+:" "${ROW}/pretrain.log" | tail -n 2 || true

FINETUNE_FLAGS=(--data_dir="${LCQMC_DIR}" --vocab_file="${VOCAB}" --max_seq_length=64
  --max_train_examples="${FINETUNE_EXAMPLES}" --num_train_epochs="${FINETUNE_EPOCHS}"
  --learning_rate="${FINETUNE_LR}" --eval_every_steps="${FINETUNE_EVAL_EVERY}" --strategy=cpu)
for seed in ${SEEDS}; do
  stage "fine-tuning from random initialisation, seed ${seed}"
  "${PYTHON}" -m finetune.compare "${FINETUNE_FLAGS[@]}" --random_seed="${seed}" \
    --bert_config_file="${CONFIG}" --output_dir="${BASELINE}/seed${seed}" --run="random init=" \
    | tail -n 4
  stage "fine-tuning after pretraining, seed ${seed}"
  "${PYTHON}" -m finetune.compare "${FINETUNE_FLAGS[@]}" --random_seed="${seed}" \
    --output_dir="${ROW}/finetune/seed${seed}" --run="${RECIPE}=${ROW}/pretrain" | tail -n 4
done

stage "table"
"${PYTHON}" -m finetune.experiment_table --runs_dir="${RUNS}" --output_file="${RUNS}/table.md"
