"""Turns LCQMC question pairs into a pretraining corpus of documents.

    python -m data_gen.tools.lcqmc_to_docs --lcqmc_dir ../shared/data/lcqmc \
        --output_file output/lcqmc_docs.txt

Input lines are `text_a<TAB>text_b<TAB>label` (label 1 = paraphrase), or with a
4th condition field as fine-tuning reads them (the condition is not text: it is
counted as `condition_fields_ignored` and left out). Output:
blank-line-separated documents, one sentence per line (the generator's input
format):
  * a paraphrase pair (label 1) is one two-sentence document `a`, `b`;
  * the sentences of a non-paraphrase pair (label 0) are one-sentence documents.
With --noparaphrase_documents every distinct sentence is instead a one-sentence
document, written once, in file order: for sentence-order prediction (ALBERT),
whose two segments must have an order to predict, which two paraphrases lack.
Duplicates are removed, deterministically, in file order:
  * a paraphrase pair already written (in either order) is not written again;
  * a one-sentence document is written only for a sentence that appears in no
    paraphrase document and was not written as a one-sentence document before,
    so a question asked in many pairs does not dominate the corpus.
Only the train split is read by default, so dev/test questions never leak into
pretraining; `--allow_eval_splits` is needed to include them (with a warning).
The lines are parsed by data_gen.tools.lcqmc_format (its header rule; malformed
lines are reported as FILE:LINE and counted). The output is written under a
temporary name and renamed at the end.
"""
import collections
import dataclasses
import os
import sys

from common import cli_options
from data_gen.tools import lcqmc_format
from common.file_utils import write_text_atomically
from data_gen.tools.lcqmc_format import LcqmcError  # also for bad arguments (eval split, ...)

EVAL_SPLITS = ("dev", "test")


def split_path(lcqmc_dir, split):
    """Path of `split` in `lcqmc_dir` (`split.txt` or `split.tsv`)."""
    for extension in (".txt", ".tsv"):
        path = os.path.join(lcqmc_dir, split + extension)
        if os.path.isfile(path):
            return path
    raise LcqmcError(f"no file for split {split!r} in {lcqmc_dir} (looked for {split}.txt "
                     f"and {split}.tsv); put LCQMC there as text_a<TAB>text_b<TAB>label lines.")


def parse_split_names(splits, allow_eval_splits):
    """Comma-separated split names; dev/test only with allow_eval_splits."""
    names = [name.strip() for name in splits.split(",") if name.strip()]
    if not names:
        raise LcqmcError("--splits is empty; give e.g. --splits=train")
    leaking = [name for name in names if name in EVAL_SPLITS]
    if leaking and not allow_eval_splits:
        raise LcqmcError(
            f"--splits={splits} includes evaluation split(s) {', '.join(leaking)}: their text "
            "would leak into pretraining and inflate the fine-tuning scores. Use the train "
            "split only, or pass --allow_eval_splits if you really mean it.")
    return names


def read_pairs(path, account, report=print, max_malformed_share=1.0):
    """Returns [(text_a, text_b, label)] of one LCQMC file, counting into `account`; stops
    (LcqmcError) past `max_malformed_share` malformed lines."""
    pairs, read_report = lcqmc_format.read_pairs(
        path, log_fn=lambda message: report(f"lcqmc_to_docs: {message}"), condition_column=True)
    lcqmc_format.check_malformed_share(read_report, max_malformed_share)
    account["lines_read"] += read_report.lines
    account["header_lines"] += int(read_report.header_skipped)
    account["blank_lines"] += read_report.blank_lines
    account["malformed_lines"] += len(read_report.malformed)
    account["pairs"] += len(pairs)
    account["paraphrase_pairs"] += sum(pair.label == 1 for pair in pairs)
    account["non_paraphrase_pairs"] += sum(pair.label == 0 for pair in pairs)
    account["condition_fields_ignored"] += sum(pair.condition is not None for pair in pairs)
    return [(pair.text_a, pair.text_b, pair.label) for pair in pairs]


def pairs_to_documents(pairs, account, paraphrase_documents=True):
    """Turns (a, b, label) pairs into deduplicated documents (lists of sentences).

    See the module docstring for the rules. `pairs` is consumed twice, so it
    must be a list. Counts go into `account`.
    """
    if not paraphrase_documents:
        return _sentence_documents(pairs, account)
    in_paraphrase = set()
    for text_a, text_b, label in pairs:
        if label == 1 and text_a != text_b:
            in_paraphrase.update((text_a, text_b))
    documents = []
    written_pairs = set()
    written_singles = set()
    for text_a, text_b, label in pairs:
        if label == 1 and text_a != text_b:
            key = frozenset((text_a, text_b))
            if key in written_pairs:
                account["duplicate_documents_removed"] += 1
                continue
            written_pairs.add(key)
            documents.append([text_a, text_b])
            continue
        for sentence in (text_a, text_b):
            if sentence in in_paraphrase or sentence in written_singles:
                account["repeated_sentences_removed"] += 1
                continue
            written_singles.add(sentence)
            documents.append([sentence])
    return documents


def _sentence_documents(pairs, account):
    """Every distinct sentence of `pairs` once, in file order, as a one-sentence document."""
    documents = []
    written = set()
    for text_a, text_b, _ in pairs:
        for sentence in (text_a, text_b):
            if sentence in written:
                account["repeated_sentences_removed"] += 1
                continue
            written.add(sentence)
            documents.append([sentence])
    return documents


def write_documents(documents, output_file):
    """Writes documents blank-line separated, atomically (temporary name + rename)."""
    def lines():
        for index, document in enumerate(documents):
            if index:
                yield ""
            yield from document

    write_text_atomically(output_file, lines())


def convert(lcqmc_dir, output_file, splits="train", allow_eval_splits=False, report=print,
            paraphrase_documents=True, max_malformed_share=lcqmc_format.MAX_MALFORMED_SHARE):
    """Reads the splits, writes the documents, returns the account (a Counter)."""
    names = parse_split_names(splits, allow_eval_splits)
    paths = [split_path(lcqmc_dir, name) for name in names]
    leaking = [name for name in names if name in EVAL_SPLITS]
    if leaking:
        report(f"lcqmc_to_docs: WARNING: including evaluation split(s) {', '.join(leaking)}; "
               "a model pretrained on this corpus has seen the dev/test questions, so its "
               "LCQMC dev/test accuracy is no longer a fair measure.")
    account = collections.Counter(files=len(paths))
    pairs = []
    for path in paths:
        pairs.extend(read_pairs(path, account, report, max_malformed_share))
    documents = pairs_to_documents(pairs, account, paraphrase_documents)
    write_documents(documents, output_file)
    account["documents_written"] = len(documents)
    account["two_sentence_documents"] = sum(1 for d in documents if len(d) == 2)
    account["one_sentence_documents"] = sum(1 for d in documents if len(d) == 1)
    account["sentences_written"] = sum(len(d) for d in documents)
    return account


ACCOUNT_ORDER = ("files", "lines_read", "header_lines", "blank_lines", "malformed_lines", "pairs",
                 "paraphrase_pairs", "non_paraphrase_pairs", "condition_fields_ignored",
                 "documents_written",
                 "two_sentence_documents", "one_sentence_documents", "sentences_written",
                 "duplicate_documents_removed", "repeated_sentences_removed")

@dataclasses.dataclass
class LcqmcToDocsOptions:
    """Flags of `python -m data_gen.tools.lcqmc_to_docs`."""
    lcqmc_dir: str = cli_options.required("Directory holding LCQMC train.txt (dev.txt, "
                                          "test.txt).")
    output_file: str = cli_options.required("Where to write the documents.")
    splits: str = cli_options.option("train", "Comma-separated splits to read.")
    allow_eval_splits: bool = cli_options.option(False, "Allow dev/test in --splits (their text "
                                                 "then leaks into pretraining; a warning is "
                                                 "printed).")
    paraphrase_documents: bool = cli_options.option(
        True, "Write a paraphrase pair as one two-sentence document; with "
        "--noparaphrase_documents every distinct sentence is its own document (for "
        "a sentence-order task: two paraphrases have no order to predict).")
    max_malformed_share: float = cli_options.option(
        lcqmc_format.MAX_MALFORMED_SHARE, "Stop if more than this share of a file's lines are "
        "malformed (below it they are dropped and counted).")


def run(options):
    """Converts and prints the account."""
    account = convert(options.lcqmc_dir, options.output_file, options.splits,
                      options.allow_eval_splits,
                      report=lambda message: print(message, file=sys.stderr),
                      paraphrase_documents=options.paraphrase_documents,
                      max_malformed_share=options.max_malformed_share)
    print("lcqmc_to_docs: " + ", ".join(f"{key}={account[key]}" for key in ACCOUNT_ORDER))
    print(f"lcqmc_to_docs: wrote {options.output_file}")


def main(argv=None):
    cli_options.run_main(LcqmcToDocsOptions, run, argv, expected=(LcqmcError,))


if __name__ == "__main__":
    main()
