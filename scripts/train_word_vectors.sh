#!/usr/bin/env bash
# Trains word vectors (jieba + gensim Word2Vec) for MacBERT's similar-words file:
#   W2V_PYTHON=/tmp/w2venv/bin/python bash scripts/train_word_vectors.sh DOCS OUT [FLAGS]
# then: python -m data_gen.tools.build_similar_words --vectors=OUT --output_file=... --vocab_file=...
# gensim and jieba are not dependencies of this project: W2V_PYTHON is an interpreter that has
# them (the error says how to make one). --help for the flags; the logic is
# scripts/train_word_vectors.py.
set -euo pipefail
exec "${W2V_PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/train_word_vectors.py" "$@"
