#!/usr/bin/env bash
# Did pretraining help, on LCQMC? scripts/finetune.sh with LCQMC's settings: the pair task on
# LCQMC_DIR, from BEFORE (or random init) and from AFTER, with the same seeds and settings,
# then the table. Behind `make lcqmc-finetune`.
#   bash scripts/lcqmc_finetune.sh [--lcqmc_dir D] [finetune.sh's OPTIONS] [-- FLAGS]
# Run --help for every setting; the logic is finetune/lcqmc_finetune_script.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" lcqmc_finetune.sh
exec "${PYTHON}" -m finetune.lcqmc_finetune_script "$@"
