"""data_gen --mode=xlnet (WordPiece vocab): the records' layout against the token stream,
the positions to predict against jieba, the span sampler, workers, sidecar, inspect."""
import collections
import json
import random
import re

import jieba
import pytest

from tests.testutil import data_gen_runs as util
from data_gen.tools import inspect_records
from data_gen.runner import parallel
from data_gen.modes.xlnet import xlnet_masking
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.runner.run_account import format_account
from data_gen.modes.xlnet.xlnet_records import XLNET_FEATURES, xlnet_feature_lengths
from data_gen.text.tokenization import FullTokenizer
from tests.testutil.float32_bounds import binomial_tolerance

SEQ, PRED, REUSE = 64, 10, 32


def config(directory, vocab, corpus, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(directory / "out.tfrecord"),
                    vocab_file=str(vocab), mode="xlnet", max_seq_length=SEQ,
                    max_predictions_per_seq=PRED, dupe_factor=1, num_workers=1, random_seed=3,
                    progress=False)
    settings.update(overrides)
    return GenerationConfig(**settings)


def read_xlnet(path, seq=SEQ):
    """Records parsed with tf.io and record_schema's xlnet table -> list of dicts of lists."""
    import tensorflow as tf
    spec = {name: tf.io.FixedLenFeature([length], tf.int64)
            for name, (_, length) in xlnet_feature_lengths(seq).items()}
    dataset = tf.data.TFRecordDataset(str(path)).map(lambda r: tf.io.parse_single_example(r, spec))
    return [{key: value.numpy().tolist() for key, value in example.items()} for example in dataset]


def varied_documents(count):
    """Documents of 1 to 4 sentences (so A sometimes has no sentence start to end at)."""
    docs, offset = [], 0
    for index in range(count):
        size = 1 + index % 4
        docs.append(util.documents(1, size, offset=offset)[0])
        offset += size
    return docs


class Stream:
    """The expected token stream of documents: ids, sentence starts, jieba word starts."""

    def __init__(self, docs, vocab, eod_token="[unused1]"):
        tokenizer = FullTokenizer(str(vocab))
        self.eod = tokenizer.vocab[eod_token]
        self.ids, self.sentence_starts, self.word_starts = [], set(), set()
        for doc in docs:
            for sentence in doc:
                self.sentence_starts.add(len(self.ids))
                for word in jieba.lcut(sentence):
                    self.word_starts.add(len(self.ids))
                    self.ids.extend(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word)))
            self.ids.append(self.eod)

    def b_starts(self, tokens):
        """Sentence starts where `tokens` occur in the stream."""
        return [s for s in sorted(self.sentence_starts) if self.ids[s:s + len(tokens)] == tokens]

    def whole(self, begin, end):
        """True if [begin, end) of the stream starts and ends at word edges."""
        return begin in self.word_starts and (end in self.word_starts or end == len(self.ids)
                                              or self.ids[end] == self.eod)


@pytest.fixture(scope="module")
def one_stream(tmp_path_factory):
    """One chunk, one pass: the records tile one known stream."""
    directory = tmp_path_factory.mktemp("xlnet")
    vocab = util.write_vocab(directory)
    docs = varied_documents(48)
    corpus = util.write_corpus(directory / "corpus.txt", docs)
    account = run(config(directory, vocab, corpus))
    tokenizer = FullTokenizer(str(vocab))
    special = {name: tokenizer.vocab[token] for name, token in
               (("sep", "[SEP]"), ("cls", "[CLS]"), ("eod", "[unused1]"))}
    return (directory, vocab, Stream(docs, vocab), read_xlnet(directory / "out.tfrecord"),
            account, special)


def layout(record):
    """(len A, len B) from seg_id, after checking seg_id's shape."""
    seg = record["seg_id"]
    a = seg.count(0) - REUSE - 1
    b = seg.count(1) - 1
    assert seg == [0] * (REUSE + a + 1) + [1] * (b + 1) + [2]
    assert a >= 1 and b >= 1 and REUSE + a + b + 3 == SEQ
    return a, b


def b_stream_start(stream, record, r, a, b):
    """Where the record's B begins in the stream: for label 1 where A ends; for label 0 a
    sentence start where B's tokens and the token after B's last (its target) occur
    (repeated text has the same jieba words, so any such place will do)."""
    tokens = record["input"][REUSE + a + 1:REUSE + a + 1 + b]
    continuation = (r + 1) * REUSE + a
    if record["label"] == [1]:
        assert stream.ids[continuation:continuation + b] == tokens
        return continuation
    starts = [s for s in stream.b_starts(tokens) if stream.ids[s + b] == record["target"][-3]]
    assert starts, "a random B is stream text from a sentence start"
    assert continuation not in starts, "label 0 but B continues A"
    return starts[0]


def test_records_tile_the_stream_with_upstreams_layout(one_stream):
    _, _, stream, records, account, special = one_stream
    expected = -(-(len(stream.ids) - SEQ + 3) // REUSE)  # windows while rR + S - 3 < n
    assert len(records) == expected == account["instances"] > 20
    labels = collections.Counter()
    for r, record in enumerate(records):
        assert all(len(record[name]) == SEQ for name in ("input", "target", "seg_id",
                                                         "is_masked"))
        a, b = layout(record)
        inputs, target = record["input"], record["target"]
        assert inputs[:REUSE] == stream.ids[r * REUSE:(r + 1) * REUSE]  # the reuse window
        a_begin = (r + 1) * REUSE  # A begins where the next window begins
        assert inputs[REUSE:REUSE + a] == stream.ids[a_begin:a_begin + a]
        if r + 1 < len(records):
            assert records[r + 1]["input"][:a] == inputs[REUSE:REUSE + a]
        assert [i for i, t in enumerate(inputs) if t == special["sep"]] == [REUSE + a, SEQ - 2]
        assert [i for i, t in enumerate(inputs) if t == special["cls"]] == [SEQ - 1]
        # target: the stream's next token (A's last too), B's first at the first <sep>.
        assert target[:REUSE + a] == stream.ids[r * REUSE + 1:a_begin + a + 1]
        assert target[REUSE + a] == inputs[REUSE + a + 1]
        b_begin = b_stream_start(stream, record, r, a, b)
        assert target[REUSE + a + 1:SEQ - 2] == stream.ids[b_begin + 1:b_begin + b + 1]
        assert target[SEQ - 2:] == [special["cls"]] * 2
        labels[record["label"][0]] += 1
    assert 0.25 < labels[1] / len(records) < 0.75
    assert account["labels_1"] == labels[1]


def test_positions_to_predict_are_whole_jieba_words(one_stream):
    _, _, stream, records, _, special = one_stream
    for r, record in enumerate(records):
        a, b = layout(record)
        masked = record["is_masked"]
        assert sum(masked) == PRED and set(masked) <= {0, 1}
        assert not any(m and t in special.values() for m, t in zip(masked, record["input"]))
        b_begin = b_stream_start(stream, record, r, a, b)
        # (first record position, last + 1, stream position of the first) of each part
        parts = [(0, REUSE, r * REUSE), (REUSE, REUSE + a, (r + 1) * REUSE),
                 (REUSE + a + 1, REUSE + a + 1 + b, b_begin)]
        runs = 0
        for first, last, where in parts:
            position = first
            while position < last:
                if not masked[position]:
                    position += 1
                    continue
                end = position
                while end < last and masked[end]:
                    end += 1
                assert stream.whole(where + position - first, where + end - first), (r, position)
                runs += 1
                position = end
        assert runs >= 1


def test_span_lengths_follow_one_over_n_in_their_context():
    counts = collections.Counter()
    masked = tokens = 0
    for seed in range(4):
        units = [(i, i + 1) for i in range(20000)]
        taken = bytearray(len(units))
        spans = xlnet_masking.sample_spans(units, 0, 20000, 10 ** 9, random.Random(seed), 6, 1,
                                           taken)
        counts.update(words for _, _, words in spans)
        masked += sum(end - begin for begin, end, _ in spans)
        tokens += 20000
        assert sum(taken) == sum(end - begin for begin, end, _ in spans)
    harmonic = sum(1 / n for n in range(1, 6))
    total = sum(counts.values())
    assert set(counts) == {1, 2, 3, 4, 5} and total > 4000
    for n in range(1, 6):
        share = 1 / n / harmonic  # each span's length is one draw: 5 standard errors
        assert abs(counts[n] / total - share) < binomial_tolerance(share, total), (n, counts)
    # Each span of n words takes n + 6n tokens of the cursor's way: 1/7 of them predicted,
    # but for the last span of each seed's 20000 tokens, which may stop short (7 * 5 tokens).
    assert abs(masked / tokens - 1 / 7) <= 7 * 5 / 20000


def test_top_up_makes_the_count_exact_with_whole_words_or_reports_the_shortfall():
    rng = random.Random(0)
    units = [(0, 3), (3, 6), (7, 9), (9, 12)]  # lengths 3, 3, 2, 3 (a special at 6)
    taken = bytearray(4)
    chosen, short = xlnet_masking.top_up(units, taken, 5, rng)
    assert short == 0 and sorted(e - b for b, e in chosen) == [2, 3]
    chosen, short = xlnet_masking.top_up(units, bytearray(4), 4, rng)
    assert (chosen, short) == ([], 4)  # no set of whole words makes 4
    is_masked = xlnet_masking.choose_is_masked(12, [(0, 2), (2, 3), (3, 6)],
                                               [(7, 8), (8, 10), (10, 11)], 6, 6, rng, 6, 1)
    assert sum(is_masked) == 6 and is_masked[6] == 0 and is_masked[11] == 0
    assert xlnet_masking.choose_is_masked(12, [(0, 6)], [(7, 11)], 6, 3, rng, 6, 1) is None


def test_workers_fork_spawn_and_dupes_give_the_same_bytes(tmp_path, monkeypatch):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", varied_documents(160))
    outputs = {}
    for workers, start_method in ((1, None), (2, "fork"), (2, "spawn")):
        if start_method:
            monkeypatch.setattr(parallel, "default_start_method", lambda: start_method)
        prefix = tmp_path / f"w{workers}{start_method}"
        run(config(tmp_path, vocab, corpus, dupe_factor=2, num_workers=workers,
                   chunk_bytes=4096, num_output_shards=2, output_file=str(prefix)))
        outputs[workers, start_method] = [
            open(f"{prefix}-{i:05d}-of-00002", "rb").read() for i in range(2)]
    assert outputs[1, None] == outputs[2, "fork"] == outputs[2, "spawn"]
    assert all(len(data) > 10000 for data in outputs[1, None])


def test_sidecar_account_and_dupe_passes(tmp_path):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", varied_documents(48))
    account = run(config(tmp_path, vocab, corpus, dupe_factor=2, reuse_length=24))
    records = read_xlnet(tmp_path / "out.tfrecord")
    meta = json.loads((tmp_path / "out.tfrecord.meta.json").read_text())
    vocab_ids = FullTokenizer(str(vocab)).vocab
    assert meta["mode"] == "xlnet" and meta["sentence_task"] == "none"
    assert meta["reuse_length"] == 24 and meta["tokenizer"] == "wordpiece"
    assert meta["xlnet_special_ids"] == {"sep": vocab_ids["[SEP]"], "cls": vocab_ids["[CLS]"],
                                         "eod": vocab_ids["[unused1]"],
                                         "mask": vocab_ids["[MASK]"], "pad": vocab_ids["[PAD]"]}
    assert meta["max_predictions_per_seq"] == PRED and meta["masking"] == "xlnet_spans"
    assert meta["file_counts"] == {"instances": len(records), "masked_tokens": PRED * len(records)}
    assert meta["max_token_id"] == max(max(r["input"] + r["target"]) for r in records)
    assert [f.name for f in XLNET_FEATURES] == list(xlnet_feature_lengths(SEQ))
    # Two passes over one chunk: the same number of windows, other documents' order.
    half = len(records) // 2
    assert len(records) == 2 * half and records[:half] != records[half:]
    assert all(r["seg_id"].count(0) > 24 for r in records)
    assert account["xlnet_stream_tokens"] == meta["run_counts"]["xlnet_stream_tokens"]
    report = format_account(account)
    assert "[data_gen] xlnet:" in report and f"{len(records)} instances" in report


def test_inspect_shows_and_checks_xlnet_records(one_stream, tmp_path):
    directory, _, _, records, _, _ = one_stream
    path = str(directory / "out.tfrecord")
    lines = []
    assert inspect_records.inspect_file(path, num_records=2, out=lines.append) == 2
    assert "mode=xlnet" in lines[0]
    tokens = next(line for line in lines if line.startswith("  tokens"))
    assert f"{PRED} to predict" in tokens and " | " in tokens and tokens.count("{") == PRED
    assert any(line.startswith("  label: ") and "B continues A" in line for line in lines)
    # A sidecar that disagrees with the records is reported after printing them.
    copy = tmp_path / "copy.tfrecord"
    copy.write_bytes(open(path, "rb").read())
    meta = json.loads(open(path + ".meta.json").read())
    meta["max_predictions_per_seq"] = PRED + 1
    (tmp_path / "copy.tfrecord.meta.json").write_text(json.dumps(meta))
    lines = []
    with pytest.raises(inspect_records.InspectError, match="not valid XLNet records"):
        inspect_records.inspect_file(str(copy), num_records=1, out=lines.append)
    assert any(f"not max_predictions_per_seq={PRED + 1}" in line for line in lines)


def test_the_documented_xlnet_table_is_record_schema(repo_root):
    text = (repo_root / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("**XLNet records**"):text.index("## 2. ")]
    rows = re.findall(r"^\| (\w+) +\| (int64) +\| `?(\w+)`?", table, flags=re.M)
    assert {name: (dtype, length) for name, dtype, length in rows} == {
        f.name: (f.dtype, str(f.length)) for f in XLNET_FEATURES}
