#!/usr/bin/env bash
# One row of the reference experiment (README, docs/experiments.md), end to end: pretraining data
# from LCQMC train text (RUNS/docs.txt, or RUNS/docs_sentences.txt for albert;
# RUNS/RECIPE/data/), pretraining
# (RUNS/RECIPE/pretrain/), then one finetune.compare of LCQMC fine-tuning from
# random initialisation and from the pretrained model over all SEEDS
# (RUNS/RECIPE/compare/), and the table of every finished row (RUNS/table.md).
# Run `bash scripts/lcqmc_experiment.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"

SCRIPT_NAME="lcqmc_experiment.sh"
source "${SCRIPT_DIR}/settings.sh"
choose_python
# The rows: one file each, experiments/recipes/RECIPE.json (experiments.recipe_files).
recipes() { "${PYTHON}" -m experiments.recipe_files "$@"; }
read -r -a RECIPES <<< "$(recipes --list)"

LCQMC_DIR="${LCQMC_DIR:-${REPO_ROOT}/../shared/data/lcqmc}"
VOCAB="${VOCAB:-${REPO_ROOT}/../shared/data/vocab/bert_chinese_vocab.txt}"
RUNS="${RUNS:-${REPO_ROOT}/runs/lcqmc_experiment}"
SEEDS="${SEEDS:-1,2,3}"
# The budget shared by every row of the README's table (change it for all rows, not one),
# but the pretraining steps: each recipe's (PRETRAIN_STEPS below; 1000, ELECTRA's 3000).
# About 20-24 minutes per 1000 pretraining steps and 8 per fine-tuning run on 2 CPU cores.
# The README's earlier RoBERTa-only run used 3000 / 500 steps and 64000 pairs (eval every 1000); 500
# steps stay on the unigram plateau (MLM accuracy 4.5%). MAX_SEQ_LENGTH is the length of
# the pretraining data and of fine-tuning.
DUPE_FACTOR="${DUPE_FACTOR:-5}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-64}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-10}"
PRETRAIN_BATCH_SIZE="${PRETRAIN_BATCH_SIZE:-64}"
PRETRAIN_SEED="${PRETRAIN_SEED:-1}"
# Settings with a default per recipe (recipe_defaults): the caller's value, empty when unset.
# PRETRAIN_STEPS stays first: experiment_settings.txt writes it in its own (older) place.
RECIPE_SETTINGS=(PRETRAIN_STEPS PRETRAIN_OPTIMIZER PRETRAIN_LEARNING_RATE PRETRAIN_BIAS_CORRECTION
  PRETRAIN_WARMUP_STEPS)
for setting in "${RECIPE_SETTINGS[@]}"; do declare "USER_${setting}=${!setting:-}"; done
FINETUNE_MAX_TRAIN_EXAMPLES="${FINETUNE_MAX_TRAIN_EXAMPLES:-16000}"
FINETUNE_EPOCHS="${FINETUNE_EPOCHS:-1}"
FINETUNE_LEARNING_RATE="${FINETUNE_LEARNING_RATE:-1e-4}"
FINETUNE_EVAL_EVERY="${FINETUNE_EVAL_EVERY:-250}"
# MacBERT: a similar-words file, else one built from word vectors (word2vec text format).
SIMILAR_WORDS="${SIMILAR_WORDS:-}"
# Another model config than the recipe's (e.g. a smaller model for a quick try); empty: the recipe's.
MODEL_CONFIG="${MODEL_CONFIG:-}"
VECTORS="${VECTORS:-}"
DRY_RUN="${DRY_RUN:-0}"
FINETUNE_NOT_LEARNED="${FINETUNE_NOT_LEARNED:-0}"

# A recipe's file as RECIPE_* and DEFAULT_PRETRAIN_* (its pretraining defaults).
recipe_defaults() { eval "$(recipes --recipe="$1")"; }

# A RECIPE_SETTINGS value as --help shows it: the caller's, else "per recipe".
shown() { local user="USER_$1"; echo "${!user:-per recipe, below}"; }

usage() {
  cat <<EOF
Usage: bash scripts/lcqmc_experiment.sh [--dry_run] RECIPE

Runs one row of the reference experiment (docs/experiments.md):
  1. LCQMC train text as documents           RUNS/docs.txt (a paraphrase pair is one document);
     albert: RUNS/docs_sentences.txt (every question alone: two paraphrases have no order
     for sentence-order prediction to learn)
  2. pretraining data for RECIPE              RUNS/RECIPE/data/
  3. pretraining                              RUNS/RECIPE/pretrain/
  4. fine-tuning from random initialisation   RUNS/RECIPE/compare/  (one finetune.compare
     and from the pretrained model, per seed    over SEEDS: results.md, results.json)
  5. the table of every finished row          RUNS/table.md
Finished stages are reused (pretraining resumes from its last checkpoint, or is skipped once
evaluated at PRETRAIN_STEPS; compare collects finished fine-tuning runs whose settings and
starting point are unchanged, and the random-init runs of another row of RUNS with the same
model). A stage whose recorded inputs or settings differ from this run's stops the script:
move its folder away.

RECIPE (experiments/recipes/RECIPE.json: the row's label, model, data and pretraining
flags and defaults, and why; a new row is a new file):
$(recipes --usage)

Settings (environment variables) [defaults]:
  LCQMC_DIR          train.txt, dev.txt, test.txt        [${LCQMC_DIR}]
  VOCAB              vocab file                          [${VOCAB}]
  RUNS               output folder                       [${RUNS}]
  SEEDS              fine-tuning seeds, comma-separated (3+ for a verdict) [${SEEDS}]
  DUPE_FACTOR        masking passes over the text        [${DUPE_FACTOR}]
  MAX_SEQ_LENGTH     tokens per sequence, pretraining data and fine-tuning [${MAX_SEQ_LENGTH}]
  MAX_PREDICTIONS    masked positions per sequence       [${MAX_PREDICTIONS}]
  PRETRAIN_STEPS     pretraining updates                 [$(shown PRETRAIN_STEPS)]
  PRETRAIN_WARMUP_STEPS   pretraining warmup updates     [$(shown PRETRAIN_WARMUP_STEPS)]
  PRETRAIN_BATCH_SIZE     pretraining batch              [${PRETRAIN_BATCH_SIZE}]
  PRETRAIN_LEARNING_RATE  pretraining peak learning rate [$(shown PRETRAIN_LEARNING_RATE)]
  PRETRAIN_OPTIMIZER      pretraining optimizer, adamw or lamb [$(shown PRETRAIN_OPTIMIZER)]
  PRETRAIN_BIAS_CORRECTION  1: Adam bias correction in pretraining, 0: none
                          [$(shown PRETRAIN_BIAS_CORRECTION)]
  PRETRAIN_SEED      pretraining seed (graph and input order) [${PRETRAIN_SEED}]
  FINETUNE_MAX_TRAIN_EXAMPLES  first N train pairs       [${FINETUNE_MAX_TRAIN_EXAMPLES}]
  FINETUNE_EPOCHS    fine-tuning epochs                  [${FINETUNE_EPOCHS}]
  FINETUNE_LEARNING_RATE  fine-tuning peak learning rate [${FINETUNE_LEARNING_RATE}]
  FINETUNE_EVAL_EVERY     dev evaluation interval (steps) [${FINETUNE_EVAL_EVERY}]
  MODEL_CONFIG       model config JSON instead of the recipe's (the table's model
                     column names what was trained) [${MODEL_CONFIG:-per recipe, lcqmc_small_*}]
  SIMILAR_WORDS      macbert: similar-words TSV          [${SIMILAR_WORDS:-RUNS/similar_words.tsv}]
  VECTORS            macbert: word vectors to build it from (word2vec text format;
                     scripts/train_word_vectors.sh makes them from RUNS/docs.txt)
  FINETUNE_NOT_LEARNED=1  fine-tune even a checkpoint whose MLM has not left its unigram
                     plateau (pretrain.training.learning_check; the row is then marked "not learned")
  PYTHON             interpreter                         [.venv/bin/python, else python3]
  DRY_RUN=1          (or --dry_run) print the commands of every stage, run nothing
EOF
}

parse_script_args "$@"
[[ ${#POSITIONAL[@]} -eq 1 ]] || { usage >&2; exit 2; }
RECIPE="${POSITIONAL[0]}"
[[ " ${RECIPES[*]} " == *" ${RECIPE} "* ]] || die "unknown RECIPE '${RECIPE}': choose one of ${RECIPES[*]}"
[[ "${SEEDS}" =~ ^[0-9]+( *, *[0-9]+)*$ ]] || die "SEEDS must be integers separated by commas, not '${SEEDS}'"
SEEDS="${SEEDS// /}"
[[ -z "$(tr ',' '\n' <<< "${SEEDS}" | sort -n | uniq -d)" ]] \
  || die "SEEDS=${SEEDS}: give each seed once"
# The recipe's defaults fill what the caller left unset.
recipe_defaults "${RECIPE}"
for setting in "${RECIPE_SETTINGS[@]}"; do
  user="USER_${setting}"; default="DEFAULT_${setting}"
  declare "${setting}=${!user:-${!default}}"
done
[[ "${PRETRAIN_OPTIMIZER}" == adamw || "${PRETRAIN_OPTIMIZER}" == lamb ]] \
  || die "PRETRAIN_OPTIMIZER must be adamw or lamb, not '${PRETRAIN_OPTIMIZER}'"
[[ "${PRETRAIN_BIAS_CORRECTION}" == 0 || "${PRETRAIN_BIAS_CORRECTION}" == 1 ]] \
  || die "PRETRAIN_BIAS_CORRECTION must be 0 (no Adam bias correction) or 1, not \
'${PRETRAIN_BIAS_CORRECTION}'"
[[ "${PRETRAIN_SEED}" =~ ^[0-9]+$ ]] \
  || die "PRETRAIN_SEED must be a non-negative integer, not '${PRETRAIN_SEED}'"


for split in train dev test; do
  [[ -f "${LCQMC_DIR}/${split}.txt" ]] || die "no ${split}.txt in LCQMC_DIR=${LCQMC_DIR} (see bash scripts/lcqmc_finetune.sh --help for the format)"
done
[[ -f "${VOCAB}" ]] || die "VOCAB=${VOCAB} not found"
[[ -z "${MODEL_CONFIG}" || -f "${MODEL_CONFIG}" ]] || die "MODEL_CONFIG=${MODEL_CONFIG} not found"
[[ -z "${MODEL_CONFIG}" || "${MODEL_CONFIG}" = /* ]] || MODEL_CONFIG="${PWD}/${MODEL_CONFIG}"
# Absolute paths (relative ones are taken from the caller's directory).
[[ "${LCQMC_DIR}" = /* ]] || LCQMC_DIR="${PWD}/${LCQMC_DIR}"
[[ "${VOCAB}" = /* ]] || VOCAB="${PWD}/${VOCAB}"
[[ "${RUNS}" = /* ]] || RUNS="${PWD}/${RUNS}"
if [[ "${DRY_RUN}" != "1" ]]; then mkdir -p "${RUNS}"; RUNS="$(cd "${RUNS}" && pwd)"; fi

show() { printf '%q ' "$@"; printf '\n'; }
run() {  # runs a command, or with --dry_run prints it (shell-quoted) instead
  if [[ "${DRY_RUN}" == "1" ]]; then show "$@"; else "$@"; fi
}
stage() {
  if [[ "${DRY_RUN}" == "1" ]]; then echo "# ${RECIPE}: $*"; else echo "== [$(date +%H:%M:%S)] ${RECIPE}: $*"; fi
}

CONFIG="${RECIPE_CONFIG}"
DOCS="${RUNS}/docs.txt"
DOCS_FLAGS=()
if [[ "${RECIPE_DOCUMENTS}" == sentences ]]; then  # e.g. SOP: segments whose order means something
  DOCS="${RUNS}/docs_sentences.txt"; DOCS_FLAGS=(--noparaphrase_documents)
fi
DATA_FLAGS=("${RECIPE_DATA_FLAGS[@]}")
PRETRAIN_FLAGS=()
if [[ "${PRETRAIN_BIAS_CORRECTION}" == 0 ]]; then PRETRAIN_FLAGS+=(--noadam_bias_correction)
else PRETRAIN_FLAGS+=(--adam_bias_correction); fi
PRETRAIN_FLAGS+=(${RECIPE_PRETRAIN_FLAGS[@]+"${RECIPE_PRETRAIN_FLAGS[@]}"})
if [[ "${RECIPE_SIMILAR_WORDS}" == 1 ]]; then
  SIMILAR_WORDS="${SIMILAR_WORDS:-${RUNS}/similar_words.tsv}"
  if [[ ! -f "${SIMILAR_WORDS}" ]]; then
    [[ -n "${VECTORS}" && -f "${VECTORS}" ]] || die "${RECIPE} needs SIMILAR_WORDS=FILE or VECTORS=FILE \
(word vectors, word2vec text format); bash scripts/train_word_vectors.sh trains them on ${RUNS}/docs.txt"
    stage "similar words from ${VECTORS}"
    run "${PYTHON}" -m data_gen.tools.build_similar_words --vectors="${VECTORS}" \
      --output_file="${SIMILAR_WORDS}" --vocab_file="${VOCAB}"
  fi
  DATA_FLAGS+=(--similar_words_file="${SIMILAR_WORDS}")
fi
[[ -z "${MODEL_CONFIG}" ]] || CONFIG="${MODEL_CONFIG}"
ROW="${RUNS}/${RECIPE}"
[[ "${DRY_RUN}" == "1" ]] || mkdir -p "${ROW}/data"

if [[ ! -f "${DOCS}" ]]; then
  stage "documents from ${LCQMC_DIR}/train.txt"
  run "${PYTHON}" -m data_gen.tools.lcqmc_to_docs --lcqmc_dir="${LCQMC_DIR}" --output_file="${DOCS}" \
    ${DOCS_FLAGS[@]+"${DOCS_FLAGS[@]}"}
fi

LAST_SHARD="${ROW}/data/lcqmc-00003-of-00004"
if [[ -f "${LAST_SHARD}.meta.json" ]]; then
  # Data made by an earlier version of the recipe from other documents is not reused.
  grep -q "\"input_file\": \".*/$(basename "${DOCS}")\"" "${LAST_SHARD}.meta.json" \
    || die "${ROW}/data was made from other documents than ${DOCS} (its sidecar: \
${LAST_SHARD}.meta.json); move ${ROW} away to rebuild this row"
else
  stage "pretraining data"
  run "${PYTHON}" -m data_gen.create_pretraining_data --input_file="${DOCS}" \
    --output_file="${ROW}/data/lcqmc" --num_output_shards=4 --vocab_file="${VOCAB}" \
    --max_seq_length="${MAX_SEQ_LENGTH}" --max_predictions_per_seq="${MAX_PREDICTIONS}" \
    --dupe_factor="${DUPE_FACTOR}" --noprogress "${DATA_FLAGS[@]}"
fi

stage "pretraining, ${PRETRAIN_STEPS} steps of ${PRETRAIN_BATCH_SIZE} \
(${PRETRAIN_OPTIMIZER}, seed ${PRETRAIN_SEED})"
PRETRAIN_COMMAND=("${PYTHON}" -m pretrain.run_pretraining --bert_config_file="${CONFIG}"
  --input_file="${ROW}/data/lcqmc-*" --output_dir="${ROW}/pretrain" --do_train --do_eval
  --train_batch_size="${PRETRAIN_BATCH_SIZE}" --eval_batch_size=64 --max_eval_steps=20
  --learning_rate="${PRETRAIN_LEARNING_RATE}" --num_train_steps="${PRETRAIN_STEPS}"
  --num_warmup_steps="${PRETRAIN_WARMUP_STEPS}" --save_checkpoints_steps=500
  --optimizer="${PRETRAIN_OPTIMIZER}" --random_seed="${PRETRAIN_SEED}"
  --strategy=cpu ${PRETRAIN_FLAGS[@]+"${PRETRAIN_FLAGS[@]}"})
# The settings the checkpoints were trained with; a rerun with others would resume them.
SETTINGS_FILE="${ROW}/pretrain/experiment_settings.txt"
SETTINGS="$(printf '%s\n' "CONFIG=${CONFIG}" "DOCS=${DOCS}" "PRETRAIN_STEPS=${PRETRAIN_STEPS}" \
  "PRETRAIN_BATCH_SIZE=${PRETRAIN_BATCH_SIZE}" "PRETRAIN_SEED=${PRETRAIN_SEED}" \
  "$(for setting in "${RECIPE_SETTINGS[@]:1}"; do echo "${setting}=${!setting}"; done)")"
if [[ "${DRY_RUN}" == "1" ]]; then
  show "${PRETRAIN_COMMAND[@]}"
else
  if [[ -f "${SETTINGS_FILE}" ]]; then
    [[ "$(cat "${SETTINGS_FILE}")" == "${SETTINGS}" ]] || die "${ROW}/pretrain was trained with \
other settings: $(diff <(cat "${SETTINGS_FILE}") <(echo "${SETTINGS}") | grep '^[<>]' \
| tr '\n' ' ')(< before, > now); move ${ROW}/pretrain and ${ROW}/compare away to retrain"
  elif compgen -G "${ROW}/pretrain/model.ckpt-*.index" > /dev/null; then
    echo "lcqmc_experiment.sh: warning: ${ROW}/pretrain has no ${SETTINGS_FILE##*/} (an older \
run): resuming it without checking that it was trained with these settings" >&2
  fi
  if [[ -f "${SETTINGS_FILE}" ]] \
      && grep -qx "global_step = ${PRETRAIN_STEPS}" "${ROW}/pretrain/eval_results.txt" 2>/dev/null
  then
    echo "pretraining finished earlier with these settings (${ROW}/pretrain/eval_results.txt)"
  else
    mkdir -p "${ROW}/pretrain"
    [[ -f "${SETTINGS_FILE}" ]] || echo "${SETTINGS}" > "${SETTINGS_FILE}"
    "${PRETRAIN_COMMAND[@]}" > "${ROW}/pretrain.log" 2>&1 || { tail -n 5 "${ROW}/pretrain.log" >&2
      die "pretraining failed; its log: ${ROW}/pretrain.log"; }
    grep -E "\] step [0-9]+:" "${ROW}/pretrain.log" | tail -n 2 || true
  fi
fi
# A checkpoint still on the unigram plateau (or an ELECTRA discriminator no better than
# always "original") is no start to fine-tune: its fine-tuning would not be a result
# (pretrain.training.learning_check exits 3 then).
CHECK_COMMAND=("${PYTHON}" -m pretrain.training.learning_check
  --eval_results="${ROW}/pretrain/eval_results.txt")
if [[ "${DRY_RUN}" == "1" ]]; then
  show "${CHECK_COMMAND[@]}"
else
  check_status=0
  "${CHECK_COMMAND[@]}" || check_status=$?
  if [[ "${check_status}" == 3 && "${FINETUNE_NOT_LEARNED}" != "1" ]]; then
    die "the pretrained checkpoint has not learned (above); fine-tuning from it would not be \
a result. Retrain (other PRETRAIN_ settings or more PRETRAIN_STEPS; move ${ROW}/pretrain away \
first), or set FINETUNE_NOT_LEARNED=1 to fine-tune it anyway"
  elif [[ "${check_status}" != 0 && "${check_status}" != 3 ]]; then
    die "could not check the pretraining eval ${ROW}/pretrain/eval_results.txt (above)"
  fi
fi

FINETUNE_FLAGS=(--task=pair --data_dir="${LCQMC_DIR}" --vocab_file="${VOCAB}"
  --max_seq_length="${MAX_SEQ_LENGTH}" --max_train_examples="${FINETUNE_MAX_TRAIN_EXAMPLES}"
  --num_train_epochs="${FINETUNE_EPOCHS}" --learning_rate="${FINETUNE_LEARNING_RATE}"
  --eval_every_steps="${FINETUNE_EVAL_EVERY}" --strategy=cpu)
# One comparison over every seed; the random-init run trains the config beside the
# pretrained checkpoint (finetune.compare), so both starting points are the same model.
stage "fine-tuning from random initialisation and after pretraining, seeds ${SEEDS}"
COMPARE_COMMAND=("${PYTHON}" -m finetune.compare "${FINETUNE_FLAGS[@]}"
  --output_dir="${ROW}/compare" --seeds="${SEEDS}"
  --run="random init=" --run="${RECIPE}=${ROW}/pretrain")
# Rows of one architecture share their random-init baseline: compare collects it from
# another row's comparison when the model, vocab, settings and seed are the same.
OTHER_ROWS=()
for other in "${RUNS}"/*/compare; do
  [[ -d "${other}/runs" && "${other}" != "${ROW}/compare" ]] && OTHER_ROWS+=("${other}")
done
[[ ${#OTHER_ROWS[@]} == 0 ]] || COMPARE_COMMAND+=(--reuse_from="$(IFS=,; echo "${OTHER_ROWS[*]}")")
if [[ "${DRY_RUN}" == "1" ]]; then
  show "${COMPARE_COMMAND[@]}"
else
  "${COMPARE_COMMAND[@]}" > "${ROW}/compare.log" 2>&1 \
    || { tail -n 5 "${ROW}/compare.log" >&2; die "fine-tuning failed; its log: ${ROW}/compare.log"; }
  grep -E "^\|" "${ROW}/compare/results.md" || true  # its two tables
fi

stage "table"
run "${PYTHON}" -m experiments.from_scratch_table --runs_dir="${RUNS}" --output_file="${RUNS}/table.md"
