#!/usr/bin/env bash
# Did continuing a released model's pretraining on a task's text help on that task? One row,
# end to end: the task's training text (labels dropped) -> held-out pretraining data with the
# general model's vocab -> continued pretraining from the general model (held-out loss and
# the general text's, start and end) -> finetune.compare of random init, the general model
# and the continued one over SEEDS. Run `bash scripts/continued_experiment.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
SCRIPT_NAME="continued_experiment.sh"
source "${SCRIPT_DIR}/settings.sh"
SHARED="${REPO_ROOT}/../shared/data"

GENERAL_MODELS="${GENERAL_MODELS:-${REPO_ROOT}/runs/general_models}"
RUNS="${RUNS:-${REPO_ROOT}/runs/continued}"
SEEDS="${SEEDS:-1,2,3}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-64}"
MAX_PREDICTIONS="${MAX_PREDICTIONS:-10}"
DUPE_FACTOR="${DUPE_FACTOR:-5}"
EVAL_SHARE="${EVAL_SHARE:-0.05}"
# The continuing recipe: the best of the sweep on the LCQMC RoBERTa row (2e-5 / 1e-4 / 5e-4 at 500
# and 1000 steps), judged at 40,000 pairs, where the general model leaves chance; the README's
# rows were continued with the former default, 500 steps (docs/experiments.md, "Continued
# pretraining, measured").
CONTINUE_LEARNING_RATE="${CONTINUE_LEARNING_RATE:-1e-4}"
CONTINUE_STEPS="${CONTINUE_STEPS:-1000}"
CONTINUE_BATCH_SIZE="${CONTINUE_BATCH_SIZE:-64}"
CONTINUE_SEED="${CONTINUE_SEED:-1}"
# The sweep (third argument "sweep"): every learning rate at every step count.
SWEEP_LEARNING_RATES="${SWEEP_LEARNING_RATES:-2e-5,1e-4,5e-4}"
SWEEP_STEPS="${SWEEP_STEPS:-500,1000}"
# Or the points themselves, RATExSTEPS (e.g. a cross: every rate at one step count and every
# step count at one rate, cheaper than the grid).
SWEEP_POINTS="${SWEEP_POINTS:-}"
# Random initialisation is there for scale only; its finished runs can come from elsewhere.
RANDOM_INIT="${RANDOM_INIT:-1}"
# Fine-tuning pairs/examples: empty = the task's budget below; another number fine-tunes on
# that many (dev evaluated as often per run) into a comparison folder of its own.
FINETUNE_MAX_TRAIN_EXAMPLES="${FINETUNE_MAX_TRAIN_EXAMPLES:-}"
REUSE_FROM="${REUSE_FROM:-}"
DRY_RUN="${DRY_RUN:-0}"

usage() {
  cat <<EOF
Usage: bash scripts/continued_experiment.sh [--dry_run] TASK MODEL [sweep]

TASK (its training split's text is continued on; dev and test are never read before
fine-tuning):
  lcqmc         LCQMC_DIR; pairs as data_gen.tools.lcqmc_to_docs writes them (the seed's rows);
                fine-tuned on 16,000 pairs for one epoch, learning rate 1e-4, full dev and test
  chnsenticorp  CHNSENTICORP_DIR; each review one document (finetune.task_text); the first
                4,800 reviews for 2 epochs, 1e-4, length 128
  msra          MSRA_DIR (train.txt, test.txt; every 10th training sentence becomes dev, as in
                the README); each sentence one document; 20,000 sentences, one epoch, 1.5e-4
MODEL (a general model of scripts/make_general_models.sh, in GENERAL_MODELS):
  roberta       the BERT L4 H256 of whole-word masking; continued on RoBERTa data
  albert        the ALBERT of the same width and depth; continued on ALBERT data (SOP + n-grams)
Writes RUNS/TASK/MODEL/{docs.txt, data/ (data/eval/: held out), continued/ (eval_results.txt:
init_* = the general model on the same batches, general/* = its own held-out general text),
compare/ (results.md, results.json); with FINETUNE_MAX_TRAIN_EXAMPLES=N other than the task's:
compare_trainN/}. A rerun reuses finished stages and resumes a killed continuation; continued/
holding another recipe's run (CONTINUE_* changed, or made before the default became 1000 steps)
is refused: set CONTINUE_* to its recipe (e.g. CONTINUE_STEPS=500), move it or give another RUNS.
With "sweep" (after the row has run): the general model continued at every point of
SWEEP_LEARNING_RATES x SWEEP_STEPS, or of SWEEP_POINTS (RUNS/TASK/MODEL/sweep/
lr<RATE>_steps<N>/; the row's own run stands for its recipe's point), one finetune.compare of
the general model against every point (sweep/compare/, or sweep/compare_trainN/; the row's
finished fine-tunings of that budget reused) and sweep/table.md (table_trainN.md): Δ of each
point against the general model beside its held-out MLM, start and end.

Settings (environment variables) [defaults]:
  GENERAL_MODELS     folder of make_general_models.sh   [${GENERAL_MODELS}]
  RUNS               output folder                      [${RUNS}]
  SEEDS              fine-tuning seeds (3+ for a verdict) [${SEEDS}]
  CONTINUE_LEARNING_RATE  AdamW peak rate, bias-corrected [${CONTINUE_LEARNING_RATE}]
  CONTINUE_STEPS     continued-pretraining updates      [${CONTINUE_STEPS}]
  CONTINUE_BATCH_SIZE  sequences per update             [${CONTINUE_BATCH_SIZE}]
  CONTINUE_SEED      pretraining seed                   [${CONTINUE_SEED}]
  SWEEP_LEARNING_RATES  the sweep's peak rates          [${SWEEP_LEARNING_RATES}]
  SWEEP_STEPS        the sweep's step counts            [${SWEEP_STEPS}]
  SWEEP_POINTS       instead of the grid: comma-separated RATExSTEPS points, e.g.
                     2e-5x500,1e-4x500,5e-4x500,1e-4x1000   [${SWEEP_POINTS}]
  FINETUNE_MAX_TRAIN_EXAMPLES  fine-tune on the first N training examples instead of the
                     task's budget (above), e.g. 40000 on LCQMC when the general row stays
                     near chance; the dev interval scales with N  [the task's]
  RANDOM_INIT        1: fine-tune random init too (scale); 0: leave it out [${RANDOM_INIT}]
  REUSE_FROM         comma-separated finetune.compare output folders whose finished runs
                     of the same model, vocab, settings and seed are collected, not
                     retrained (e.g. lcqmc_experiment.sh's ROW/compare: its random init) [${REUSE_FROM}]
  MAX_SEQ_LENGTH     pretraining data length            [${MAX_SEQ_LENGTH}]
  MAX_PREDICTIONS    masked positions per sequence      [${MAX_PREDICTIONS}]
  DUPE_FACTOR        masking passes over the task text  [${DUPE_FACTOR}]
  EVAL_SHARE         documents held out for eval        [${EVAL_SHARE}]
  LCQMC_DIR, CHNSENTICORP_DIR, MSRA_DIR  the tasks' data [../shared/data/...]
  PYTHON             interpreter                        [.venv/bin/python, else python3]
EOF
}

parse_script_args "$@"
[[ ${#POSITIONAL[@]} -eq 2 || ${#POSITIONAL[@]} -eq 3 ]] || { usage >&2; exit 2; }
TASK="${POSITIONAL[0]}"; MODEL="${POSITIONAL[1]}"; STAGE="${POSITIONAL[2]:-row}"
[[ "${RANDOM_INIT}" == 0 || "${RANDOM_INIT}" == 1 ]] || die "RANDOM_INIT=${RANDOM_INIT}: give 1 \
(fine-tune random initialisation too) or 0 (leave it out)"
# Whether folder $1 is a finetune.compare output: its own runs/, or only a results.json naming
# the runs it collected from elsewhere (finetune.compare --reuse_from follows it to them).
is_comparison() { [[ -d "$1/runs" || -f "$1/results.json" ]]; }
# Checked before the continued pretraining, not by finetune.compare after it.
if [[ "${DRY_RUN}" != "1" ]]; then
  IFS=, read -r -a REUSE_CHECK <<< "${REUSE_FROM}"
  for dir in "${REUSE_CHECK[@]}"; do
    is_comparison "${dir}" || die "REUSE_FROM: ${dir} has no runs/ \
folder or results.json (give the output folder of an earlier finetune.compare, e.g. \
RUNS/roberta/compare of lcqmc_experiment.sh)"
  done
fi
[[ "${STAGE}" == row || "${STAGE}" == sweep ]] || die "unknown third argument '${STAGE}': \
give sweep, or nothing for the row"
# The sweep's points as RATExSTEPS, checked before anything runs (a row ignores them).
SWEEP=()
if [[ "${STAGE}" == row ]]; then
  :
elif [[ -n "${SWEEP_POINTS}" ]]; then
  IFS=, read -r -a SWEEP <<< "${SWEEP_POINTS}"
else
  IFS=, read -r -a RATES <<< "${SWEEP_LEARNING_RATES}"
  IFS=, read -r -a STEP_COUNTS <<< "${SWEEP_STEPS}"
  for steps in "${STEP_COUNTS[@]}"; do
    for rate in "${RATES[@]}"; do SWEEP+=("${rate}x${steps}"); done
  done
fi
SWEEP_POINT_FORMAT='^([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)x([1-9][0-9]*)$'
for point in "${SWEEP[@]}"; do
  [[ "${point}" =~ ${SWEEP_POINT_FORMAT} ]] || die "sweep point '${point}' (of SWEEP_POINTS, \
or SWEEP_LEARNING_RATES x SWEEP_STEPS) is not RATExSTEPS: give e.g. 1e-4x500"
done
[[ -z "${FINETUNE_MAX_TRAIN_EXAMPLES}" || "${FINETUNE_MAX_TRAIN_EXAMPLES}" =~ ^[1-9][0-9]*$ ]] \
  || die "FINETUNE_MAX_TRAIN_EXAMPLES=${FINETUNE_MAX_TRAIN_EXAMPLES}: give a number of training \
examples (e.g. 40000), or leave it empty for the task's budget"
case "${MODEL}" in
  roberta) GENERAL="${GENERAL_MODELS}/bert"; MODE=roberta ;;
  albert) GENERAL="${GENERAL_MODELS}/albert"; MODE=albert ;;
  *) die "unknown MODEL '${MODEL}': choose roberta or albert" ;;
esac
[[ -f "${GENERAL}/released/vocab.txt" ]] || die "no general model at ${GENERAL}/released: run \
MODELS=${GENERAL##*/} bash scripts/make_general_models.sh first"
choose_python
stage() { echo "== [$(date +%H:%M:%S)] ${TASK}/${MODEL}: $*"; }

ROW="${RUNS}/${TASK}/${MODEL}"
[[ "${DRY_RUN}" == "1" ]] || mkdir -p "${ROW}"
DOCS="${ROW}/docs.txt"
case "${TASK}" in
  lcqmc)
    DATA_DIR="${LCQMC_DIR:-${SHARED}/lcqmc}"
    DOCS_COMMAND=(-m data_gen.tools.lcqmc_to_docs --lcqmc_dir="${DATA_DIR}" --output_file="${DOCS}")
    [[ "${MODEL}" == albert ]] && DOCS_COMMAND+=(--noparaphrase_documents)
    TASK_EXAMPLES=16000; TASK_EVAL_EVERY=250
    FINETUNE=(--task=pair --max_seq_length="${MAX_SEQ_LENGTH}" --num_train_epochs=1
              --learning_rate=1e-4) ;;
  chnsenticorp)
    DATA_DIR="${CHNSENTICORP_DIR:-${SHARED}/chnsenticorp}"
    DOCS_COMMAND=(-m finetune.task_text --task=classification
                  --input_file="${DATA_DIR}/train.tsv" --output_file="${DOCS}")
    TASK_EXAMPLES=4800; TASK_EVAL_EVERY=100
    FINETUNE=(--task=classification --max_seq_length=128 --num_train_epochs=2
              --learning_rate=1e-4) ;;
  msra)
    SOURCE="${MSRA_DIR:-${SHARED}/msra_ner}"
    DATA_DIR="${RUNS}/msra_split"
    if [[ "${DRY_RUN}" != "1" && ! -f "${DATA_DIR}/test.txt" ]]; then
      mkdir -p "${DATA_DIR}"
      "${PYTHON}" - "${SOURCE}" "${DATA_DIR}" <<'PY'
import sys
source, target = sys.argv[1], sys.argv[2]
text = open(f"{source}/train.txt", encoding="utf-8").read().replace("\r\n", "\n")
sents = [s for s in text.split("\n\n") if s.strip()]
for name, keep in (("dev", lambda i: i % 10 == 9), ("train", lambda i: i % 10 != 9)):
    with open(f"{target}/{name}.txt", "w", encoding="utf-8") as out:
        out.write("\n\n".join(s for i, s in enumerate(sents) if keep(i)) + "\n")
with open(f"{target}/test.txt", "w", encoding="utf-8") as out:
    out.write(open(f"{source}/test.txt", encoding="utf-8").read())
PY
    fi
    DOCS_COMMAND=(-m finetune.task_text --task=ner --input_file="${DATA_DIR}/train.txt"
                  --output_file="${DOCS}")
    TASK_EXAMPLES=20000; TASK_EVAL_EVERY=146
    FINETUNE=(--task=ner --max_seq_length="${MAX_SEQ_LENGTH}" --max_dev_examples=2000
              --num_train_epochs=1 --learning_rate=1.5e-4) ;;
  *) die "unknown TASK '${TASK}': choose lcqmc, chnsenticorp or msra" ;;
esac
# The fine-tuning budget; another than the task's has its own comparison folder, so the
# task's finished fine-tunings are never retrained in place.
EXAMPLES="${FINETUNE_MAX_TRAIN_EXAMPLES:-${TASK_EXAMPLES}}"
COMPARE_NAME=compare; SWEEP_TABLE=table.md
if [[ "${EXAMPLES}" != "${TASK_EXAMPLES}" ]]; then
  COMPARE_NAME="compare_train${EXAMPLES}"; SWEEP_TABLE="table_train${EXAMPLES}.md"
fi
EVAL_EVERY=$(( (TASK_EVAL_EVERY * EXAMPLES + TASK_EXAMPLES / 2) / TASK_EXAMPLES ))
(( EVAL_EVERY > 0 )) || EVAL_EVERY=1
FINETUNE+=(--max_train_examples="${EXAMPLES}" --eval_every_steps="${EVAL_EVERY}")

if [[ ! -f "${DOCS}" ]]; then
  stage "the task's training text, labels dropped"
  run "${PYTHON}" "${DOCS_COMMAND[@]}"
fi
if [[ ! -f "${ROW}/data/eval/task.tfrecord.meta.json" ]]; then
  stage "pretraining data with the general model's vocab (${EVAL_SHARE} held out)"
  run "${PYTHON}" -m data_gen.create_pretraining_data --input_file="${DOCS}" \
    --output_file="${ROW}/data/task.tfrecord" --vocab_file="${GENERAL}/released/vocab.txt" \
    --mode="${MODE}" --max_seq_length="${MAX_SEQ_LENGTH}" \
    --max_predictions_per_seq="${MAX_PREDICTIONS}" --dupe_factor="${DUPE_FACTOR}" \
    --eval_share="${EVAL_SHARE}" --random_seed="${CONTINUE_SEED}"
fi
# Continues the general model with one recipe into $1 (learning rate $2, $3 steps), unless a
# finished run of that recipe is there; its recipe is recorded beside the checkpoint when the
# run starts (continue_recipe.json), so a sweep can tell which point the row's own run is, a
# killed run of the recipe resumes, and a folder holding another recipe's run is refused
# (run_pretraining would resume that run's checkpoint under the new schedule).
recipe_json() {
  printf '{"learning_rate": "%s", "steps": %s, "batch_size": %s, "seed": %s}' "$1" "$2" \
    "${CONTINUE_BATCH_SIZE}" "${CONTINUE_SEED}"
}
# The recipe recorded in folder $1 (empty when none is).
recorded_recipe() { cat "$1/continue_recipe.json" 2>/dev/null || true; }
# Whether folder $1 holds a finished continued run of learning rate $2 and $3 steps.
finished_recipe() {
  [[ -f "$1/eval_results.txt" && "$(recorded_recipe "$1")" == "$(recipe_json "$2" "$3")" ]]
}
continue_general() {
  local out="$1" rate="$2" steps="$3"
  local recipe; recipe="$(recipe_json "${rate}" "${steps}")"
  if finished_recipe "${out}" "${rate}" "${steps}"; then
    stage "continued ${steps} steps at ${rate}: finished in ${out}"
    return
  fi
  local recorded; recorded="$(recorded_recipe "${out}")"
  [[ -z "${recorded}" || "${recorded}" == "${recipe}" ]] || die "${out} holds a run continued \
with ${recorded}, not ${recipe}: rerunning into it would resume that run; set CONTINUE_* to its \
recipe to use it, move the folder away or give another RUNS"
  if [[ "${DRY_RUN}" != "1" ]]; then
    mkdir -p "${out}"
    echo "${recipe}" > "${out}/continue_recipe.json.tmp"
    mv "${out}/continue_recipe.json.tmp" "${out}/continue_recipe.json"
  fi
  stage "continuing from ${GENERAL}/released: ${steps} steps at ${rate} into ${out}"
  run "${PYTHON}" -m pretrain.run_pretraining --init_checkpoint="${GENERAL}/released" \
    --input_file="${ROW}/data/task.tfrecord" --eval_input_file="${ROW}/data/eval/task.tfrecord" \
    --extra_eval_input_file=general="${GENERAL}/data/eval/general.tfrecord" \
    --output_dir="${out}" --do_train --do_eval --optimizer=adamw --adam_bias_correction \
    --learning_rate="${rate}" --num_train_steps="${steps}" \
    --num_warmup_steps=$(( steps / 10 )) --train_batch_size="${CONTINUE_BATCH_SIZE}" \
    --save_checkpoints_steps="${steps}" --max_eval_steps=1000 \
    --random_seed="${CONTINUE_SEED}" --strategy=cpu
  run "${PYTHON}" -m pretrain.training.learning_check --eval_results="${out}/eval_results.txt"
}

if [[ "${STAGE}" == sweep ]]; then
  # Every sweep point against the general model; the row's own run stands for its recipe's
  # point, and the row's finished fine-tunings are reused.
  RUN_FLAGS=(--run="general=${GENERAL}/released")
  for point in "${SWEEP[@]}"; do
    [[ "${point}" =~ ${SWEEP_POINT_FORMAT} ]]
    rate="${BASH_REMATCH[1]}"; steps="${BASH_REMATCH[3]}"
    out="${ROW}/sweep/lr${rate}_steps${steps}"
    finished_recipe "${ROW}/continued" "${rate}" "${steps}" && out="${ROW}/continued"
    continue_general "${out}" "${rate}" "${steps}"
    RUN_FLAGS+=(--run="lr ${rate}, ${steps} steps=${out}")
  done
  stage "fine-tuning: general and every sweep point on ${EXAMPLES} examples, seeds ${SEEDS}"
  REUSE_DIRS="${REUSE_FROM}"
  is_comparison "${ROW}/${COMPARE_NAME}" \
    && REUSE_DIRS="${ROW}/${COMPARE_NAME}${REUSE_DIRS:+,${REUSE_DIRS}}"
  REUSE=()
  [[ -z "${REUSE_DIRS}" ]] || REUSE=(--reuse_from="${REUSE_DIRS}")
  run "${PYTHON}" -m finetune.compare --data_dir="${DATA_DIR}" \
    --output_dir="${ROW}/sweep/${COMPARE_NAME}" --seeds="${SEEDS}" "${REUSE[@]}" \
    "${RUN_FLAGS[@]}" "${FINETUNE[@]}"
  stage "sweep table"
  run "${PYTHON}" -m experiments.continued_table --sweep_dir="${ROW}/sweep" \
    --comparison="${COMPARE_NAME}" --output_file="${ROW}/sweep/${SWEEP_TABLE}"
  exit 0
fi

continue_general "${ROW}/continued" "${CONTINUE_LEARNING_RATE}" "${CONTINUE_STEPS}"
# The general model is the baseline: the Δ of "general + continued" answers the question;
# random initialisation is there for scale.
RUN_FLAGS=(--run="general=${GENERAL}/released" --run="general + continued=${ROW}/continued")
LABELS="general, general + continued"
[[ "${RANDOM_INIT}" == 0 ]] || { RUN_FLAGS+=(--run="random init="); LABELS+=", random init"; }
REUSE=()
[[ -z "${REUSE_FROM}" ]] || REUSE=(--reuse_from="${REUSE_FROM}")
stage "fine-tuning: ${LABELS} on ${EXAMPLES} examples, seeds ${SEEDS}"
run "${PYTHON}" -m finetune.compare --data_dir="${DATA_DIR}" --output_dir="${ROW}/${COMPARE_NAME}" \
  --seeds="${SEEDS}" "${REUSE[@]}" "${RUN_FLAGS[@]}" "${FINETUNE[@]}"
stage "table of every finished row"
run "${PYTHON}" -m experiments.continued_table --runs_dir="${RUNS}" --output_file="${RUNS}/table.md"
