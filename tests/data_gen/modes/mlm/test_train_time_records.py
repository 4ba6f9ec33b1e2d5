"""data_gen --train_time_masking: unmasked records carrying each token's whole word, the
sidecar fields run_pretraining draws the masks from, and the flags it refuses."""
import json

import numpy as np
import pytest
import tensorflow as tf

from data_gen import native
from data_gen.config import ConfigError, GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.modes.mlm import masking
from data_gen.records import record_schema
from data_gen.records.example_proto import word_ids_of
from data_gen.text.tokenization import load_vocab
from data_gen.tools.inspect_records import inspect_file
from tests.testutil import data_gen_runs as util

SEQ, PRED = 64, 10


@pytest.fixture
def setup(tmp_path):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(40, 6))
    return tmp_path, vocab, corpus


def _config(tmp_path, vocab, corpus, name, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(tmp_path / name),
                    vocab_file=str(vocab), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=1, num_workers=1, random_seed=7, progress=False)
    if overrides.get("train_time_masking"):  # no prediction slots in such records
        del settings["max_predictions_per_seq"]
    settings.update(overrides)
    return GenerationConfig(**settings)


def _read(path):
    spec = {name: tf.io.FixedLenFeature([length], tf.int64) for name, (_, length) in
            record_schema.feature_lengths(SEQ, None, features=record_schema
                                          .TRAIN_TIME_MASKING_FEATURES).items()}
    dataset = tf.data.TFRecordDataset(str(path)).map(
        lambda record: tf.io.parse_single_example(record, spec))
    return [{key: value.numpy() for key, value in example.items()} for example in dataset]


def _restored(record):
    """A static record's ids with its masked positions given back their labels."""
    ids = record["input_ids"].copy()
    count = int(record["masked_lm_weights"].sum())
    ids[record["masked_lm_positions"][:count]] = record["masked_lm_ids"][:count]
    return ids, record["masked_lm_positions"][:count]


@pytest.mark.parametrize("mode", ["roberta", "bert", "albert"])
def test_the_records_are_the_static_runs_instances_unmasked_with_their_whole_words(setup, mode):
    tmp_path, vocab, corpus = setup
    run(_config(tmp_path, vocab, corpus, "static.tfrecord", mode=mode, masking="wwm"))
    account = run(_config(tmp_path, vocab, corpus, "drawn.tfrecord", mode=mode,
                          train_time_masking=True))
    static = util.read_records(tmp_path / "static.tfrecord", SEQ, PRED)
    drawn = _read(tmp_path / "drawn.tfrecord")
    assert len(drawn) == len(static) == account["instances"] > 10
    assert account["masked_tokens"] == 0 and account["masking"].startswith("wwm, drawn at")
    ids = load_vocab(str(vocab))
    multi_token_words = 0
    for unmasked, masked in zip(drawn, static):
        original, positions = _restored(masked)
        np.testing.assert_array_equal(unmasked["input_ids"], original)  # same instances
        for name in ("input_mask", "segment_ids", "next_sentence_labels"):
            np.testing.assert_array_equal(unmasked[name], masked[name])
        word_ids, tokens = unmasked["word_ids"], unmasked["input_ids"]
        special = np.isin(tokens, [ids["[CLS]"], ids["[SEP]"]]) | (unmasked["input_mask"] == 0)
        assert (word_ids[special] == 0).all() and (word_ids[~special] > 0).all()
        numbered = word_ids[~special]  # words numbered 1, 2, ... in order, one run each
        assert numbered[0] == 1 and set(np.diff(numbered)) <= {0, 1}
        multi_token_words += int((np.bincount(numbered) > 1).sum())
        # the static run masked whole words of these very units
        for word in set(word_ids[positions]):
            assert set(np.flatnonzero(word_ids == word)) <= set(positions)
    assert multi_token_words > len(drawn)  # jieba's words: most records hold several

    meta = json.loads((tmp_path / "drawn.tfrecord.meta.json").read_text())
    assert meta["train_time_masking"] is True and meta["max_predictions_per_seq"] is None
    assert meta["mask_id"] == ids["[MASK]"] and meta["has_token_boundary"] is False
    expanded = [token for piece in meta["replacement_ids"].split(",")
                for token in range(int(piece.split("-")[0]), int(piece.split("-")[1]) + 1)]
    assert expanded == masking.replacement_ids(ids)


def test_the_c_and_python_paths_write_the_same_bytes(setup, monkeypatch):
    tmp_path, vocab, corpus = setup
    if native.load("_records") is None:
        pytest.skip("the C accelerators are not built (make setup builds them)")
    written = {}
    for pure in ("0", "1"):
        monkeypatch.setenv(native.DISABLE_VARIABLE, pure)
        run(_config(tmp_path, vocab, corpus, f"p{pure}.tfrecord", mode="bert",
                    train_time_masking=True, dupe_factor=2))
        written[pure] = (tmp_path / f"p{pure}.tfrecord").read_bytes()
    assert written["0"] == written["1"] and len(written["0"]) > 1000


@pytest.mark.parametrize("overrides, message", [
    (dict(mode="albert", masking="ngram"), "--train_time_masking draws whole-word masks .* "
     "--masking=ngram draws its spans when the data is made"),
    (dict(mode="roberta", dupe_factor=5), "--dupe_factor=5 .* would write identical copies"),
    (dict(mode="xlnet"), "--train_time_masking is for the masked-LM modes"),
    (dict(masked_lm_prob=0.3), "--masked_lm_prob=0.3 sets the rate of masks drawn now; with "
     "--train_time_masking the rate is run_pretraining's --mlm_probability"),
    (dict(max_predictions_per_seq=10), "--max_predictions_per_seq=10: records made with "
     "--train_time_masking have no prediction slots"),
])
def test_flags_that_cannot_go_with_it_are_refused(setup, overrides, message):
    tmp_path, vocab, corpus = setup
    config = _config(tmp_path, vocab, corpus, "x.tfrecord", train_time_masking=True)
    for name, value in overrides.items():
        setattr(config, name, value)
    with pytest.raises(ConfigError, match=message):
        run(config)
    assert not list(tmp_path.glob("x.tfrecord*"))


def test_inspect_records_shows_their_whole_words(setup):
    tmp_path, vocab, corpus = setup
    run(_config(tmp_path, vocab, corpus, "drawn.tfrecord", train_time_masking=True))
    lines = []
    assert inspect_file(str(tmp_path / "drawn.tfrecord"), 1, out=lines.append) == 1
    words = lines[2].split(": ", 1)[1].split(" ")
    assert lines[2].startswith("  words (") and "masks drawn at train time" in lines[2]
    assert words[0] == "[CLS]" and words[-1] == "[SEP]"
    assert "中华人民共和国" in "".join(words) and max(len(word) for word in words[1:-1]) >= 2


@pytest.mark.parametrize("whole_word", [True, False])
def test_word_ids_number_the_units_masking_groups(whole_word):
    rng = np.random.RandomState(0)
    for _ in range(300):
        starts = [int(value) for value in rng.choice([-1, 0, 1], size=rng.randint(0, 40),
                                                     p=[0.1, 0.4, 0.5])]
        expected = [0] * len(starts)
        for number, (begin, end) in enumerate(
                masking.whole_word_units(starts, whole_word, use_native=False), start=1):
            expected[begin:end] = [number] * (end - begin)
        assert word_ids_of(starts, whole_word) == expected, starts
