#!/usr/bin/env bash
# Trains word vectors (jieba + gensim Word2Vec) for MacBERT's similar-words file:
#   W2V_PYTHON=/tmp/w2venv/bin/python bash scripts/train_word_vectors.sh DOCS OUT [FLAGS]
# then: python -m data_gen.tools.build_similar_words --vectors=OUT --output_file=... --vocab_file=...
# gensim and jieba are not dependencies of this project: W2V_PYTHON is an interpreter that has
# them (make one below). Run `bash scripts/train_word_vectors.sh --help` for the flags.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
W2V_PYTHON="${W2V_PYTHON:-python3}"

case " $* " in  # --help needs neither gensim nor jieba
  *" -h "*|*" --help "*) exec "${W2V_PYTHON}" "${SCRIPT_DIR}/train_word_vectors.py" --help;;
esac
if [[ $# -ge 1 && "$1" != -* && ! -f "$1" ]]; then
  echo "error: DOCS file $1 not found (the first argument: one sentence per line, e.g." \
       "python -m data_gen.tools.lcqmc_to_docs output)" >&2
  exit 2
fi
if ! "${W2V_PYTHON}" -c "import gensim, jieba" 2>/dev/null; then
  cat >&2 <<EOF
error: W2V_PYTHON=${W2V_PYTHON} cannot import gensim and jieba. Make an interpreter that can,
outside this project's environment, e.g.:
  python3 -m venv /tmp/w2venv && /tmp/w2venv/bin/pip install gensim jieba
and run: W2V_PYTHON=/tmp/w2venv/bin/python bash scripts/train_word_vectors.sh DOCS OUT
EOF
  exit 2
fi

# gensim seeds each word's initial vector from hash(word): a fixed hash seed keeps runs equal.
# One BLAS/OpenMP thread: the training itself uses --workers threads (default 1).
export PYTHONHASHSEED=0 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "${W2V_PYTHON}" "${SCRIPT_DIR}/train_word_vectors.py" "$@"
