"""Trains word vectors for MacBERT's similar words: jieba words -> gensim Word2Vec.

Run through scripts/train_word_vectors.sh (it picks the interpreter, W2V_PYTHON). It
re-executes itself once with PYTHONHASHSEED fixed (gensim's per-word initialisation
depends on it) and one BLAS/OpenMP thread (the training uses --workers threads). Needs
gensim and jieba, which are NOT dependencies of this project: use a separate
environment (the error says how to make one). Reads DOCS (one sentence per line, blank lines
between documents); each non-blank line is normalised as data_gen's tokenizer
does (data_gen.text.tokenization.BasicTokenizer: lower case, cleaned, so the words
match what the masker sees), cut with jieba (default dictionary, HMM on), its
whitespace tokens dropped, and written to a temporary file that Word2Vec
streams (never the whole corpus in memory). OUT is word2vec text format,
most frequent word first, written under a temporary name and renamed.
With --workers=1 and a fixed --seed the output is reproducible.
"""
import argparse
import importlib.util
import logging
import os
import pathlib
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
# Set before the interpreter starts: gensim seeds each word's vector from hash(word).
FIXED_ENVIRONMENT = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                     "MKL_NUM_THREADS": "1"}
NO_GENSIM = """error: W2V_PYTHON={python} cannot import gensim and jieba. Make an interpreter that can,
outside this project's environment, e.g.:
  python3 -m venv /tmp/w2venv && /tmp/w2venv/bin/pip install gensim jieba
and run: W2V_PYTHON=/tmp/w2venv/bin/python bash scripts/train_word_vectors.sh DOCS OUT"""


def with_fixed_environment():
    """Re-executes this script under FIXED_ENVIRONMENT unless it runs under it already."""
    if any(os.environ.get(name) != value for name, value in FIXED_ENVIRONMENT.items()):
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]],
                  {**os.environ, **FIXED_ENVIRONMENT})


def require_gensim_and_jieba():
    if any(importlib.util.find_spec(name) is None for name in ("gensim", "jieba")):
        print(NO_GENSIM.format(python=sys.executable), file=sys.stderr)
        sys.exit(2)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docs", help="Corpus: one sentence per line (UTF-8).")
    parser.add_argument("output", help="Where to write the vectors (word2vec text format).")
    parser.add_argument("--algorithm", choices=("skipgram", "cbow"), default="skipgram")
    parser.add_argument("--vector_size", type=int, default=100)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--min_count", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1, help="Threads (1 = reproducible).")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    if not os.path.isfile(args.docs):
        parser.exit(2, f"error: DOCS file {args.docs} not found (the first argument: one "
                       "sentence per line, e.g. python -m data_gen.tools.lcqmc_to_docs "
                       "output)\n")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        parser.error(f"OUT {args.output}: its directory does not exist; create it first")
    return args


def segment(docs, segmented):
    """Writes DOCS's non-blank lines as space-separated jieba words; returns (lines, words)."""
    import jieba  # pylint: disable=import-outside-toplevel
    sys.path.insert(0, str(REPO_ROOT))
    from data_gen.text.tokenization import BasicTokenizer  # pylint: disable=import-outside-toplevel
    jieba.setLogLevel(logging.WARNING)
    normalize = BasicTokenizer(do_lower_case=True).normalize
    lines = words = 0
    with open(docs, encoding="utf-8") as reader, open(segmented, "w", encoding="utf-8") as out:
        for line in reader:
            text = normalize(line.strip())
            if not text.strip():
                continue
            tokens = [w for w in jieba.lcut(text, HMM=True) if w.strip() and " " not in w]
            lines += 1
            words += len(tokens)
            out.write(" ".join(tokens) + "\n")
    return lines, words


def main(argv=None):
    args = parse_args(argv)
    require_gensim_and_jieba()
    from gensim.models import Word2Vec  # pylint: disable=import-outside-toplevel
    from gensim.models.word2vec import LineSentence  # pylint: disable=import-outside-toplevel
    output = os.path.abspath(args.output)
    temporary = os.path.join(os.path.dirname(output),
                             f".{os.path.basename(output)}.incomplete-{os.getpid()}")
    with tempfile.TemporaryDirectory() as work:
        started = time.monotonic()
        lines, words = segment(args.docs, os.path.join(work, "segmented.txt"))
        segmented_at = time.monotonic()
        model = Word2Vec(LineSentence(os.path.join(work, "segmented.txt")),
                         sg=int(args.algorithm == "skipgram"), vector_size=args.vector_size,
                         window=args.window, min_count=args.min_count, epochs=args.epochs,
                         workers=args.workers, seed=args.seed)
        trained_at = time.monotonic()
    try:
        model.wv.save_word2vec_format(temporary, binary=False)
        os.replace(temporary, output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    print(f"train_word_vectors: lines={lines} words={words} "
          f"vocabulary={len(model.wv)} (min_count={args.min_count}) "
          f"segment_seconds={segmented_at - started:.1f} "
          f"train_seconds={trained_at - segmented_at:.1f}; wrote {output}")


if __name__ == "__main__":
    with_fixed_environment()
    main()
