"""Builds a BERT-style WordPiece vocab from a corpus.

    python -m data_gen.tools.build_vocab --input_file=data/sample/*.txt \
        --output_file=output/demo/vocab.txt --vocab_size 5000

Layout of the written file (one token per line, id = line number), in the
order Google's Chinese vocab uses:

    [PAD]                          id 0
    [unused1] .. [unused U]        ids 1..U            (--num_unused, default 99)
    [UNK] [CLS] [SEP] [MASK]       ids U+1..U+4
    ASCII punctuation, digits, latin letters, common CJK punctuation
    every other character of the corpus, most frequent first (CJK included)
    ##0..##9, ##a..##z, then the corpus's other continuation characters "##c"
    learned WordPieces for non-CJK words (whole words "hello", pieces "##ing")
    [unused U+1] ..                padding up to exactly --vocab_size lines

Text is split with data_gen.text.tokenization.BasicTokenizer (same lower-casing and
width folding as the generator), so every character of the corpus tokenizes
to a non-[UNK] token with the written vocab (unless --min_count drops it).
Pieces are learned by a frequency-based merge procedure (BPE-style): each word
starts as characters (`w ##o ##r ##d`) and the most frequent adjacent pair is
merged into a new piece until the budget or the corpus runs out.
"""
import collections
import dataclasses
import heapq
import sys

from common import cli_options
from data_gen.text import tokenization
from data_gen.text.corpus_reader import CorpusError, CorpusReader, expand_input_patterns
from common.file_utils import write_text_atomically

SPECIALS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")
ASCII_PUNCTUATION = [chr(cp) for cp in range(33, 127) if not chr(cp).isalnum()]
DIGITS = [str(d) for d in range(10)]
LOWER_LETTERS = [chr(cp) for cp in range(ord("a"), ord("z") + 1)]
UPPER_LETTERS = [chr(cp) for cp in range(ord("A"), ord("Z") + 1)]
CJK_PUNCTUATION = list("，。！？、；：“”‘’（）《》〈〉【】「」『』—…·～￥")


class VocabBuildError(ValueError):
    """The corpus cannot be turned into a vocab with the requested settings."""


def count_corpus(files, do_lower_case=True, full_width_to_half=False):
    """Counts basic words and characters of every sentence in `files`.

    Returns (word_counts, initial_char_counts, continuation_char_counts, stats):
    word_counts holds multi-character words (the WordPiece learning input);
    initial chars start a basic word, continuation chars occur inside one.
    """
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case,
                                        full_width_to_half=full_width_to_half)
    words = collections.Counter()
    reader = CorpusReader(files)
    for document in reader:
        for sentence in document:
            words.update(basic.tokenize(sentence))
    initial = collections.Counter()
    continuation = collections.Counter()
    multi_char_words = collections.Counter()
    for word, count in words.items():
        initial[word[0]] += count
        for char in word[1:]:
            continuation[char] += count
        if 1 < len(word) <= tokenization.MAX_INPUT_CHARS_PER_WORD:
            multi_char_words[word] = count
    stats = dict(reader.account.as_dict())
    stats["basic_words"] = sum(words.values())
    stats["distinct_basic_words"] = len(words)
    return multi_char_words, initial, continuation, stats


def _merged(left, right):
    """The piece made by joining `left` and the continuation piece `right`."""
    return left + right[2:]


def learn_wordpieces(word_counts, max_pieces, min_pair_count=2, known=()):
    """Learns up to `max_pieces` new pieces by merging frequent adjacent pairs.

    Args:
      word_counts: {word: count} of multi-character basic words.
      max_pieces: budget of new vocab entries (int >= 0).
      min_pair_count: stop when the most frequent pair occurs fewer times.
      known: tokens already in the vocab; merges producing them cost nothing.
    Returns:
      list of new pieces in the order they were learned (deterministic: ties
      are broken by the pair's text).
    """
    words = sorted(word_counts)
    counts = [word_counts[w] for w in words]
    symbols = [[w[0]] + ["##" + c for c in w[1:]] for w in words]
    pair_counts = collections.Counter()
    pair_words = collections.defaultdict(set)
    for index, pieces in enumerate(symbols):
        for pair in zip(pieces, pieces[1:]):
            pair_counts[pair] += counts[index]
            pair_words[pair].add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    known = set(known)
    learned = []
    while heap and len(learned) < max_pieces:
        negative_count, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative_count:
            continue  # stale heap entry
        if -negative_count < min_pair_count:
            break
        new_piece = _merged(*pair)
        if new_piece not in known:
            known.add(new_piece)
            learned.append(new_piece)
        changed = collections.Counter()
        for index in sorted(pair_words.pop(pair, ())):
            old = symbols[index]
            for old_pair in zip(old, old[1:]):
                changed[old_pair] -= counts[index]
            merged_word = []
            position = 0
            while position < len(old):
                if (position + 1 < len(old) and old[position] == pair[0]
                        and old[position + 1] == pair[1]):
                    merged_word.append(new_piece)
                    position += 2
                else:
                    merged_word.append(old[position])
                    position += 1
            symbols[index] = merged_word
            for new_pair in zip(merged_word, merged_word[1:]):
                changed[new_pair] += counts[index]
                pair_words[new_pair].add(index)
        del pair_counts[pair]
        for changed_pair, delta in changed.items():
            if changed_pair == pair or delta == 0:
                continue
            pair_counts[changed_pair] += delta
            if pair_counts[changed_pair] <= 0:
                del pair_counts[changed_pair]
            else:
                heapq.heappush(heap, (-pair_counts[changed_pair], changed_pair))
    return learned


def _by_frequency(counter, min_count, exclude):
    """Keys of `counter` with count >= min_count not in `exclude`, most frequent first."""
    return [key for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
            if count >= min_count and key not in exclude]


def build_vocab(files, vocab_size=None, do_lower_case=True, min_count=1, num_unused=99,
                full_width_to_half=False):
    """Builds the vocab token list for `files` (see the module docstring for the layout).

    Returns (tokens, report) where report is a dict of counts for printing.
    Raises VocabBuildError when the required entries exceed `vocab_size`.
    """
    if num_unused < 0:
        raise VocabBuildError(f"--num_unused={num_unused} must be >= 0")
    if min_count < 1:
        raise VocabBuildError(f"--min_count={min_count} must be >= 1")
    word_counts, initial, continuation, stats = count_corpus(
        files, do_lower_case=do_lower_case, full_width_to_half=full_width_to_half)

    head = ["[PAD]"] + [f"[unused{i}]" for i in range(1, num_unused + 1)] + list(SPECIALS)
    letters = LOWER_LETTERS if do_lower_case else LOWER_LETTERS + UPPER_LETTERS
    base_chars = ASCII_PUNCTUATION + DIGITS + letters + CJK_PUNCTUATION
    chars = base_chars + _by_frequency(initial + continuation, min_count, set(base_chars))
    # A character that only ever occurs inside words still gets a plain entry
    # (above) so a lone occurrence of it does not become [UNK].
    base_continuations = ["##" + c for c in DIGITS + letters]
    continuation_pieces = base_continuations + [
        "##" + c for c in _by_frequency(continuation, min_count, set(DIGITS + letters))]
    required = head + chars + continuation_pieces
    if len(set(required)) != len(required):
        raise AssertionError("duplicate token in the required vocab entries")

    if vocab_size is not None and len(required) > vocab_size:
        raise VocabBuildError(
            f"the corpus needs {len(required)} vocab entries but --vocab_size is {vocab_size} "
            f"({len(required) - vocab_size} too many): {len(head)} special/[unused] slots, "
            f"{len(chars)} characters, {len(continuation_pieces)} ## continuation pieces. "
            f"Raise --vocab_size to at least {len(required)}, raise --min_count (rare "
            "characters become [UNK]) or lower --num_unused.")
    budget = (vocab_size - len(required)) if vocab_size is not None else sys.maxsize
    learned = learn_wordpieces(word_counts, budget, min_pair_count=max(2, min_count),
                               known=required)
    tokens = required + learned
    padding = 0
    if vocab_size is not None:
        padding = vocab_size - len(tokens)
        tokens += [f"[unused{num_unused + i}]" for i in range(1, padding + 1)]
    cjk = sum(1 for c in chars if tokenization.is_cjk_char(c))
    report = dict(stats)
    report.update(vocab_size=len(tokens), unused_slots=num_unused + padding,
                  characters=len(chars), cjk_characters=cjk,
                  continuation_pieces=len(continuation_pieces), learned_wordpieces=len(learned),
                  dropped_rare_characters=sum(1 for c, n in (initial + continuation).items()
                                              if n < min_count and c not in base_chars))
    return tokens, report


def write_vocab(tokens, output_file):
    """Writes one token per line under a temporary name, then renames it into place."""
    write_text_atomically(output_file, tokens)


@dataclasses.dataclass
class BuildVocabOptions:
    """Flags of `python -m data_gen.tools.build_vocab`."""
    input_file: str = cli_options.required("Comma-separated files or globs of the corpus "
                                           "(blank-line-separated documents, one sentence per "
                                           "line).")
    output_file: str = cli_options.required("Where to write the vocab (one token per line).")
    vocab_size: int = cli_options.option(None, "Exact number of lines to write (padded with "
                                         "[unused] slots). Default: as many as the corpus "
                                         "yields.")
    do_lower_case: bool = cli_options.option(True, "Lower-case and strip accents before "
                                             "counting (must match the generator's "
                                             "--do_lower_case).")
    full_width_to_half: bool = cli_options.option(False, "Fold full-width ASCII to half-width "
                                                  "(must match the generator's "
                                                  "--full_width_to_half).")
    min_count: int = cli_options.option(1, "Minimum frequency of a character or learned piece; "
                                        "rarer characters are left out and tokenize to [UNK].")
    num_unused: int = cli_options.option(99, "Number of [unused] slots after [PAD] (Google's "
                                         "vocabs have 99).")


def run(options):
    """Builds and writes the vocab of `options`; prints the account."""
    files = expand_input_patterns(options.input_file)
    tokens, report = build_vocab(files, vocab_size=options.vocab_size,
                                 do_lower_case=options.do_lower_case,
                                 min_count=options.min_count, num_unused=options.num_unused,
                                 full_width_to_half=options.full_width_to_half)
    write_vocab(tokens, options.output_file)
    print(f"build_vocab: read {len(files)} file(s): " + ", ".join(files))
    print("build_vocab: " + ", ".join(f"{key}={value}" for key, value in report.items()))
    print(f"build_vocab: wrote {len(tokens)} tokens to {options.output_file}")


def main(argv=None):
    cli_options.run_main(BuildVocabOptions, run, argv, expected=(CorpusError, VocabBuildError))


if __name__ == "__main__":
    main()
