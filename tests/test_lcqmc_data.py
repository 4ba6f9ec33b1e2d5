"""LCQMC reader, pair features and the keyed feature cache (finetune/lcqmc_data.py)."""
import json
import os

import pytest
import tensorflow.compat.v1 as tf

from finetune import lcqmc_data

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "想", "买", "手", "机",
         "怎", "么", "办", "卡", "丢", "了", "？", "abc", "##de"]


def write_lines(path, lines, encoding="utf-8"):
    with open(path, "wb") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else line.encode(encoding))
    return str(path)


@pytest.fixture
def vocab_file(tmp_path):
    return write_lines(tmp_path / "vocab.txt", [t + "\n" for t in VOCAB])


@pytest.fixture
def tokenizer(vocab_file):
    return lcqmc_data.load_tokenizer(vocab_file)


def test_header_skipped_and_malformed_lines_reported_by_line_number(tmp_path):
    path = write_lines(tmp_path / "train.txt", [
        "\ufefftext_a\ttext_b\tlabel\r\n",   # 1: header (with BOM, CRLF)
        "我想买手机\t买手机\t1\r\n",           # 2: ok
        "only one field\n",                  # 3: malformed (fields)
        "卡丢了\t怎么办\t2\n",                # 4: malformed (label)
        "\n",                                # 5: blank
        b"\xff\xfe bad\tbytes\t0\n",         # 6: malformed (not UTF-8)
        "\t怎么办\t0\n",                      # 7: malformed (empty sentence)
        "卡丢了\t怎么办\t0",                  # 8: ok, no final newline
    ])
    messages = []
    examples, report = lcqmc_data.read_pairs(path, log_fn=messages.append)
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
        ("train-2", "我想买手机", "买手机", 1), ("train-8", "卡丢了", "怎么办", 0)]
    assert report.header_skipped and report.blank_lines == 1 and report.lines == 8
    assert [line for line, _ in report.malformed] == [3, 4, 6, 7]
    for line in (3, 4, 6, 7):
        assert any(m.startswith(f"{path}:{line}: malformed line skipped") for m in messages)
    assert "found 1" in report.malformed[0][1] and "'2'" in report.malformed[1][1]
    assert "not UTF-8" in report.malformed[2][1]
    assert "4 malformed line(s) skipped" in messages[-1]


def test_first_line_with_a_label_is_data_not_header(tmp_path):
    path = write_lines(tmp_path / "dev.txt", ["我想\t买手机\t0\n", "卡\t丢\t1\n"])
    examples, report = lcqmc_data.read_pairs(path, log_fn=lambda m: None)
    assert len(examples) == 2 and not report.header_skipped


def test_limit_and_unusable_file(tmp_path):
    path = write_lines(tmp_path / "train.txt", [f"我{i}\t想\t{i % 2}\n" for i in range(10)])
    examples, report = lcqmc_data.read_pairs(path, limit=3, log_fn=lambda m: None)
    assert [e.text_a for e in examples] == ["我0", "我1", "我2"] and report.lines == 10
    bad = write_lines(tmp_path / "bad.txt", ["no tabs here\n"])
    with pytest.raises(lcqmc_data.DataError, match="no usable"):
        lcqmc_data.read_pairs(bad, log_fn=lambda m: None)
    with pytest.raises(lcqmc_data.DataError, match="no such file"):
        lcqmc_data.read_pairs(tmp_path / "missing.txt")


def test_truncate_pair_pops_from_longer_side():
    a, b = list("aaaaaa"), list("bbb")
    assert lcqmc_data.truncate_pair(a, b, 7)
    assert (len(a), len(b)) == (4, 3)
    a, b = list("aaa"), list("bbb")
    assert lcqmc_data.truncate_pair(a, b, 5) and (len(a), len(b)) == (3, 2)
    assert not lcqmc_data.truncate_pair(a, b, 5)


def test_convert_example_layout(tokenizer):
    example = lcqmc_data.PairExample("t-1", "我想买手机abcde", "卡丢了怎么办？", 1)
    features, truncated = lcqmc_data.convert_example(example, tokenizer, 15)
    tokens = tokenizer.convert_ids_to_tokens(features["input_ids"])
    # a: 我 想 买 手 机 abc ##de (7), b: 卡 丢 了 怎 么 办 ？ (7); 12 fit: b loses
    # one on the tie, then a (now the longer) loses one.
    assert truncated
    assert tokens == ["[CLS]", "我", "想", "买", "手", "机", "abc", "[SEP]",
                      "卡", "丢", "了", "怎", "么", "办", "[SEP]"]
    assert features["segment_ids"] == [0] * 8 + [1] * 7
    assert features["input_mask"] == [1] * 15
    short, truncated = lcqmc_data.convert_example(example, tokenizer, 20)
    assert not truncated and short["input_mask"] == [1] * 17 + [0] * 3
    assert short["segment_ids"] == [0] * 9 + [1] * 8 + [0] * 3
    assert short["input_ids"][-3:] == [0, 0, 0]
    assert features["label_ids"] == [1]


def read_records(path, max_seq_length):
    fn = lcqmc_data.input_fn_builder(path, max_seq_length, batch_size=100, is_training=False)
    features, labels = tf.data.make_one_shot_iterator(fn()).get_next()
    with tf.Session() as session:
        return session.run((features, labels))


def test_cache_round_trip_and_keying(tmp_path, tokenizer, vocab_file):
    data = write_lines(tmp_path / "train.txt",
                       ["我想买手机\t手机\t1\n", "卡丢了\t怎么办？\t0\n", "我想\t我想\t1\n"])
    cache = str(tmp_path / "cache")
    messages = []
    path, info = lcqmc_data.build_cached_features(data, tokenizer, 12, cache, "train",
                                                  log_fn=messages.append)
    assert info["num_examples"] == 3 and info["label_counts"] == [1, 2]
    assert not [n for n in os.listdir(cache) if ".tmp-" in n]
    with tf.Graph().as_default():
        features, labels = read_records(path, 12)
    examples, _ = lcqmc_data.read_pairs(data, log_fn=lambda m: None)
    for row, example in enumerate(examples):
        expected, _ = lcqmc_data.convert_example(example, tokenizer, 12)
        assert list(features["input_ids"][row]) == expected["input_ids"]
        assert list(features["segment_ids"][row]) == expected["segment_ids"]
        assert labels[row] == example.label

    messages.clear()
    same, _ = lcqmc_data.build_cached_features(data, tokenizer, 12, cache, "train",
                                               log_fn=messages.append)
    assert same == path and "reusing cached features" in messages[0]
    longer, _ = lcqmc_data.build_cached_features(data, tokenizer, 16, cache, "train",
                                                 log_fn=lambda m: None)
    assert longer != path
    other_vocab = write_lines(tmp_path / "vocab2.txt", [t + "\n" for t in VOCAB + ["新"]])
    other, _ = lcqmc_data.build_cached_features(
        data, lcqmc_data.load_tokenizer(other_vocab), 12, cache, "train", log_fn=lambda m: None)
    assert other not in (path, longer)
    write_lines(tmp_path / "train.txt", ["我想买手机\t手机\t0\n"])  # data changed
    changed, info = lcqmc_data.build_cached_features(data, tokenizer, 12, cache, "train",
                                                     log_fn=lambda m: None)
    assert changed != path and info["num_examples"] == 1

    # A sidecar whose key does not match (stale, hand-edited) is never trusted.
    with open(changed + ".json", encoding="utf-8") as f:
        stale = json.load(f)
    stale["key"]["max_seq_length"] = 99
    stale["num_examples"] = 12345
    with open(changed + ".json", "w", encoding="utf-8") as f:
        json.dump(stale, f)
    messages.clear()
    _, info = lcqmc_data.build_cached_features(data, tokenizer, 12, cache, "train",
                                               log_fn=messages.append)
    assert "rebuilding" in messages[0] and info["num_examples"] == 1


def test_shared_lcqmc_dev_reads_cleanly():
    from conftest import shared_path
    examples, report = lcqmc_data.read_pairs(shared_path("lcqmc", "dev.txt"), log_fn=lambda m: None)
    assert len(examples) == 8802 and not report.malformed
    assert {e.label for e in examples} == {0, 1}


@pytest.mark.parametrize("first_line, is_header", [
    ("text_a\ttext_b\tlabel", True), ("\ufeffsentence1\tsentence2\tlabel", True),
    ("我想\t买手机\t1", False), ("我想\t买手机\t2", False), ("我想\t买手机", False)])
def test_finetune_and_lcqmc_to_docs_share_one_parser_and_header_rule(tmp_path, first_line,
                                                                     is_header):
    import collections
    from data_gen import lcqmc_to_docs
    path = write_lines(tmp_path / "train.txt", [first_line + "\r\n", "卡丢了\t怎么办\t0\n"])
    examples, report = lcqmc_data.read_pairs(path, log_fn=lambda m: None)
    account = collections.Counter()
    pairs = lcqmc_to_docs.read_pairs(path, account, report=lambda m: None)
    assert [(e.text_a, e.text_b, e.label) for e in examples] == pairs
    assert report.header_skipped == is_header == (account["header_lines"] == 1)
    assert len(report.malformed) == account["malformed_lines"]
    assert [e.guid for e in examples][-1] == "train-2"


def test_fourth_field_is_a_condition_only_when_asked_for():
    from data_gen import lcqmc_format
    line = "我想\t买手机\t1\t0.5,1\r\n".encode()
    assert lcqmc_format.parse_line(line, 2) == (
        "malformed", "expected 3 tab-separated fields (text_a, text_b, label), found 4")
    assert lcqmc_format.parse_line(line, 2, condition_column=True) == (
        "pair", lcqmc_format.Pair(2, "我想", "买手机", 1, "0.5,1"))
    assert lcqmc_format.parse_line("我想\t买手机\t1\n".encode(), 2, condition_column=True) == (
        "pair", lcqmc_format.Pair(2, "我想", "买手机", 1, None))
    header = "\ufefftext_a\ttext_b\tlabel\tcondition\n".encode()
    assert lcqmc_format.parse_line(header, 1, condition_column=True) == ("header", None)
    assert lcqmc_format.parse_line(header, 1)[0] == "malformed"
    assert lcqmc_format.parse_line("a\tb\t1\t2\t3\n".encode(), 2, condition_column=True) == (
        "malformed", "expected 3 or 4 tab-separated fields (text_a, text_b, label[, condition]), "
                     "found 5")
