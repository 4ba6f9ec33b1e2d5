r"""Vocab surgery: shrink a vocab to the tokens a corpus uses (for `keep_tokens` loading), or
extend a checkpoint's vocab with a corpus's missing characters (--extend_from_corpus:
pretrain.checkpoints.vocab_extension).

    python -m pretrain.checkpoints.vocab_surgery --vocab_file=chinese_L-12/vocab.txt \
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
import dataclasses
import glob
import json

from common.file_utils import atomic_output, write_text_atomically
from common import cli_options
from common.cli_options import UserError, option

ALWAYS_KEEP = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab_tokens(vocab_file):
    """Tokens of a vocab file in id order (id = line number), read by data_gen's `load_vocab`.

    A repeated token keeps its first id; the later line's id becomes None
    (the tokenizer never produces it, so it is never kept).
    """
    from data_gen.text import tokenization  # pylint: disable=import-outside-toplevel
    vocab = tokenization.load_vocab(vocab_file)
    tokens = [None] * (max(vocab.values()) + 1)
    for token, token_id in vocab.items():
        tokens[token_id] = token
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
        if token is None:  # a repeated line (see read_vocab_tokens)
            continue
        if token in always_keep or token_counts.get(token, 0) >= min_count:
            keep.append(token_id)
    return keep


def count_corpus_tokens(corpus_files, vocab_file, do_lower_case=True):
    """Counts WordPiece tokens of every line of the corpus files."""
    from data_gen.text import tokenization  # text processing lives in data_gen
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
    write_text_atomically(output_vocab_file, (vocab_tokens[i] for i in keep))
    with atomic_output(output_keep_tokens_file) as temporary:
        with open(temporary, "w", encoding="utf-8") as writer:
            json.dump(keep, writer)
    return keep


def load_keep_tokens(path):
    """Reads a keep-token id list written by `write_reduced_vocab`."""
    with open(path, "r", encoding="utf-8") as reader:
        keep = json.load(reader)
    if not isinstance(keep, list) or not all(isinstance(i, int) and i >= 0 for i in keep):
        raise ValueError("%s must hold a JSON list of non-negative token ids" % path)
    return keep


@dataclasses.dataclass
class ReduceVocabOptions:
    """The flags of `python -m pretrain.checkpoints.vocab_surgery`."""
    vocab_file: str = option(None, "Shrinking: the full vocab (e.g. Google's 21128 tokens).")
    corpus_files: str = option(None, "Shrinking: comma-separated globs of text files.")
    token_file: str = option(None, "Shrinking, instead: a file with one token per line.")
    output_vocab_file: str = option(None, "Shrinking: where to write the reduced vocab.")
    output_keep_tokens_file: str = option(None, "Shrinking: where to write the kept ids "
                                                "(JSON).")
    extend_from_corpus: str = option(None, "Extending: comma-separated globs of text whose "
                                           "characters the vocab maps to [UNK] are added "
                                           "(with --init_checkpoint and --output_dir).")
    init_checkpoint: str = option(None, "Extending: the checkpoint (directory or prefix) whose "
                                        "vocab.txt and bert_config.json are beside it.")
    output_dir: str = option(None, "Extending: where the extended checkpoint, vocab.txt and "
                                   "bert_config.json go.")
    overwrite: bool = option(False, "Extending: replace a non-empty --output_dir.")
    min_count: int = option(1, "Keep (shrinking) or add (extending) tokens seen at least this "
                               "often.")
    do_lower_case: bool = option(True, "Lower-case before tokenizing.")


def reduce_vocab(options):
    """Runs the reduction (or, with --extend_from_corpus, the extension) the flags describe
    and prints what to put in the model config."""
    if options.extend_from_corpus:
        from pretrain.checkpoints import vocab_extension  # pylint: disable=import-outside-toplevel
        for name in ("init_checkpoint", "output_dir"):
            if not getattr(options, name):
                raise UserError(f"--extend_from_corpus needs --{name}")
        vocab_extension.extend(options.init_checkpoint, options.extend_from_corpus,
                               options.output_dir, options.min_count, options.do_lower_case,
                               options.overwrite)
        return
    for name in ("vocab_file", "output_vocab_file", "output_keep_tokens_file"):
        if not getattr(options, name):
            raise UserError(f"--{name} is required to shrink a vocab (or pass "
                            "--extend_from_corpus to extend a checkpoint's vocab)")
    corpus_files, tokens = None, None
    if options.corpus_files:
        corpus_files = sorted(p for pattern in options.corpus_files.split(",")
                              for p in glob.glob(pattern.strip()))
        if not corpus_files:
            raise UserError(f"--corpus_files={options.corpus_files} matched no file")
    elif options.token_file:
        with open(options.token_file, "r", encoding="utf-8") as reader:
            tokens = [line.strip() for line in reader if line.strip()]
    else:
        raise UserError("pass --corpus_files or --token_file")
    keep = write_reduced_vocab(options.vocab_file, options.output_vocab_file,
                               options.output_keep_tokens_file, corpus_files, tokens,
                               options.min_count, options.do_lower_case)
    full_size = sum(token is not None for token in read_vocab_tokens(options.vocab_file))
    print(f"kept {len(keep)} of {full_size} tokens; set vocab_size={len(keep)} in the model config")


def main(argv=None):
    from data_gen.text.tokenization import VocabError  # pylint: disable=import-outside-toplevel
    cli_options.run_main(ReduceVocabOptions, reduce_vocab, argv,
                         expected=(VocabError, OSError, UnicodeDecodeError))


if __name__ == "__main__":
    main()
