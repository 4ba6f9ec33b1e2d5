"""data_gen.runner.corpus_chunks: chunk byte ranges found without a pass over the corpus."""
import random

import pytest

from data_gen.runner import corpus_chunks
from data_gen.runner.corpus_chunks import CorpusLayout
from data_gen.text.corpus_reader import CorpusAccount, CorpusReader


def _open(path):
    return open(path, "rb")


def _layout(paths, chunk_bytes):
    return CorpusLayout([str(p) for p in paths], [p.stat().st_size for p in paths], chunk_bytes)


def _read_by_chunks(layout, **reader_options):
    """(documents of every chunk in order, summed account, chunk spans)."""
    account = CorpusAccount()
    reader = CorpusReader((), account=account, **reader_options)
    documents, spans = [], []
    for k in range(layout.num_chunks):
        span = layout.chunk(k, _open)
        spans.append(span)
        documents.extend(reader.read_span(span))
    return documents, account.as_dict(), spans


def _read_whole(paths, **reader_options):
    reader = CorpusReader([str(p) for p in paths], **reader_options)
    return list(reader), reader.account.as_dict()


def _random_corpus(tmp_path, seed):
    """Files with the awkward cases: BOM, CRLF, runs of blank lines, a blank line of
    ideographic spaces, invalid UTF-8, no final newline, an empty file, long lines."""
    rng = random.Random(seed)
    words = ["中文句子", "第二句话", "English words", "数字123", "ελληνικά", "😀表情"]
    paths = []
    for index in range(4):
        lines = []
        for _ in range(rng.randint(20, 60)):  # documents
            lines.extend(" ".join(rng.choices(words, k=rng.randint(1, 30)))
                         for _ in range(rng.randint(1, 6)))
            lines.append(rng.choice(["", "", "  ", "\u3000\u3000", "\t"]))
            if rng.random() < 0.1:
                lines.append("")
        if index == 1:
            lines.insert(5, "x" * 1000)  # longer than a probe of the blank-line search
        text = "\r\n".join(lines) if index == 2 else "\n".join(lines)
        data = text.encode("utf-8")
        if index == 0:
            data = b"\xef\xbb\xbf" + data
        if index == 3:
            data = data.replace(b"\n", b"\n\xff broken line\n", 1) + b"\nlast line, no newline"
        path = tmp_path / f"f{index}.txt"
        path.write_bytes(data)
        paths.append(path)
        if index == 1:
            empty = tmp_path / "f1_empty.txt"
            empty.write_bytes(b"")
            paths.append(empty)
    return paths


@pytest.fixture(autouse=True)
def small_probes(monkeypatch):
    """Probe reads of 256 bytes, so that lines and documents span several of them."""
    monkeypatch.setattr(corpus_chunks, "_PROBE_BYTES", 256)


def _longest_document_bytes(paths):
    return max(len(block) for path in paths
               for block in path.read_bytes().replace(b"\r\n", b"\n").split(b"\n\n"))


@pytest.mark.parametrize("cells_per_document", [1.01, 1.5, 3, 1000])
def test_chunks_read_back_the_same_documents_and_account(tmp_path, cells_per_document):
    paths = _random_corpus(tmp_path, seed=int(cells_per_document * 100))
    chunk_bytes = int(_longest_document_bytes(paths) * cells_per_document) + 8
    layout = _layout(paths, chunk_bytes)
    options = dict(on_decode_error="skip")
    whole_documents, whole_account = _read_whole(paths, **options)
    documents, account, spans = _read_by_chunks(layout, **options)
    assert layout.num_chunks == max(1, -(-layout.total // chunk_bytes))
    # The spans tile the stream: each starts where the one before it ended.
    assert spans[0].start == 0 and spans[-1].end == layout.total
    assert all(a.end == b.start for a, b in zip(spans, spans[1:]))
    # Every cell is longer than any document, so it holds a blank line: no document is
    # cut, and reading chunk by chunk gives what reading the files whole gives.
    assert not any(span.starts_inside_document for span in spans)
    assert documents == whole_documents
    assert account == whole_account
    assert account["files"] == len(paths) and account["empty_files"] == 1
    assert account["files_with_bom"] == 1 and account["lines_skipped_invalid_utf8"] == 1


def test_boundaries_fall_on_blank_lines_near_the_grid(tmp_path):
    path = tmp_path / "a.txt"
    documents = [f"doc{i} sentence one\ndoc{i} sentence two\n" for i in range(200)]
    path.write_text("\n".join(documents), encoding="utf-8")
    data = path.read_bytes()
    layout = _layout([path], 1000)
    for k in range(1, layout.num_chunks):
        start, cut = layout.boundary(k, _open)
        assert not cut and start >= k * 1000
        assert data[start - 1:start] == b"\n" and data[start:start + 1] == b"\n"  # a blank line
        # ... and the first one after the grid point.
        assert b"\n\n" not in data[k * 1000 - 1:start]


def test_a_document_longer_than_a_chunk_is_cut_and_counted(tmp_path):
    path = tmp_path / "long_document.txt"
    lines = [f"sentence {i:04d}" for i in range(600)]  # ~8.4 KB, no blank line
    path.write_text("\n".join(lines) + "\n\nshort document\n", encoding="utf-8")
    layout = _layout([path], 2048)
    documents, account, spans = _read_by_chunks(layout)
    # Cells 1-3 lie inside the long document; cell 4 holds the blank line after it.
    assert layout.num_chunks == 5
    assert [span.starts_inside_document for span in spans] == [False, True, True, True, False]
    assert account["chunk_starts_inside_document"] == 3
    assert [sentence for document in documents for sentence in document] == lines + [
        "short document"]
    assert len(documents) == 4 + 1  # the long one in 4 pieces, then the short one
    data = path.read_bytes()
    for span in spans:  # cut at line starts only
        assert span.start == 0 or data[span.start - 1:span.start] == b"\n"


def test_file_starts_are_chunk_boundaries_and_files_are_counted_once(tmp_path):
    paths = []
    for index, size in enumerate([3000, 0, 1000, 4096, 0]):
        path = tmp_path / f"{index}.txt"
        lines = ["句子" * 10] * (size // 31)
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    layout = _layout(paths, 1024)
    documents, account, spans = _read_by_chunks(layout)
    whole_documents, whole_account = _read_whole(paths)
    assert account["files"] == 5 and account["empty_files"] == 2
    assert account["bytes"] == layout.total
    # Files without blank lines are cut at chunk starts; their sentences all come back.
    assert [s for d in documents for s in d] == [s for d in whole_documents for s in d]
    owners = [segment.path for span in spans for segment in span.segments if segment.owns_file]
    assert sorted(owners) == sorted(str(p) for p in paths)


@pytest.mark.parametrize("chunk_bytes", [64, 300, 777])
def test_small_chunks_cut_documents_but_lose_no_sentence(tmp_path, chunk_bytes):
    paths = _random_corpus(tmp_path, seed=chunk_bytes)
    layout = _layout(paths, chunk_bytes)
    whole_documents, whole_account = _read_whole(paths, on_decode_error="skip")
    documents, account, spans = _read_by_chunks(layout, on_decode_error="skip")
    assert [s for d in documents for s in d] == [s for d in whole_documents for s in d]
    cuts = sum(span.starts_inside_document for span in spans)
    assert 0 < cuts and len(documents) <= len(whole_documents) + cuts
    assert account["sentences"] == whole_account["sentences"]
    assert account["files"] == whole_account["files"]
