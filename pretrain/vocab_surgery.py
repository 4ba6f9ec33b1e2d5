"""Shrinks a vocab to the tokens a corpus uses, for `keep_tokens` loading.

    python -m pretrain.vocab_surgery --vocab_file=chinese_L-12/vocab.txt \
        --corpus_files='data/*.txt' --output_vocab_file=out/vocab.txt \
        --output_keep_tokens_file=out/keep_tokens.json

writes the reduced vocab (new id = line number) and the JSON list of the
kept ids of the full vocab (`keep_tokens[new_id] == old_id`). Then set
`vocab_size` to the reduced size and load the released checkpoint with
`init_from_checkpoint(ckpt, keep_tokens=load_keep_tokens(path))`.
Kept ids stay in their original order, so [PAD] stays id 0; the special
tokens are always kept.
"""
import collections
import glob
import json
import os

from absl import app
from absl import flags

ALWAYS_KEEP = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab_tokens(vocab_file):
    """Tokens of a vocab file in id order (id = line number)."""
    with open(vocab_file, "r", encoding="utf-8") as reader:
        tokens = [line.rstrip("\r\n").strip(" \t") for line in reader]
    for line_number, token in enumerate(tokens, 1):
        if not token:
            raise ValueError("%s:%d: empty line in vocab file (ids are line numbers)"
                             % (vocab_file, line_number))
    return tokens


def select_keep_tokens(vocab_tokens, token_counts, min_count=1, always_keep=ALWAYS_KEEP):
    """Ids of `vocab_tokens` to keep, ascending.

    Args:
      vocab_tokens: list of tokens in id order.
      token_counts: mapping token -> count (tokens outside the vocab ignored).
      min_count: keep tokens seen at least this often.
      always_keep: tokens kept whatever their count (when in the vocab).
    """
    keep = []
    for token_id, token in enumerate(vocab_tokens):
        if token in always_keep or token_counts.get(token, 0) >= min_count:
            keep.append(token_id)
    return keep


def count_corpus_tokens(corpus_files, vocab_file, do_lower_case=True):
    """Counts WordPiece tokens of every line of the corpus files."""
    from data_gen import tokenization  # text processing lives in data_gen
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    counts = collections.Counter()
    for path in corpus_files:
        with open(path, "r", encoding="utf-8") as reader:
            for line in reader:
                line = line.strip()
                if line:
                    counts.update(tokenizer.tokenize(line))
    return counts


def write_reduced_vocab(vocab_file, output_vocab_file, output_keep_tokens_file,
                        corpus_files=None, tokens=None, min_count=1, do_lower_case=True):
    """Writes the reduced vocab and keep-token ids; returns the kept ids.

    Exactly one of `corpus_files` (tokenized with data_gen's FullTokenizer)
    or `tokens` (an iterable of tokens already tokenized) is used.
    """
    if (corpus_files is None) == (tokens is None):
        raise ValueError("pass either corpus_files or tokens")
    vocab_tokens = read_vocab_tokens(vocab_file)
    if corpus_files is not None:
        counts = count_corpus_tokens(corpus_files, vocab_file, do_lower_case)
    else:
        counts = collections.Counter(tokens)
    keep = select_keep_tokens(vocab_tokens, counts, min_count)
    for path in (output_vocab_file, output_keep_tokens_file):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
    with open(output_vocab_file, "w", encoding="utf-8") as writer:
        writer.write("".join(vocab_tokens[i] + "\n" for i in keep))
    with open(output_keep_tokens_file, "w", encoding="utf-8") as writer:
        json.dump(keep, writer)
    return keep


def load_keep_tokens(path):
    """Reads a keep-token id list written by `write_reduced_vocab`."""
    with open(path, "r", encoding="utf-8") as reader:
        keep = json.load(reader)
    if not isinstance(keep, list) or not all(isinstance(i, int) and i >= 0 for i in keep):
        raise ValueError("%s must hold a JSON list of non-negative token ids" % path)
    return keep


FLAGS = flags.FLAGS


def _define_flags():
    flags.DEFINE_string("vocab_file", None, "Full vocab (e.g. Google's 21128 tokens).")
    flags.DEFINE_string("corpus_files", None, "Comma-separated globs of text files.")
    flags.DEFINE_string("token_file", None, "Alternative: file with one token per line.")
    flags.DEFINE_string("output_vocab_file", None, "Where to write the reduced vocab.")
    flags.DEFINE_string("output_keep_tokens_file", None, "Where to write the kept ids (JSON).")
    flags.DEFINE_integer("min_count", 1, "Keep tokens seen at least this often.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case before tokenizing.")


def main(argv):
    del argv
    for name in ("vocab_file", "output_vocab_file", "output_keep_tokens_file"):
        if not getattr(FLAGS, name):
            raise app.UsageError("--%s is required" % name)
    corpus_files, tokens = None, None
    if FLAGS.corpus_files:
        corpus_files = sorted(p for pattern in FLAGS.corpus_files.split(",")
                              for p in glob.glob(pattern.strip()))
        if not corpus_files:
            raise app.UsageError("--corpus_files=%s matched no file" % FLAGS.corpus_files)
    elif FLAGS.token_file:
        with open(FLAGS.token_file, "r", encoding="utf-8") as reader:
            tokens = [line.strip() for line in reader if line.strip()]
    else:
        raise app.UsageError("pass --corpus_files or --token_file")
    keep = write_reduced_vocab(FLAGS.vocab_file, FLAGS.output_vocab_file,
                               FLAGS.output_keep_tokens_file, corpus_files, tokens,
                               FLAGS.min_count, FLAGS.do_lower_case)
    print("kept %d of %d tokens; set vocab_size=%d in the model config"
          % (len(keep), len(read_vocab_tokens(FLAGS.vocab_file)), len(keep)))


if __name__ == "__main__":
    _define_flags()
    app.run(main)
