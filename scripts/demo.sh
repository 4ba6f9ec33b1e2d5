#!/usr/bin/env bash
# The whole chain on the shipped sample, in a few minutes on CPU (`make demo`): sample text ->
# vocab + TFRecords -> tiny pretraining -> fine-tuning on the demo's question pairs from random
# init and from the pretrained checkpoint -> the comparison table.
#   bash scripts/demo.sh [--dry_run]    (--help: the settings, environment variables)
# The logic is experiments/demo.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" demo.sh
exec "${PYTHON}" -m experiments.demo "$@"
