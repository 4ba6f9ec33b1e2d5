"""data_gen.text.corpus_reader: every kind of awkward input and its account."""
import pytest

from data_gen.text.corpus_reader import CorpusError, CorpusReader, expand_input_patterns


def _read(paths, **kwargs):
    reader = CorpusReader([str(p) for p in paths], **kwargs)
    return list(reader), reader.account.as_dict()


def test_bom_crlf_trailing_spaces_and_blank_line_runs(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbf\xe4\xb8\x80 \t\r\n\xe4\xba\x8c\r\n\r\n \r\n\t\r\n\r\n"
                     b"three  \r\nfour\r\n\r\n\r\n")
    documents, account = _read([path])
    assert documents == [["一", "二"], ["three", "four"]]
    assert account["files_with_bom"] == 1
    assert account["documents"] == 2 and account["sentences"] == 4


def test_control_characters_and_emoji_survive_reading(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("你好😀\x07世界\nmixed 中文 text ελληνικά\n", encoding="utf-8")
    documents, _ = _read([path])
    assert documents == [["你好😀\x07世界", "mixed 中文 text ελληνικά"]]


def test_empty_file_is_counted_and_files_end_documents(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    first = tmp_path / "first.txt"
    first.write_text("a\nb", encoding="utf-8")  # no final newline
    second = tmp_path / "second.txt"
    second.write_text("c\n", encoding="utf-8")
    documents, account = _read([empty, first, second])
    assert documents == [["a", "b"], ["c"]]
    assert account["files"] == 3 and account["empty_files"] == 1


def test_non_utf8_names_file_and_byte_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes("好\n".encode("utf-8") + b"ok \xff\xfe here\nfine\n")
    with pytest.raises(CorpusError) as error:
        _read([path])
    message = str(error.value)
    assert str(path) in message and "line 2 (byte offset 7)" in message  # 4 bytes + "ok "
    assert "--on_decode_error=skip" in message


def test_non_utf8_skip_policy_counts_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"one\n\x80bad\ntwo\n\n\xc3\x28\n")
    documents, account = _read([path], on_decode_error="skip")
    assert documents == [["one", "two"]]
    assert account["lines_skipped_invalid_utf8"] == 2


def test_file_without_blank_lines_streams_in_capped_documents(tmp_path):
    path = tmp_path / "one_doc.txt"
    path.write_text("".join(f"sentence {i}\n" for i in range(25)), encoding="utf-8")
    reader = CorpusReader([str(path)], max_sentences_per_document=10)
    iterator = iter(reader)
    first = next(iterator)  # available before the rest of the file is needed
    assert first == [f"sentence {i}" for i in range(10)]
    rest = list(iterator)
    assert [len(d) for d in rest] == [10, 5]
    assert reader.account.counts["documents_cut_at_sentence_cap"] == 2


def test_very_long_line_is_read_in_pieces_at_character_boundaries(tmp_path):
    path = tmp_path / "long.txt"
    line = "汉字" * 5000 + "end"
    path.write_text(line + "\nnext\n", encoding="utf-8")
    documents, account = _read([path], max_line_bytes=1001)  # not a multiple of 3
    (document,) = documents
    assert "".join(document[:-1]) == line and document[-1] == "next"
    assert max(len(s.encode("utf-8")) for s in document) <= 1001 + 3  # + a carried char
    assert account["long_line_pieces"] >= 29


def test_expand_patterns_sorted_deduplicated_and_excluding_sidecars(tmp_path):
    for name in ("b.txt", "a.txt", "a.txt.meta.json"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    files = expand_input_patterns(f"{tmp_path}/*, {tmp_path}/a.txt")
    assert files == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    with pytest.raises(CorpusError, match="matches no file"):
        expand_input_patterns(f"{tmp_path}/*.nothing")
