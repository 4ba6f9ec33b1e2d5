#!/usr/bin/env bash
# Pretrain a model with pretrain.run_pretraining. With no --input: the demo (tiny BERT on the
# demo TFRecords, a few hundred steps on CPU, then eval).
#   bash scripts/pretrain.sh --input GLOBS --config F --output_dir D [OPTIONS] [-- FLAGS]
# Run --help for every setting (an option or an environment variable of the same name);
# the logic is pretrain/pretrain_script.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" pretrain.sh
exec "${PYTHON}" -m pretrain.pretrain_script "$@"
