#!/usr/bin/env bash
# Did pretraining help, on any task? Fine-tunes from BEFORE (or random init of
# the same architecture) and from AFTER with the same seeds and settings, and
# prints the table (python -m finetune.compare). Run `bash scripts/finetune.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
SCRIPT_NAME="finetune.sh"

# Settings forwarded to finetune.compare, VARIABLE:flag, each only when set: unset or
# empty = that flag's default in finetune/run_finetune.py or finetune/compare.py, so this
# script holds no second copy of the defaults (tests/scripts/test_script_defaults.py checks it).
# Each is also the option --variable (lower case). true/false settings become --flag/--noflag.
DATA_SETTINGS=(TASK:task DATA_DIR:data_dir TRAIN_FILE:train_file DEV_FILE:dev_file
  TEST_FILE:test_file INPUT_FORMAT:input_format TEXT_FIELDS:text_fields LABEL_FIELD:label_field
  TAG_SCHEME:tag_scheme ALLOW_UNSEEN_LABELS:allow_unseen_labels
  SELECTION_METRIC:selection_metric DO_LOWER_CASE:do_lower_case)
MODEL_SETTINGS=(CONFIG:bert_config_file VOCAB:vocab_file)
TRAINING_SETTINGS=(MAX_TRAIN_EXAMPLES:max_train_examples MAX_DEV_EXAMPLES:max_dev_examples
  EPOCHS:num_train_epochs MAX_SEQ_LENGTH:max_seq_length BATCH_SIZE:train_batch_size
  EVAL_BATCH_SIZE:eval_batch_size LEARNING_RATE:learning_rate
  WARMUP_PROPORTION:warmup_proportion EVAL_EVERY:eval_every_steps SEED:random_seed
  STRATEGY:strategy)
COMPARE_SETTINGS=(OUT:output_dir SEEDS:seeds BOOTSTRAP_SAMPLES:bootstrap_samples RERUN:rerun
  COLLECT_ONLY:collect_only)
FORWARDED=("${DATA_SETTINGS[@]}" "${MODEL_SETTINGS[@]}" "${TRAINING_SETTINGS[@]}"
  "${COMPARE_SETTINGS[@]}")
for pair in "${FORWARDED[@]}"; do variable="${pair%%:*}"; declare "${variable}=${!variable:-}"; done
# The script's own settings: the starting points and their table labels.
BEFORE="${BEFORE:-}"
AFTER="${AFTER:-}"
BEFORE_LABEL="${BEFORE_LABEL:-}"
AFTER_LABEL="${AFTER_LABEL:-after pretraining}"
DRY_RUN="${DRY_RUN:-0}"
PATH_SETTINGS=(DATA_DIR TRAIN_FILE DEV_FILE TEST_FILE CONFIG VOCAB OUT BEFORE AFTER)
SWITCHES=(ALLOW_UNSEEN_LABELS RERUN COLLECT_ONLY)       # --option alone = true
INTEGERS=(MAX_TRAIN_EXAMPLES MAX_DEV_EXAMPLES MAX_SEQ_LENGTH BATCH_SIZE EVAL_BATCH_SIZE
  EVAL_EVERY SEED BOOTSTRAP_SAMPLES)
NUMBERS=(EPOCHS LEARNING_RATE WARMUP_PROPORTION)
# What finetune.run_finetune looks for in a --data_dir (its DATA_EXTENSIONS).
DATA_EXTENSIONS=(.txt .tsv .csv .json .jsonl)
# Options taking a value: --variable (lower case) sets VARIABLE.
VALUE_OPTIONS=(BEFORE AFTER BEFORE_LABEL AFTER_LABEL PYTHON)
for pair in "${FORWARDED[@]}"; do
  [[ " ${SWITCHES[*]} " == *" ${pair%%:*} "* ]] || VALUE_OPTIONS+=("${pair%%:*}")
done

usage() {
  cat <<EOF
Usage: bash scripts/finetune.sh --task TASK (--data_dir D | --train_file F --dev_file F)
                                --after CHECKPOINT [OPTIONS] [-- EXTRA_FLAGS_FOR_finetune.compare...]

Did pretraining help? Fine-tunes the task from each starting point, BEFORE (a
checkpoint; empty = random initialisation of the same architecture) and AFTER,
with the same seeds and settings, and prints the table of finetune.compare:
mean and spread over the seeds, and AFTER against BEFORE with a bootstrap
confidence interval. It saves the table to OUT/results.md, every run's numbers
to OUT/results.json and the dev curves to OUT/dev_curve.png; runs live in
OUT/runs/, and a finished run with unchanged settings is collected, not
retrained. Relative paths are taken from your current directory.

Every setting is an option or the environment variable beside it (the option
wins). Settings marked (--flag) go to finetune.compare only when set; unset,
its own default applies (python -m finetune.compare --help lists them).

Task and data:
  --task T               TASK                classification | pair | ner       (--task)${TASK:+ [${TASK}]}
  --data_dir D           DATA_DIR            folder with train.*, dev.*, test.* (--data_dir)${DATA_DIR:+ [${DATA_DIR}]}
                                             (${DATA_EXTENSIONS[*]})
  --train_file F         TRAIN_FILE          training data, instead of DATA_DIR/train.* (--train_file)${TRAIN_FILE:+ [${TRAIN_FILE}]}
  --dev_file F           DEV_FILE            dev data: picks the best checkpoint (--dev_file)${DEV_FILE:+ [${DEV_FILE}]}
  --test_file F          TEST_FILE           test data (optional)              (--test_file)${TEST_FILE:+ [${TEST_FILE}]}
  --input_format F       INPUT_FORMAT        tsv|csv|jsonl|lcqmc|conll|cluener; unset = detected (--input_format)${INPUT_FORMAT:+ [${INPUT_FORMAT}]}
  --text_fields A,B      TEXT_FIELDS         text columns/keys                 (--text_fields)${TEXT_FIELDS:+ [${TEXT_FIELDS}]}
  --label_field L        LABEL_FIELD         label column/key                  (--label_field)${LABEL_FIELD:+ [${LABEL_FIELD}]}
  --tag_scheme S         TAG_SCHEME          ner: BIO|IOB2|BIOES|BMES; unset = detected (--tag_scheme)${TAG_SCHEME:+ [${TAG_SCHEME}]}
  --allow_unseen_labels  ALLOW_UNSEEN_LABELS=true  score labels training never saw as errors (--allow_unseen_labels)
  --selection_metric M   SELECTION_METRIC    dev metric of the best checkpoint (--selection_metric)${SELECTION_METRIC:+ [${SELECTION_METRIC}]}
  --do_lower_case B      DO_LOWER_CASE       true | false                      (--do_lower_case)${DO_LOWER_CASE:+ [${DO_LOWER_CASE}]}

Starting points and model:
  --before C             BEFORE              baseline checkpoint; empty = random init [${BEFORE:-<random init>}]
  --after C              AFTER               pretraining output dir or checkpoint (required)${AFTER:+ [${AFTER}]}
  --config F             CONFIG              model config for a starting point without
                                             bert_config.json beside it        (--bert_config_file)${CONFIG:+ [${CONFIG}]}
  --vocab F              VOCAB               the pretraining vocab; unset = the vocab.txt
                                             beside AFTER                      (--vocab_file)${VOCAB:+ [${VOCAB}]}
  --before_label L       BEFORE_LABEL        table label of the first row [${BEFORE_LABEL:-random init, or before pretraining with BEFORE}]
  --after_label L        AFTER_LABEL         table label of the AFTER row [${AFTER_LABEL}]

Training (the same for every run):
  --seeds 1,2,3          SEEDS               fine-tuning seeds, the same for each start (--seeds)${SEEDS:+ [${SEEDS}]}
  --seed N               SEED                one seed, when SEEDS is unset     (--random_seed)${SEED:+ [${SEED}]}
  --max_train_examples N MAX_TRAIN_EXAMPLES  first N training examples, 0 = all (--max_train_examples)${MAX_TRAIN_EXAMPLES:+ [${MAX_TRAIN_EXAMPLES}]}
  --max_dev_examples N   MAX_DEV_EXAMPLES    first N dev examples, 0 = all     (--max_dev_examples)${MAX_DEV_EXAMPLES:+ [${MAX_DEV_EXAMPLES}]}
  --epochs E             EPOCHS              training epochs                   (--num_train_epochs)${EPOCHS:+ [${EPOCHS}]}
  --max_seq_length N     MAX_SEQ_LENGTH      tokens per record                 (--max_seq_length)${MAX_SEQ_LENGTH:+ [${MAX_SEQ_LENGTH}]}
  --batch_size N         BATCH_SIZE          training batch                    (--train_batch_size)${BATCH_SIZE:+ [${BATCH_SIZE}]}
  --eval_batch_size N    EVAL_BATCH_SIZE     dev/test batch                    (--eval_batch_size)${EVAL_BATCH_SIZE:+ [${EVAL_BATCH_SIZE}]}
  --learning_rate R      LEARNING_RATE       peak AdamW learning rate          (--learning_rate)${LEARNING_RATE:+ [${LEARNING_RATE}]}
  --warmup_proportion P  WARMUP_PROPORTION   fraction of steps warming up      (--warmup_proportion)${WARMUP_PROPORTION:+ [${WARMUP_PROPORTION}]}
  --eval_every N         EVAL_EVERY          dev evaluation interval (steps)   (--eval_every_steps)${EVAL_EVERY:+ [${EVAL_EVERY}]}
  --strategy S           STRATEGY            cpu | gpu | mirrored | auto       (--strategy)${STRATEGY:+ [${STRATEGY}]}

Output:
  --out D                OUT                 results folder                    (--output_dir)${OUT:+ [${OUT}]}
  --bootstrap_samples N  BOOTSTRAP_SAMPLES   bootstrap replicates              (--bootstrap_samples)${BOOTSTRAP_SAMPLES:+ [${BOOTSTRAP_SAMPLES}]}
  --rerun                RERUN=true          retrain even finished runs        (--rerun)
  --collect_only         COLLECT_ONLY=true   only collect finished runs, never train (--collect_only)
  --python P             PYTHON              interpreter; default .venv/bin/python, else python3
  --dry_run              DRY_RUN=1           print the command, run nothing
  -h, --help                                 this text

Arguments after -- go to finetune.compare unchanged (e.g. -- --ignore_invalid_weights).
Examples:
  bash scripts/finetune.sh --task classification --data_dir ../shared/data/chnsenticorp \\
      --after output/pretrain --seeds 1,2,3 --out results/chnsenticorp
  TASK=ner DATA_DIR=data/sample/tasks/ner_bio AFTER=output/demo/pretrain EPOCHS=1 \\
      bash scripts/finetune.sh --out results/ner
EOF
}

die() { echo "${SCRIPT_NAME}: error: $*" >&2; exit 2; }
contains() { local list=" $1 "; [[ "${list}" == *" $2 "* ]]; }

EXTRA_ARGS=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --dry_run) DRY_RUN=1; shift; continue ;;
    --) shift; EXTRA_ARGS=("$@"); break ;;
    --*=*)
      variable="${option%%=*}"; variable="${variable#--}"; variable="${variable^^}"
      if contains "${SWITCHES[*]}" "${variable}"; then  # --rerun=true|false
        case "${option#*=}" in true|false) declare "${variable}=${option#*=}"; shift; continue ;; esac
        die "${option}: use ${option%%=*} alone, or ${option%%=*}=true|false"
      fi
      set -- "${option%%=*}" "${option#*=}" "${@:2}"; continue ;;
    --*) variable="${option#--}"; variable="${variable^^}" ;;
    *) die "unknown argument '${option}' (see --help; flags for finetune.compare go after --)" ;;
  esac
  if contains "${SWITCHES[*]}" "${variable}"; then
    declare "${variable}=true"; shift; continue
  fi
  contains "${VALUE_OPTIONS[*]}" "${variable}" \
    || die "unknown option ${option} (see --help; flags for finetune.compare go after --)"
  [[ $# -ge 2 ]] || die "${option} needs a value (see --help)"
  declare "${variable}=$2"
  shift 2
done

for variable in "${INTEGERS[@]}"; do
  [[ "${!variable}" =~ ^[0-9]*$ ]] || die "${variable} must be a non-negative integer, not '${!variable}'"
done
for variable in "${NUMBERS[@]}"; do
  [[ -z "${!variable}" || "${!variable}" =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] \
    || die "${variable} must be a positive number, not '${!variable}'"
done
[[ -z "${SEEDS}" || "${SEEDS}" =~ ^[0-9]+(,[0-9]+)*$ ]] \
  || die "SEEDS must be comma-separated integers (e.g. 1,2,3), not '${SEEDS}'"
for variable in "${SWITCHES[@]}" DO_LOWER_CASE; do
  case "${!variable}" in ""|true|false) ;; 1) declare "${variable}=true" ;; 0) declare "${variable}=false" ;;
    *) die "${variable} must be true or false, not '${!variable}'" ;; esac
done

# Absolute paths (relative ones are taken from the caller's directory); remote ones as given.
absolute() {
  if [[ -z "$1" || "$1" = /* || "$1" == *://* ]]; then echo "$1"; else echo "${PWD}/$1"; fi
}
for variable in "${PATH_SETTINGS[@]}"; do declare "${variable}=$(absolute "${!variable}")"; done

# The data: a file by name, else DATA_DIR/split.* (what run_finetune reads).
if [[ -n "${DATA_DIR}" && "${DATA_DIR}" != *://* && ! -d "${DATA_DIR}" ]]; then
  die "DATA_DIR=${DATA_DIR}: no such directory (--data_dir: a folder with train.*, dev.*, test.*)"
fi
for split in train dev test; do
  variable="${split^^}_FILE"
  if [[ -n "${!variable}" ]]; then
    [[ "${!variable}" == *://* || -f "${!variable}" ]] || die "${variable}=${!variable}: no such file"
    continue
  fi
  if [[ "${split}" == test ]]; then continue; fi  # optional
  [[ -n "${DATA_DIR}" ]] || die "no ${split} data: give --data_dir (DATA_DIR) or --${split}_file (${variable})"
  if [[ "${DATA_DIR}" == *://* ]]; then continue; fi
  found=()
  for extension in "${DATA_EXTENSIONS[@]}"; do
    if [[ -f "${DATA_DIR}/${split}${extension}" ]]; then found+=("${split}${extension}"); fi
  done
  [[ ${#found[@]} -gt 0 ]] || die "DATA_DIR=${DATA_DIR} holds no ${split}.* file \
(${DATA_EXTENSIONS[*]}); add one or pass --${split}_file (${variable})"
  [[ ${#found[@]} -eq 1 ]] || die "DATA_DIR=${DATA_DIR} holds ${found[*]}: pass --${split}_file (${variable}) to say which"
done

checkpoint_exists() {  # a checkpoint directory, a checkpoint prefix, or a fine-tuning output
  [[ "$1" == *://* || -f "$1/checkpoint" || -f "$1.index" || -f "$1/best/checkpoint" ]]
}
[[ -n "${AFTER}" ]] || die "give --after (AFTER): the pretraining output dir or checkpoint to \
compare with BEFORE (empty BEFORE = random init)"
checkpoint_exists "${AFTER}" || die "AFTER=${AFTER} holds no checkpoint. Pretrain first (make pretrain, \
or bash scripts/pretrain.sh --output_dir ...) or point AFTER= / --after at a pretraining output dir or checkpoint prefix"
if [[ -n "${BEFORE}" ]]; then
  checkpoint_exists "${BEFORE}" || die "BEFORE=${BEFORE} is neither a checkpoint directory nor a checkpoint prefix"
fi
for variable in CONFIG VOCAB; do
  [[ -z "${!variable}" || "${!variable}" == *://* || -f "${!variable}" ]] \
    || die "${variable}=${!variable}: no such file"
done

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
# The flags of the settings that are set: --flag=value (true/false: --flag / --noflag).
args=()
for pair in "${DATA_SETTINGS[@]}" "${MODEL_SETTINGS[@]}"; do
  variable="${pair%%:*}"; flag="${pair#*:}"
  case "${!variable}" in "") ;; true) args+=("--${flag}") ;; false) args+=("--no${flag}") ;;
    *) args+=("--${flag}=${!variable}") ;; esac
done
args+=(--run="${FIRST_RUN}" --run="${AFTER_LABEL}=${AFTER}")
for pair in "${TRAINING_SETTINGS[@]}" "${COMPARE_SETTINGS[@]}"; do
  variable="${pair%%:*}"; flag="${pair#*:}"
  case "${!variable}" in "") ;; true) args+=("--${flag}") ;; false) args+=("--no${flag}") ;;
    *) args+=("--${flag}=${!variable}") ;; esac
done
args+=(${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"})

if [[ "${DRY_RUN}" == "1" ]]; then
  printf '%q ' "${PYTHON}" -m finetune.compare "${args[@]}"; printf '\n'
  exit 0
fi
echo "== fine-tuning comparison (${TASK:-default task}): ${DATA_DIR:-${TRAIN_FILE}}${OUT:+ -> ${OUT}}"
echo "   starting points: '${FIRST_RUN}', '${AFTER_LABEL}=${AFTER}'; seeds ${SEEDS:-${SEED:-default}}"
"${PYTHON}" -m finetune.compare "${args[@]}"
if [[ -n "${OUT}" ]]; then
  PLOT="${OUT}/dev_curve.png"; [[ -f "${PLOT}" ]] || PLOT="none (results.md says why)"
  echo "== table: ${OUT}/results.md   numbers: ${OUT}/results.json   plot: ${PLOT}"
fi
