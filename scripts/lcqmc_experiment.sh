#!/usr/bin/env bash
# One row of the reference experiment (README, docs/experiments.md), from scratch, end to end:
# LCQMC's train text -> pretraining data of the row's recipe (experiments/recipes/RECIPE.json)
# -> pretraining -> finetune.compare of random init and the pretrained model -> the table.
#   bash scripts/lcqmc_experiment.sh [--dry_run] RECIPE    (--help: the recipes and settings)
# Settings are environment variables; the logic is experiments/from_scratch_row.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" lcqmc_experiment.sh
exec "${PYTHON}" -m experiments.from_scratch_row "$@"
