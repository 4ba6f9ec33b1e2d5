"""Fine-tuning records: text encoding (finetune/tasks/classification.py), NER windows
(finetune/tasks/ner.py), the keyed feature cache and the input_fn (finetune/features.py),
and the LCQMC reading rules fine-tuning shares with data_gen.tools.lcqmc_to_docs."""
import collections
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen.tools import lcqmc_format
from data_gen.text.tokenization import FullTokenizer
from finetune import features, formats, tasks
from finetune.tasks import classification
from finetune.tasks.base import TaskDataError

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "想", "买", "手", "机",
         "怎", "么", "办", "卡", "丢", "了", "？", "abc", "##de", "##abc"]


def write_lines(path, lines):
    with open(path, "wb") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else line.encode("utf-8"))
    return str(path)


@pytest.fixture
def vocab_file(tmp_path):
    return write_lines(tmp_path / "vocab.txt", [t + "\n" for t in VOCAB])


@pytest.fixture
def tokenizer(vocab_file):
    return FullTokenizer(vocab_file, do_lower_case=True)


def ids(tokenizer, tokens):
    return tokenizer.convert_tokens_to_ids(tokens)


# ---- sequence records -----------------------------------------------------------------------
def test_truncate_pair_pops_from_longer_side():
    a, b = list("aaaaaa"), list("bbb")
    assert classification.truncate_pair(a, b, 7)
    assert (len(a), len(b)) == (4, 3)
    a, b = list("aaa"), list("bbb")
    assert classification.truncate_pair(a, b, 5) and (len(a), len(b)) == (3, 2)
    assert not classification.truncate_pair(a, b, 5)


def test_encode_pair_layout_and_truncation(tokenizer):
    input_ids, mask, segments, truncated = classification.encode_texts(
        ("我想买手机abcde", "卡丢了怎么办？"), tokenizer, 15)
    # a: 我 想 买 手 机 abc ##de (7), b: 卡 丢 了 怎 么 办 ？ (7); 12 fit: b loses
    # one on the tie, then a (now the longer) loses one.
    assert truncated
    assert tokenizer.convert_ids_to_tokens(input_ids) == [
        "[CLS]", "我", "想", "买", "手", "机", "abc", "[SEP]",
        "卡", "丢", "了", "怎", "么", "办", "[SEP]"]
    assert segments == [0] * 8 + [1] * 7 and mask == [1] * 15
    input_ids, mask, segments, truncated = classification.encode_texts(
        ("我想买手机abcde", "卡丢了怎么办？"), tokenizer, 20)
    assert not truncated and mask == [1] * 17 + [0] * 3
    assert segments == [0] * 9 + [1] * 8 + [0] * 3 and input_ids[-3:] == [0, 0, 0]


def test_encode_single_text_cuts_the_end_and_has_one_segment(tokenizer):
    input_ids, mask, segments, truncated = classification.encode_texts(
        ("我想买手机",), tokenizer, 6)
    assert truncated and tokenizer.convert_ids_to_tokens(input_ids) == [
        "[CLS]", "我", "想", "买", "手", "[SEP]"]
    assert segments == [0] * 6 and mask == [1] * 6
    input_ids, mask, segments, truncated = classification.encode_texts(("卡丢了",), tokenizer, 8)
    assert not truncated
    assert input_ids == ids(tokenizer, ["[CLS]", "卡", "丢", "了", "[SEP]"]) + [0] * 3
    assert mask == [1] * 5 + [0] * 3 and segments == [0] * 8
    with pytest.raises(TaskDataError) as error:
        classification.encode_texts(("我", "想"), tokenizer, 4)
    assert str(error.value) == ("--max_seq_length=4 leaves no room for 2 text(s) and 3 special "
                                "tokens")


def test_classification_featurize_maps_labels_and_counts_truncation(tokenizer):
    task = tasks.get_task("pair")
    examples = [formats.TextExample(2, ("我想", "买手机"), "yes"),
                formats.TextExample(3, ("卡丢了怎么办", "我想买手机"), "no"),
                formats.TextExample(4, ("我", "想"), None)]  # unlabelled (test file)
    records, plan, counts = task.featurize(examples, tokenizer, 8, ["no", "yes"], path="t.tsv")
    assert plan is None and counts == {"examples": 3, "records": 3, "truncated": 1}
    assert [r["label_ids"] for r in records] == [[1], [0], [0]]
    assert records[0]["input_ids"] == ids(tokenizer, ["[CLS]", "我", "想", "[SEP]", "买", "手",
                                                      "机", "[SEP]"])
    assert all("condition" not in r for r in records)
    assert set(records[0]) == set(features.record_spec("sequence", 8).lengths)


def test_parse_conditions_of_tsv_and_json_sources(tmp_path):
    tsv = write_lines(tmp_path / "train.tsv", ["text_a\ttext_b\tlabel\tcondition\n",
                                               "我\t想\t1\t1\n", "卡\t丢\t0\t0.5, -2\n"])
    examples, _ = formats.read_text_examples(tsv, "pair", log_fn=lambda m: None)
    assert classification.parse_conditions(examples, tsv, 2) == [(0.0, 1.0), (0.5, -2.0)]
    jsonl = write_lines(tmp_path / "dev.json", [
        json.dumps({"sentence1": "我", "sentence2": "想", "label": "1", "condition": 0}) + "\n",
        json.dumps({"sentence1": "卡", "sentence2": "丢", "label": "0"}) + "\n"])
    examples, _ = formats.read_text_examples(jsonl, "pair", log_fn=lambda m: None)
    assert [e.condition for e in examples] == ["0", None]
    with pytest.raises(TaskDataError) as error:
        classification.parse_conditions(examples, jsonl, 2)
    assert str(error.value).startswith(f"{jsonl}:2: no condition: the model config sets "
                                       "layer_norm_cond_size=2")
    plain = [formats.TextExample(1, ("我",), "1"), formats.TextExample(2, ("想",), "0")]
    assert classification.parse_conditions(plain, "x.tsv", None) == [None, None]


# ---- NER windows ----------------------------------------------------------------------------
def ner_task():
    task = tasks.get_task("ner")
    task.scheme = "BIO"
    return task


NER_LABELS = ["O", "B-PER", "I-PER"]


def test_ner_windows_keep_every_token_and_tag_first_pieces(tokenizer):
    task = ner_task()
    chars = ["我", "想", "abcde", "买", " ", "手", "机"]
    tags = ["B-PER", "I-PER", "O", "O", "O", "B-PER", "I-PER"]
    sentence = formats.TaggedExample(1, chars, tags)
    empty = formats.TaggedExample(9, [], [])
    records, plan, counts = task.featurize([sentence, empty], tokenizer, 6, NER_LABELS)
    # budget 4 pieces: [我 想 abc ##de] | [买 (space: no piece) 手 机]; the empty sentence
    # still gets its record, so every example has a prediction.
    assert counts == {"examples": 2, "records": 3, "tokens": 7, "tokens_without_pieces": 1,
                      "split_sentences": 1, "pieces_truncated": 0}
    assert plan == [(0, [(1, 0), (2, 1), (3, 2)]), (0, [(1, 3), (2, 5), (3, 6)]), (1, [])]
    first, second, third = records
    assert first["input_ids"] == ids(tokenizer, ["[CLS]", "我", "想", "abc", "##de", "[SEP]"])
    assert first["label_ids"] == [0, 1, 2, 0, 0, 0]
    assert first["label_weights"] == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]  # ##de is not scored
    assert first["input_mask"] == [1] * 6 and first["segment_ids"] == [0] * 6
    assert second["input_ids"] == ids(tokenizer, ["[CLS]", "买", "手", "机", "[SEP]"]) + [0]
    assert second["label_ids"] == [0, 0, 1, 2, 0, 0]
    assert second["label_weights"] == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert second["input_mask"] == [1] * 5 + [0]
    assert third["input_ids"] == ids(tokenizer, ["[CLS]", "[SEP]"]) + [0] * 4
    assert third["label_weights"] == [0.0] * 6
    assert all(set(r) == set(features.record_spec("token", 6).lengths) for r in records)

    # Predictions of the windows map back to every token; the space is "O".
    def one_hot(rows):
        table = np.zeros((6, 3))
        table[np.arange(6), rows] = 1.0
        return {"tag_probabilities": table}
    predictions = [one_hot([0, 1, 2, 1, 0, 0]), one_hot([0, 0, 1, 2, 0, 0]), one_hot([0] * 6)]
    collected = task.collect([sentence, empty], plan, predictions, NER_LABELS)
    assert collected["predicted"] == [["B-PER", "I-PER", "B-PER", "O", "O", "B-PER", "I-PER"], []]
    # 6 scored tokens (the space has no piece): 5 right (-log 1 = 0), "abcde" wrong; float64
    # arithmetic, so approx's default (relative 1e-6) is far above its rounding
    assert collected["loss"] == pytest.approx(-np.log(1e-12) / 6)
    assert task.score([sentence], {"predicted": collected["predicted"][:1], "loss": 0.0},
                      NER_LABELS)["f1"] == pytest.approx(0.8)  # 2 of 3 predicted, 2 of 2 gold


def test_ner_token_longer_than_a_window_and_unlabelled_sentences(tokenizer):
    task = ner_task()
    sentence = formats.TaggedExample(3, ["abcdeabc", "我"], None)  # a test sentence: no tags
    records, plan, counts = task.featurize([sentence], tokenizer, 4, NER_LABELS)
    # budget 2: "abcdeabc" = abc ##de ##abc keeps its first 2 pieces; 我 opens a new window
    assert counts["pieces_truncated"] == 1 and counts["records"] == 2
    assert plan == [(0, [(1, 0)]), (0, [(1, 1)])]
    assert records[0]["input_ids"] == ids(tokenizer, ["[CLS]", "abc", "##de", "[SEP]"])
    assert records[0]["label_ids"] == [0, 0, 0, 0]
    with pytest.raises(TaskDataError, match="max_seq_length=2: NER needs at least 3"):
        task.featurize([sentence], tokenizer, 2, NER_LABELS)
    with pytest.raises(TaskDataError, match="does not feed a condition"):
        task.featurize([sentence], tokenizer, 8, NER_LABELS, condition_size=2)


# ---- the cache -------------------------------------------------------------------------------
def test_cache_key_covers_files_and_settings(tmp_path, vocab_file):
    data = write_lines(tmp_path / "train.txt", ["我想\t买手机\t1\n"])
    key, key_hash = features.cache_key(data, vocab_file, task="pair", max_seq_length=8,
                                       labels=["0", "1"], input_format=None)
    assert key["data_sha256"] != key["vocab_sha256"] and len(key_hash) == 16
    assert "input_format" not in key  # None settings stay out of the key
    assert key == dict(key, task="pair", max_seq_length=8, labels=["0", "1"],
                       format_version=features.CACHE_FORMAT_VERSION)
    same = features.cache_key(data, vocab_file, labels=["0", "1"], max_seq_length=8, task="pair")
    assert same == (key, key_hash)
    hashes = {key_hash}
    for changed in ({"max_seq_length": 9}, {"labels": ["1", "0"]}, {"task": "classification"},
                    {"condition_size": 2}):
        hashes.add(features.cache_key(data, vocab_file, **dict(
            {"task": "pair", "max_seq_length": 8, "labels": ["0", "1"]}, **changed))[1])
    other_vocab = write_lines(tmp_path / "vocab2.txt", [t + "\n" for t in VOCAB + ["新"]])
    hashes.add(features.cache_key(data, other_vocab, task="pair", max_seq_length=8,
                                  labels=["0", "1"])[1])
    write_lines(data, ["我想\t买手机\t0\n"])
    hashes.add(features.cache_key(data, vocab_file, task="pair", max_seq_length=8,
                                  labels=["0", "1"])[1])
    assert len(hashes) == 7


def read_all(record_path, spec, batch_size=100, batching=features.Batching()):
    with tf.Graph().as_default():
        fn = features.input_fn_builder(record_path, spec, batch_size, is_training=False,
                                       batching=batching)
        batch = tf.data.make_one_shot_iterator(fn()).get_next()
        with tf.Session() as session:
            return session.run(batch)


def test_input_pipelines_run_without_tf_data_autotuning():
    """Nothing in them is tuned, and an autotuned dataset's model thread sometimes made
    closing the training session wait 15 s or more (features._UNTUNED)."""
    spec = features.record_spec("sequence", 12)
    for is_training, batching in ((True, features.Batching()),
                                  (True, features.Batching(group_by_length=True)),
                                  (False, features.Batching(pad_to_multiple_of=8))):
        with tf.Graph().as_default():
            dataset = features.input_fn_builder("unread.tfrecord", spec, 4, is_training,
                                                seed=1, batching=batching)()
            assert dataset.options().autotune.enabled is False


def test_cached_records_round_trip_reuse_and_rebuild(tmp_path, tokenizer, vocab_file):
    data = write_lines(tmp_path / "train.txt",
                       ["我想买手机\t手机\t1\n", "卡丢了\t怎么办？\t0\n", "我想\t我想\t1\n"])
    cache = str(tmp_path / "cache")
    task = tasks.get_task("pair")
    made = []

    def build(max_seq_length):
        def make():
            examples, _ = task.read(data, {}, True, lambda m: None)
            made.append(max_seq_length)
            records, _, counts = task.featurize(examples, tokenizer, max_seq_length, ["0", "1"])
            return records, counts
        key, key_hash = features.cache_key(data, vocab_file, task="pair",
                                           max_seq_length=max_seq_length)
        return features.cached_records("train", cache, key, key_hash,
                                       features.record_spec("sequence", max_seq_length), make,
                                       log_fn=messages.append)

    messages = []
    path, info = build(12)
    assert info["num_records"] == 3 and info["records"] == 3 and info["truncated"] == 0
    assert messages == [f"train: wrote 3 records to {path}"]
    assert sorted(os.listdir(cache)) == sorted([os.path.basename(path),
                                                os.path.basename(path) + ".json"])  # no temp
    # Read back padded to max_seq_length: exactly the task's records; padded to the longest
    # (10 tokens: [CLS] 我 想 买 手 机 [SEP] 手 机 [SEP]), the same cut to 10.
    examples, _ = task.read(data, {}, True, lambda m: None)
    spec = features.record_spec("sequence", 12)
    fixed, fixed_labels = read_all(path, spec, batching=features.Batching(pad_to_max_length=True))
    batch, labels = read_all(path, spec)
    assert batch["input_ids"].shape == (3, 10) and fixed["input_ids"].shape == (3, 12)
    for row, example in enumerate(examples):
        input_ids, mask, segments, _ = classification.encode_texts(example.texts, tokenizer, 12)
        assert list(fixed["input_ids"][row]) == input_ids
        assert list(fixed["segment_ids"][row]) == segments
        assert list(fixed["input_mask"][row]) == mask
        assert labels[row] == fixed_labels[row] == int(example.label)
        for name in ("input_ids", "segment_ids", "input_mask"):
            np.testing.assert_array_equal(batch[name][row], fixed[name][row][:10])
    assert batch["input_ids"].dtype == np.int32 and labels.shape == (3,)
    assert not fixed["input_mask"][:, 10:].any()

    messages.clear()
    assert build(12) == (path, info) and made == [12]
    assert messages == [f"train: reusing cached features {path} (3 records)"]
    assert build(16)[0] != path and made == [12, 16]
    # A sidecar whose key does not match (stale, hand-edited) is never trusted.
    with open(path + ".json", encoding="utf-8") as f:
        stale = json.load(f)
    stale["key"]["max_seq_length"] = 99
    stale["num_records"] = 12345
    with open(path + ".json", "w", encoding="utf-8") as f:
        json.dump(stale, f)
    messages.clear()
    again, info = build(12)
    assert again == path and info["num_records"] == 3 and made == [12, 16, 12]
    assert messages[0] == f"train: cache {path} does not match its key; rebuilding"


def test_serialize_checks_records_against_the_schema_and_cuts_only_padding():
    spec = features.record_spec("sequence", 4)
    good = {"input_ids": [2, 5, 3, 0], "input_mask": [1, 1, 1, 0], "segment_ids": [0] * 4,
            "label_ids": [1]}
    example = tf.train.Example.FromString(features.serialize(good, spec)).features.feature
    assert [list(example[name].int64_list.value) for name in sorted(good)] == [
        [2, 5, 3], [1, 1, 1], [1], [0, 0, 0]]  # per-token features at their true length
    # An XLNet vocab pads input_ids with its <pad> id (the spec's pad_id).
    xlnet = features.record_spec("sequence", 4, pad_id=5)
    with pytest.raises(ValueError, match=r"input_ids holds values past the record's 3 real "
                                         r"tokens: \[0\]"):
        features.serialize(good, xlnet)
    assert features.serialize(dict(good, input_ids=[2, 5, 3, 5]), xlnet) == features.serialize(
        good, spec)
    with pytest.raises(ValueError, match=r"segment_ids holds values past the record's 3 real"):
        features.serialize(dict(good, segment_ids=[0, 0, 0, 1]), spec)
    with pytest.raises(ValueError, match=r"input_mask \[1, 0, 1, 0\] is not ones then zeros"):
        features.serialize(dict(good, input_mask=[1, 0, 1, 0]), spec)
    with pytest.raises(ValueError, match=r"features \['input_ids', 'input_mask', 'label_ids'\] "
                                         "do not match the schema"):
        features.serialize({k: v for k, v in good.items() if k != "segment_ids"}, spec)
    with pytest.raises(ValueError, match="feature input_mask has 3 values, the schema says 4"):
        features.serialize(dict(good, input_mask=[1, 1, 1]), spec)


def test_batches_pad_input_ids_with_the_vocabs_pad_id(tmp_path, tokenizer):
    spec = features.record_spec("sequence", 6, pad_id=7)  # a sentencepiece <pad>, not 0
    rows = [{"input_ids": ids + [7] * (6 - len(ids)), "input_mask": [1] * len(ids) + [0] * (
        6 - len(ids)), "segment_ids": [0] * 6, "label_ids": [0]} for ids in ([2, 5, 3], [2, 3])]
    key, key_hash = features.cache_key(tokenizer.vocab_file, tokenizer.vocab_file, pad="7")
    path, _ = features.cached_records("dev", str(tmp_path), key, key_hash, spec,
                                      lambda: (rows, {}), log_fn=lambda m: None)
    batch, _ = read_all(path, spec)
    np.testing.assert_array_equal(batch["input_ids"], [[2, 5, 3], [2, 3, 7]])
    np.testing.assert_array_equal(batch["input_mask"], [[1, 1, 1], [1, 1, 0]])
    fixed, _ = read_all(path, spec, batching=features.Batching(pad_to_max_length=True))
    assert [list(row) for row in fixed["input_ids"]] == [row["input_ids"] for row in rows]


def test_input_fn_of_token_and_conditional_records(tmp_path, tokenizer):
    task = ner_task()
    sentences = [formats.TaggedExample(1, list("我想买"), ["B-PER", "I-PER", "O"]),
                 formats.TaggedExample(5, list("卡丢"), ["O", "B-PER"])]
    records, _, counts = task.featurize(sentences, tokenizer, 6, NER_LABELS)
    spec = features.record_spec("token", 6)
    key, key_hash = features.cache_key(tokenizer.vocab_file, tokenizer.vocab_file, task="ner")
    path, _ = features.cached_records("dev", str(tmp_path), key, key_hash, spec,
                                      lambda: (records, counts), log_fn=lambda m: None)
    batch, labels = read_all(path, spec)  # padded to the longest, [CLS] 我 想 买 [SEP]
    assert labels.shape == (2, 5) and labels.dtype == np.int32
    np.testing.assert_array_equal(labels, [[0, 1, 2, 0, 0], [0, 0, 1, 0, 0]])
    assert batch["label_weights"].dtype == np.float32
    np.testing.assert_array_equal(batch["label_weights"], [[0, 1, 1, 1, 0], [0, 1, 1, 0, 0]])
    # Rounded up to a multiple of 4 (at most max_seq_length = 6), or padded to 6.
    for batching in (features.Batching(pad_to_multiple_of=4),
                     features.Batching(pad_to_max_length=True)):
        padded, padded_labels = read_all(path, spec, batching=batching)
        np.testing.assert_array_equal(padded_labels, np.pad(labels, [[0, 0], [0, 1]]))
        np.testing.assert_array_equal(padded["label_weights"],
                                      np.pad(batch["label_weights"], [[0, 0], [0, 1]]))
        np.testing.assert_array_equal(padded["input_ids"][:, :5], batch["input_ids"])

    conditional = features.record_spec("sequence", 5, condition_size=2)
    rows = [{"input_ids": [2, 5, 3, 0, 0], "input_mask": [1, 1, 1, 0, 0], "segment_ids": [0] * 5,
             "label_ids": [label], "condition": condition}
            for label, condition in ((1, [0.0, 1.0]), (0, [0.25, -2.0]), (1, [1.0, 0.0]))]
    key, key_hash = features.cache_key(tokenizer.vocab_file, tokenizer.vocab_file, kind="c")
    path, _ = features.cached_records("train", str(tmp_path), key, key_hash, conditional,
                                      lambda: (rows, {}), log_fn=lambda m: None)
    with tf.Graph().as_default():
        fn = features.input_fn_builder(path, conditional, 2, is_training=False)
        batch = tf.data.make_one_shot_iterator(fn()).get_next()
        assert batch[0]["condition"].dtype == tf.float32
        assert batch[0]["condition"].shape.as_list() == [None, 2]
        assert batch[0]["input_ids"].dtype == tf.int32
    batch, labels = read_all(path, conditional)
    # written and read back as float32, exactly representable: bit for bit
    np.testing.assert_array_equal(batch["condition"], [[0, 1], [0.25, -2], [1, 0]])
    assert list(labels) == [1, 0, 1]

    # Training: fixed batches, repeated, every record once per epoch, the same order
    # for the same seed.
    def training_order(seed):
        with tf.Graph().as_default():
            fn = features.input_fn_builder(path, conditional, 2, is_training=True, seed=seed)
            batch = tf.data.make_one_shot_iterator(fn()).get_next()
            with tf.Session() as session:
                drawn = [session.run(batch) for _ in range(3)]
        assert all(labels.shape == (2,) for _, labels in drawn)
        return [tuple(row) for features_, _ in drawn for row in features_["condition"]]
    order = training_order(3)
    assert sorted(order[:3]) == sorted(order[3:]) == [(0, 1), (0.25, -2), (1, 0)]
    assert training_order(3) == order


# ---- LCQMC lines (data_gen.tools.lcqmc_format through finetune.formats) ---------------------------
def test_lcqmc_malformed_lines_are_reported_by_line_number(tmp_path):
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
    examples, account = formats.read_text_examples(path, "pair", format="lcqmc",
                                                   log_fn=messages.append,
                                                   max_malformed_share=1.0)  # 4 of 6 lines
    assert [(e.line, e.texts, e.label) for e in examples] == [
        (2, ("我想买手机", "买手机"), "1"), (8, ("卡丢了", "怎么办"), "0")]
    assert account.dropped == {"malformed": 4} and (account.read, account.used) == (6, 2)
    assert account.notes == {"bom": 1, "header_lines": 1, "blank_lines": 1}
    skipped = [m for m in messages if "malformed line skipped" in m]
    assert [m.split(": ")[0] for m in skipped] == [f"{path}:{line}" for line in (3, 4, 6, 7)]
    assert "found 1" in skipped[0] and "'2'" in skipped[1] and "not UTF-8" in skipped[2]
    assert len(messages) == 5 and messages[-1] == account.summary()
    assert "dropped: malformed=4" in messages[-1]


def test_lcqmc_first_line_with_a_label_is_data_not_header(tmp_path):
    path = write_lines(tmp_path / "dev.txt", ["我想\t买手机\t0\n", "卡\t丢\t1\n"])
    assert formats.detect_format(path, "pair") == "lcqmc"
    examples, account = formats.read_text_examples(path, "pair", log_fn=lambda m: None)
    assert [e.line for e in examples] == [1, 2] and "header_lines" not in account.notes


@pytest.mark.parametrize("first_line, is_header", [
    ("text_a\ttext_b\tlabel", True), ("\ufeffsentence1\tsentence2\tlabel", True),
    ("我想\t买手机\t1", False), ("我想\t买手机\t2", False), ("我想\t买手机", False)])
def test_finetune_and_lcqmc_to_docs_share_one_parser_and_header_rule(tmp_path, first_line,
                                                                     is_header):
    from data_gen.tools import lcqmc_to_docs
    path = write_lines(tmp_path / "train.txt", [first_line + "\r\n", "卡丢了\t怎么办\t0\n"])
    examples, account = formats.read_text_examples(path, "pair", format="lcqmc",
                                                   log_fn=lambda m: None,
                                                   max_malformed_share=0.5)
    counts = collections.Counter()
    pairs = lcqmc_to_docs.read_pairs(path, counts, report=lambda m: None,
                                     max_malformed_share=0.5)
    # one rule past the share too: both readers stop at the same files
    if account.dropped.get("malformed"):
        with pytest.raises(formats.DataFormatError, match="1 of 2 lines"):
            formats.read_text_examples(path, "pair", format="lcqmc", log_fn=lambda m: None)
        with pytest.raises(lcqmc_format.LcqmcError, match="1 of 2 lines"):
            lcqmc_to_docs.read_pairs(path, collections.Counter(), report=lambda m: None,
                                     max_malformed_share=0.01)
    assert [(*e.texts, int(e.label)) for e in examples] == pairs
    assert ("header_lines" in account.notes) == is_header == (counts["header_lines"] == 1)
    assert account.dropped.get("malformed", 0) == counts["malformed_lines"]
    assert examples[-1].line == 2


def test_fourth_field_is_a_condition_only_when_asked_for():
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


def test_shared_lcqmc_dev_reads_cleanly():
    from conftest import shared_path
    examples, account = formats.read_text_examples(shared_path("lcqmc", "dev.txt"), "pair",
                                                   log_fn=lambda m: None)
    assert len(examples) == 8802 and account.dropped == {}
    assert collections.Counter(e.label for e in examples).keys() == {"0", "1"}
