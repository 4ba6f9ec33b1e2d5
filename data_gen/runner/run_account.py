"""A data_gen run's account and its end: what it read, dropped and wrote (`make_account`,
`format_account`), why an empty run made nothing (`why_empty`), and the errors every
runner reports in one line without a traceback (`USER_ERRORS`). Shared by the local run
(data_gen.create_pretraining_data) and Beam (data_gen.runner.beam_pipeline).
"""
from data_gen import modes
from data_gen.config import ConfigError
from data_gen.runner.worker_profile import format_profile
from data_gen.text import vocab_gaps
from data_gen.text.corpus_reader import CorpusError
from data_gen.text.segmentation import SegmenterError
from data_gen.text.tokenization import VocabError


class EmptyOutputError(ConfigError):
    """The run made no instance; nothing is written."""


USER_ERRORS = (ConfigError, CorpusError, VocabError, SegmenterError, FileNotFoundError)


def why_empty(account, files, document_split=None, mode=None):
    """The message for a run that made no instance: what was read and what dropped it."""
    if document_split is not None and document_split.split == "eval":
        return (f"no held-out instances: --eval_share={document_split.share} of "
                f"{account.get('documents', 0)} documents left "
                f"{account.get('documents', 0) - account.get('documents_in_other_split', 0)} "
                "for evaluation, too few for one record; raise --eval_share or add documents; "
                "no output was written")
    dropped = ", ".join(f"{key}={value}" for key, value in sorted(_skipped(account).items())
                        if value) or "nothing was dropped"
    return (f"no instances were made from {len(files)} file(s) ({account.get('documents', 0)} "
            f"documents, {account.get('sentences', 0)} sentences); dropped: {dropped}. Check "
            "that --input_file holds one sentence per line with a blank line between documents "
            f"({_needs(mode)}) and that the text tokenizes with --vocab_file; no output "
            "was written")


def _needs(mode):
    """What the corpus must give to make a record: of --mode `mode`, else of every mode."""
    chosen = [modes.MODES[mode]] if mode in modes.MODES else modes.MODES.values()
    return "; ".join(f"--mode={each.name} needs {each.needs}" for each in chosen if each.needs)


def _skipped(account):
    return {key: value for key, value in account.items()
            if ("skipped" in key or "too_short" in key or "cut_at" in key
                or key in ("empty_files", "long_line_pieces", "chunk_starts_inside_document"))}


def make_account(work_counts, totals, total_bytes, seconds, num_workers):
    account = vocab_gaps.summarize(dict(sorted(work_counts.items())))
    account["instances"] = totals.total("instances")
    account["masked_tokens"] = totals.total("masked_tokens")
    account["input_bytes"] = total_bytes
    account["num_workers"] = num_workers
    account["seconds"] = round(seconds, 3)
    account["mb_per_second"] = round(total_bytes / 1e6 / max(seconds, 1e-9), 4)
    return account


def _masking_line(account):
    """The recipe, and for macbert what the similar-words table kept and dropped."""
    line = f"[data_gen] masking: {account.get('masking', '?')}"
    prefix = "similar_words_"
    table = {key[len(prefix):]: value for key, value in account.items()
             if key.startswith(prefix)}
    if table:
        dropped = ", ".join(f"{key}={value}" for key, value in sorted(table.items())
                            if "dropped" in key)
        line += (f"; similar words: {table.get('words_kept', 0)} of "
                 f"{table.get('words_read', 0)} words kept, {table.get('candidates_kept', 0)} "
                 f"of {table.get('candidates_read', 0)} candidates kept"
                 + (f" (dropped: {dropped})" if dropped else ""))
    return line


def format_account(account):
    """Human-readable end-of-run report."""
    skipped = _skipped(account)
    lines = [
        "[data_gen] read: {files} files, {documents} documents, {sentences} sentences, "
        "{mb:.2f} MB".format(files=account.get("files", 0), documents=account.get("documents", 0),
                             sentences=account.get("sentences", 0),
                             mb=account.get("input_bytes", 0) / 1e6),
        "[data_gen] skipped/adjusted: " + (", ".join(f"{key}={value}" for key, value in
                                                   sorted(skipped.items())) or "nothing"),
        *vocab_gaps.account_lines(account, account.get("input_file")),
        _masking_line(account),
        *modes.report_lines(account),
        "[data_gen] wrote: {instances} instances, {masked} masked tokens to {n} file(s)".format(
            instances=account.get("instances", 0), masked=account.get("masked_tokens", 0),
            n=len(account.get("output_files", []))),
        "[data_gen] speed: {mbps:.3f} MB/s of input ({sec:.1f} s, {workers})".format(
            mbps=account.get("mb_per_second", 0.0), sec=account.get("seconds", 0.0),
            workers=account.get("runner") or f"{account.get('num_workers', 1)} workers"),
    ]
    if "eval" in account:
        lines.insert(-1, _held_out_line(account))
    if "profile" in account:
        lines.append(format_profile(account["profile"]))
    return "\n".join(lines)


def _held_out_line(account):
    """--eval_share: what the second pass held out, and where it went."""
    held_out = account["eval"]
    documents = held_out.get("documents", 0) - held_out.get("documents_in_other_split", 0)
    return ("[data_gen] held out for eval: {documents} of {total} documents (trained on: the "
            "other {train}) -> {instances} instances, {masked} masked tokens in {files}".format(
                documents=documents, total=held_out.get("documents", 0),
                train=account.get("documents", 0) - account.get("documents_in_other_split", 0),
                instances=held_out.get("instances", 0),
                masked=held_out.get("masked_tokens", 0),
                files=", ".join(held_out.get("output_files", []))))
