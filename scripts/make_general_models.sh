#!/usr/bin/env bash
# Stand-ins for released models, made the way a release is made: pretraining on general text,
# then export_hf and import_hf, so that continued pretraining (scripts/continued_experiment.sh)
# starts from a transformers model directory exactly as for a user who downloaded one.
#   bash scripts/make_general_models.sh [--dry_run]    (--help: the models and settings)
# Settings are environment variables; the logic is experiments/general_models.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" make_general_models.sh
exec "${PYTHON}" -m experiments.general_models "$@"
