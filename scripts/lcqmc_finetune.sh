#!/usr/bin/env bash
# Did pretraining help, on LCQMC? scripts/finetune.sh with LCQMC's settings: the
# pair task on LCQMC_DIR, from BEFORE (or random init) and from AFTER, with the same
# seeds and settings, then the table. Behind `make lcqmc-finetune`.
# Run `bash scripts/lcqmc_finetune.sh --help`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
SCRIPT_NAME="lcqmc_finetune.sh"

# This script's own settings (every other one is finetune.sh's, by the same name).
LCQMC_DIR="${LCQMC_DIR:-${REPO_ROOT}/../shared/data/lcqmc}"
# LCQMC's task, always, and its presets for the finetune.sh settings left unset.
LCQMC_TASK=pair
LCQMC_SETTINGS=(MAX_SEQ_LENGTH=64)
# Where the comparison starts from and writes to, unless given.
LCQMC_PATHS=(AFTER="${REPO_ROOT}/output/demo/pretrain" OUT="${REPO_ROOT}/results/lcqmc")

usage() {
  cat <<EOF
Usage: bash scripts/lcqmc_finetune.sh [OPTIONS] [-- EXTRA_FLAGS_FOR_finetune.compare...]

Fine-tunes a sentence-pair classifier on LCQMC-format data from each starting
point, BEFORE (empty = random initialisation) and AFTER, with the same seeds
and settings, and prints the table (starting point, dev and test accuracy,
the difference to the first row). It is scripts/finetune.sh with LCQMC's
settings: every option and setting of finetune.sh (below) works here too.

  --lcqmc_dir D          LCQMC_DIR           train.txt, dev.txt, test.txt  [${LCQMC_DIR}]
  -h, --help                                 this text

Always --task ${LCQMC_TASK} --data_dir LCQMC_DIR. LCQMC's presets, for the settings
left unset: ${LCQMC_SETTINGS[*]}
  and the paths: ${LCQMC_PATHS[*]}

LCQMC format: one pair per line, text_a<TAB>text_b<TAB>label (label 1 =
same meaning, 0 = not), UTF-8, files train.txt, dev.txt and test.txt.
A model whose config sets "layer_norm_cond_size": C (conditional LayerNorm)
needs a 4th field, the condition, on every line:
text_a<TAB>text_b<TAB>label<TAB>COND, COND being one class id in [0, C) (fed
as a one-hot vector) or C comma-separated numbers (e.g. 2 or 0.5,0,1 for C=3).
Examples:
  make lcqmc-finetune AFTER=output/lcqmc_pretrain VOCAB=output/lcqmc_vocab.txt
  bash scripts/lcqmc_finetune.sh --after output/pretrain --max_train_examples 20000 --epochs 1

----- scripts/finetune.sh --help -----
EOF
  bash "${SCRIPT_DIR}/finetune.sh" --help
}

die() { echo "${SCRIPT_NAME}: error: $*" >&2; exit 2; }

# --lcqmc_dir and --help are this script's; the rest goes to finetune.sh as given.
FORWARDED_ARGS=()
while [[ $# -gt 0 ]]; do
  option="$1"
  case "${option}" in
    -h|--help) usage; exit 0 ;;
    --) FORWARDED_ARGS+=("$@"); break ;;
    --lcqmc_dir=*) LCQMC_DIR="${option#*=}"; shift ;;
    --lcqmc_dir) [[ $# -ge 2 ]] || die "--lcqmc_dir needs a value (see --help)"
                 LCQMC_DIR="$2"; shift 2 ;;
    --data_dir|--data_dir=*|--task|--task=*)
      die "${option%%=*} is LCQMC's here: use --lcqmc_dir (LCQMC_DIR), or scripts/finetune.sh for other data" ;;
    *)
      FORWARDED_ARGS+=("${option}"); shift ;;
  esac
done

[[ "${LCQMC_DIR}" = /* ]] || LCQMC_DIR="${PWD}/${LCQMC_DIR}"
missing=()
for split in train dev test; do [[ -f "${LCQMC_DIR}/${split}.txt" ]] || missing+=("${split}.txt"); done
if [[ ${#missing[@]} -gt 0 ]]; then
  cat >&2 <<EOF
${SCRIPT_NAME}: no LCQMC data at ${LCQMC_DIR} (missing: ${missing[*]}).
Put LCQMC there (or pass LCQMC_DIR=/path/to/lcqmc / --lcqmc_dir): three files
train.txt, dev.txt and test.txt, one pair per line in the format
    text_a<TAB>text_b<TAB>label        (label 1 = same meaning, 0 = not)
e.g. 喜欢打篮球的男生喜欢什么样的女生<TAB>爱打篮球的男生喜欢什么样的女生<TAB>1
LCQMC (Liu et al., COLING 2018) is available from its authors and in Chinese NLP
benchmark collections. A header line is tolerated; malformed lines are reported.
EOF
  exit 2
fi

# The presets and paths go first, as options: an option given by the caller comes later
# and wins; a setting given in the environment is not overridden.
PRESET_ARGS=(--task "${LCQMC_TASK}" --data_dir "${LCQMC_DIR}")
for assignment in "${LCQMC_SETTINGS[@]}" "${LCQMC_PATHS[@]}"; do
  variable="${assignment%%=*}"
  [[ -n "${!variable:-}" ]] || PRESET_ARGS+=("--${variable,,}" "${assignment#*=}")
done
exec bash "${SCRIPT_DIR}/finetune.sh" "${PRESET_ARGS[@]}" ${FORWARDED_ARGS[@]+"${FORWARDED_ARGS[@]}"}
