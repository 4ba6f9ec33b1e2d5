#!/usr/bin/env bash
# Did continuing a released model's pretraining on a task's text help on that task? One row,
# end to end: the task's text -> held-out pretraining data with the general model's vocab ->
# continued pretraining from the general model (scripts/make_general_models.sh) ->
# finetune.compare of the general model, the continued one and random init; or, with
# "sweep", every point of a grid of continuing recipes against the general model; with
# "arms", #66's arms (masks static or drawn at train time, the schedule) against today's recipe.
#   bash scripts/continued_experiment.sh [--dry_run] TASK MODEL [sweep|arms]   (--help: settings)
# Settings are environment variables; the logic is experiments/continued_row.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" continued_experiment.sh
exec "${PYTHON}" -m experiments.continued_row "$@"
