"""Builds the similar-words file of MacBERT masking from word vectors.

    python -m data_gen.tools.build_similar_words --vectors=vectors.txt \
        --output_file=similar_words.tsv --vocab_file=vocab.txt --top_k=10

Input: word vectors in word2vec TEXT format (gensim's
`save_word2vec_format(binary=False)`): a header line "COUNT DIM", then one
line per word, `word v1 ... vDIM`, separated by spaces, most frequent word
first (as word2vec and gensim write them). The file is read line by line.

Words kept, in file order (each word read is counted as kept or dropped by reason):
  * the format must be able to hold it (data_gen.modes.mlm.similar_words: no tab or
    line break, no leading "#"): else `dropped_unwritable`;
  * the first of a repeated word: `dropped_duplicate`;
  * with --chinese_only (the default), a word of Chinese characters only:
    else `dropped_not_chinese` (punctuation would be swapped for particles);
  * with --vocab_file, a word whose every character is a token of that vocab
    after BERT's basic tokenization (so it is as many tokens as characters,
    as MacBERT's same-length replacement needs): else `dropped_not_in_vocab`;
  * a vector that is not all zeros (cosine needs a direction): else
    `dropped_zero_vector`;
  * --max_words=N stops reading after N kept words; the rows not read are
    `not_read_max_words`.

Similarity: cosine, in numpy float32 on L2-normalised rows. With
--same_length (MacBERT's rule) a word is compared only with the words of as
many characters, group by group; otherwise with every kept word. A group is
scored a block of --block_size query rows at a time (block @ group.T); each
row keeps its --top_k best other words with cosine >= --min_similarity,
best first, ties broken by the lower row (the more frequent word). The
block's float32 product only shortlists 2 x top_k words a row; they are
ranked by their exact cosine (float64), so the output does not depend on
--block_size or BLAS threads. Words left without a candidate are counted
(`words_no_candidate`), not written.

Memory is bounded by the kept vectors (COUNT' x DIM float32, plus a copy of
the largest length group while it is scored), top_k int64 neighbours per
kept word, and about 9 bytes x block_size x group size for one block's
scores and their selection (1024 x 100k words ~ 1 GB: lower --block_size or
use --max_words for a larger vocabulary). numpy's BLAS may use several
threads; OPENBLAS_NUM_THREADS=1 keeps it to one core.

Output: data_gen.modes.mlm.similar_words's TSV (`word<TAB>candidate...`), words in
the vectors file's order, after "#" lines naming the settings; written
under a temporary name and renamed. The same input and flags give a
byte-identical file. The last stdout line accounts for every word.
"""
import collections
import dataclasses
import os
import re
import time

import numpy as np

from common import cli_options
from data_gen.modes.mlm import similar_words
from data_gen.text import tokenization
from common.cli_options import UserError

ACCOUNT_ORDER = ("words_read", "words_kept", "dropped_unwritable", "dropped_duplicate",
                 "dropped_not_chinese", "dropped_not_in_vocab", "dropped_zero_vector", "not_read_max_words",
                 "blank_lines", "words_no_candidate", "candidates_below_min_similarity",
                 "words_written", "candidates_written")
_FIELDS = re.compile(r"[ \t]+")
_FORMAT_HINT = ("the file must be word2vec TEXT format: a header `COUNT DIM`, then `word v1 .. "
                "vDIM` per line (a binary file: load it with gensim KeyedVectors."
                "load_word2vec_format(binary=True) and save_word2vec_format(binary=False))")


def vocab_word_filter(vocab_file, do_lower_case=True):
    """keep(word): True when each character of `word` is one token of the vocab."""
    vocab = tokenization.load_vocab(vocab_file)
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)

    def keep(word):
        pieces = basic.tokenize(word)
        return len(pieces) == len(word) and all(p in vocab and len(p) == 1 for p in pieces)

    return keep


def _decode(raw, where):
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise UserError(f"{where}: not UTF-8 ({error.reason} at byte {error.start}); "
                        f"{_FORMAT_HINT}") from None


def _parse_header(text, where):
    fields = _FIELDS.split(text.strip(" \t"))
    if len(fields) != 2 or not all(f.isdigit() and int(f) > 0 for f in fields):
        raise UserError(f"{where}: the header {text[:60]!r} is not `COUNT DIM` (two positive "
                        f"integers); {_FORMAT_HINT}")
    return int(fields[0]), int(fields[1])


def _parse_row(text, dim, where):
    fields = text.rstrip(" ").split(" ")
    if len(fields) != dim + 1 or "" in fields:  # tabs or runs of spaces
        fields = _FIELDS.split(text.strip(" \t"))
    if len(fields) != dim + 1:
        raise UserError(f"{where}: {len(fields) - 1} values after the word {fields[0][:40]!r}, "
                        f"the header says {dim} (a word with a space in it?); {_FORMAT_HINT}")
    try:
        vector = np.array(fields[1:], dtype=np.float32)
    except ValueError:
        bad = next(f for f in fields[1:] if not _is_number(f))
        raise UserError(f"{where}: {bad[:40]!r} is not a number; {_FORMAT_HINT}") from None
    if not np.all(np.isfinite(vector)):
        raise UserError(f"{where}: the vector of {fields[0][:40]!r} holds inf or nan; "
                        "retrain or remove that line")
    return fields[0], vector


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _allocate(rows, dim, path):
    try:  # pages never written stay unused, so a generous capacity costs no memory
        return np.empty((rows, dim), dtype=np.float32)
    except (MemoryError, ValueError):
        raise UserError(f"{path}: the header's {rows} x {dim} vectors do not fit in memory; "
                        "give --max_words") from None


def read_vectors(path, account, keep_word=None, max_words=0, chinese_only=False):
    """(words, unit-norm float32 matrix) of the kept words of a word2vec text file."""
    words, seen = [], set()
    with open(path, "rb") as reader:
        first = reader.readline()
        count, dim = _parse_header(_decode(first, f"{path}:1"), f"{path}:1")
        matrix = _allocate(min(count, max_words) if max_words else count, dim, path)
        number, rows = 1, 0
        for number, raw in enumerate(reader, start=2):
            if max_words and len(words) == max_words:
                account["not_read_max_words"] = count - rows
                break
            text = _decode(raw, f"{path}:{number}")
            if not text.strip(" \t"):
                account["blank_lines"] += 1
                continue
            rows += 1
            if rows > count:
                raise UserError(f"{path}:{number}: more vectors than the header's {count}; "
                                "correct the header's COUNT")
            word, vector = _parse_row(text, dim, f"{path}:{number}")
            account["words_read"] += 1
            norm = float(np.linalg.norm(vector))
            if not similar_words.is_writable_word(word):
                account["dropped_unwritable"] += 1
            elif word in seen:
                account["dropped_duplicate"] += 1
            elif chinese_only and not all(map(tokenization.is_cjk_char, word)):
                account["dropped_not_chinese"] += 1
            elif keep_word is not None and not keep_word(word):
                account["dropped_not_in_vocab"] += 1
            elif norm == 0.0:
                account["dropped_zero_vector"] += 1
            else:
                seen.add(word)
                matrix[len(words)] = vector / norm
                words.append(word)
        else:
            if rows != count:
                raise UserError(f"{path}:{number}: the file ends after {rows} of the header's "
                                f"{count} vectors (truncated?); rewrite it or correct COUNT")
    account["words_kept"] = len(words)
    return words, matrix[:len(words)]


def _block_top_k(scores, queries, group, top_k, min_similarity):
    """(rows, ranks, columns, count below min) of the best columns of each row of `scores`
    (= group[queries] @ group.T, float32), the query itself excluded.

    The float32 scores only shortlist 2 x top_k columns a row (ties at the
    last place included); the shortlist is ranked by its exact cosine (float64
    sums of the float32 rows' products, a function of the two rows alone), so
    the result does not depend on --block_size or the BLAS kernel and threads.
    """
    scores[np.arange(len(queries)), queries] = -np.inf
    width = scores.shape[1]
    shortlist = min(2 * top_k, width - 1)
    kth = np.partition(scores, width - shortlist, axis=1)[:, width - shortlist]
    rows, columns = np.nonzero(scores >= kth[:, None])
    exact = np.sum(group[queries[rows]].astype(np.float64) * group[columns], axis=1)
    order = np.lexsort((columns, -exact, rows))  # row, best score, lower column
    rows, columns, exact = rows[order], columns[order], exact[order]
    ranks = np.arange(len(rows)) - np.searchsorted(rows, rows)
    keep = ranks < top_k
    rows, ranks, columns, exact = rows[keep], ranks[keep], columns[keep], exact[keep]
    similar = exact >= min_similarity
    return rows[similar], ranks[similar], columns[similar], int(np.sum(~similar))


def nearest_neighbours(matrix, top_k, lengths=None, block_size=1024, min_similarity=-1.0):
    """(n x top_k int64 row indices, -1 padded, best first; number cut by min_similarity).

    matrix: unit-norm rows. lengths: a group key per row (compare only rows
    of one group), or None for one group of all rows.
    """
    neighbours = np.full((matrix.shape[0], top_k), -1, dtype=np.int64)
    below = 0
    if lengths is None:
        groups = [np.arange(matrix.shape[0])]
    else:
        lengths = np.asarray(lengths)
        groups = [np.flatnonzero(lengths == value) for value in np.unique(lengths)]
    for members in groups:
        k = min(top_k, len(members) - 1)
        if k < 1:
            continue
        group = matrix if len(members) == matrix.shape[0] else matrix[members]
        for start in range(0, len(members), block_size):
            stop = min(start + block_size, len(members))
            scores = group[start:stop] @ group.T
            rows, ranks, columns, cut = _block_top_k(scores, np.arange(start, stop), group, k,
                                                     min_similarity)
            neighbours[members[start + rows], ranks] = members[columns]
            below += cut
    return neighbours, below


@dataclasses.dataclass
class BuildSimilarWordsOptions:
    """Flags of `python -m data_gen.tools.build_similar_words`."""
    vectors: str = cli_options.required("Word vectors, word2vec text format (`COUNT DIM` header).")
    output_file: str = cli_options.required("Where to write the similar-words TSV.")
    top_k: int = cli_options.option(10, "Candidates per word at most.")
    min_similarity: float = cli_options.option(
        0.5, "Candidates need at least this cosine similarity (-1 keeps all top_k).")
    max_words: int = cli_options.option(0, "Keep only the first N kept words (the file is "
                                        "frequency ordered); 0 = all. Bounds the memory.")
    vocab_file: str = cli_options.option("", "BERT vocab: keep only words whose every character "
                                         "is one of its tokens.")
    do_lower_case: bool = cli_options.option(True, "With --vocab_file: lower-case as the "
                                             "tokenizer does.")
    block_size: int = cli_options.option(1024, "Query rows scored at once (memory: ~9 bytes x "
                                         "block_size x words of a group).")
    same_length: bool = cli_options.option(True, "Compare only words of the same number of "
                                           "characters (MacBERT's same-length replacement).")
    chinese_only: bool = cli_options.option(True, "Keep only words made of Chinese characters "
                                            "(punctuation, digits and Latin words are dropped).")


def check_options(options):
    """UserError for a flag value out of range."""
    if options.top_k < 1:
        raise UserError(f"--top_k={options.top_k}: give 1 or more")
    if options.block_size < 1:
        raise UserError(f"--block_size={options.block_size}: give 1 or more")
    if options.max_words < 0:
        raise UserError(f"--max_words={options.max_words}: give 0 (all) or more")
    if not -1.0 <= options.min_similarity <= 1.0:
        raise UserError(f"--min_similarity={options.min_similarity}: give a cosine in [-1, 1]")


def build(options, report=print):
    """Reads the vectors, writes the similar words, returns the account (a Counter)."""
    check_options(options)
    started = time.monotonic()
    account = collections.Counter({key: 0 for key in ACCOUNT_ORDER})
    keep_word = (vocab_word_filter(options.vocab_file, options.do_lower_case)
                 if options.vocab_file else None)
    words, matrix = read_vectors(options.vectors, account, keep_word, options.max_words,
                                 options.chinese_only)
    lengths = [len(word) for word in words] if options.same_length else None
    neighbours, account["candidates_below_min_similarity"] = nearest_neighbours(
        matrix, options.top_k, lengths, options.block_size, options.min_similarity)
    del matrix

    def entries():
        for word, row in zip(words, neighbours):
            candidates = [words[index] for index in row if index >= 0]
            if not candidates:
                account["words_no_candidate"] += 1
                continue
            account["candidates_written"] += len(candidates)
            yield word, candidates

    settings = (f"built by data_gen.tools.build_similar_words from "
                f"{os.path.basename(options.vectors)}:"
                f" top_k={options.top_k} min_similarity={options.min_similarity:g}"
                f" same_length={str(options.same_length).lower()}"
                f" max_words={options.max_words} vocab_filter={'yes' if keep_word else 'no'}"
                f" chinese_only={str(options.chinese_only).lower()}")
    account["words_written"] = similar_words.write_similar_words(
        options.output_file, entries(),
        comments=[settings, "word<TAB>candidates, most similar first"])
    account["seconds"] = round(time.monotonic() - started, 2)
    report(f"build_similar_words: wrote {options.output_file}")
    report("build_similar_words: " + ", ".join(f"{key}={account[key]}"
                                               for key in ACCOUNT_ORDER + ("seconds",)))
    return account


def main(argv=None):
    cli_options.run_main(BuildSimilarWordsOptions, build, argv,
                         expected=(tokenization.VocabError,))


if __name__ == "__main__":
    main()
