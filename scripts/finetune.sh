#!/usr/bin/env bash
# Did pretraining help, on any task? Fine-tunes from BEFORE (or random init of the same
# architecture) and from AFTER with the same seeds and settings, and prints the table
# (python -m finetune.compare).
#   bash scripts/finetune.sh --task T --data_dir D --after CHECKPOINT [OPTIONS] [-- FLAGS]
# Run --help for every setting (an option or an environment variable of the same name);
# the logic is finetune/finetune_script.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" finetune.sh
exec "${PYTHON}" -m finetune.finetune_script "$@"
