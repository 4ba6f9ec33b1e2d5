#!/usr/bin/env bash
# Builds pretraining TFRecords with `python -m data_gen.create_pretraining_data` (and the vocab
# with data_gen.tools.build_vocab when asked). With no arguments: the demo (shipped sample
# corpus -> output/demo/).
#   bash scripts/create_pretrain_data.sh [OPTIONS] [-- EXTRA_CLI_FLAGS...]
# Run --help for every setting (an option or an environment variable of the same name);
# the logic is data_gen/create_pretrain_data_script.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/choose_python.sh" create_pretrain_data.sh
exec "${PYTHON}" -m data_gen.create_pretrain_data_script "$@"
