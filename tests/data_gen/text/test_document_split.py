"""--eval_share: held-out documents go to their own files, never to the training files, the
same for any worker count; copies of a document stay in one split."""
import json
import os
import random

import pytest

from tests.testutil import data_gen_runs as util
from data_gen.config import ConfigError, GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.runner.run_account import EmptyOutputError, format_account
from data_gen.text.document_split import DocumentSplit, eval_fraction
from data_gen.records.metadata import shares_documents
from data_gen.text.tokenization import FullTokenizer

SEQ, PRED = 64, 10
MARKERS = [f"x{k}" for k in range(120)]


def _marked_documents(count, seed=3):
    """Documents whose first sentence starts with their own marker word x<k>."""
    rng = random.Random(seed)
    docs = []
    for k in range(count):
        sentences = rng.sample(util.SENTENCES, 3)
        docs.append([f"{MARKERS[k]} {sentences[0]}"] + sentences[1:])
    return docs


def _config(tmp_path, corpus, vocab, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(tmp_path / "out" / "train.tfrecord"),
                    vocab_file=str(vocab), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=2, num_workers=1, random_seed=7, progress=False,
                    chunk_bytes=2048, eval_share=0.25)
    settings.update(overrides)
    return GenerationConfig(**settings)


def _markers_in(path, vocab):
    """The document markers the records of `path` hold: their original tokens, masked ones
    restored (a random replacement may write any marker)."""
    ids = FullTokenizer(str(vocab)).vocab
    by_id = {ids[marker]: marker for marker in MARKERS}
    found = set()
    for record in util.read_records(path, SEQ, PRED):
        original = record["input_ids"].copy()
        count = int(record["masked_lm_weights"].sum())
        original[record["masked_lm_positions"][:count]] = record["masked_lm_ids"][:count]
        found |= {by_id[i] for i in original.tolist() if i in by_id}
    return found


def test_held_out_documents_are_never_trained_on_and_the_split_follows_the_text(tmp_path):
    vocab = util.write_vocab(tmp_path, extra=MARKERS)
    docs = _marked_documents(120)
    corpus = util.write_corpus(tmp_path / "corpus.txt", docs)
    account = run(_config(tmp_path, corpus, vocab))
    expected_eval = {doc[0].split()[0] for doc in docs if eval_fraction(doc, 7) < 0.25}
    assert 15 <= len(expected_eval) <= 45  # about a quarter of 120
    train_markers = _markers_in(tmp_path / "out" / "train.tfrecord", vocab)
    eval_markers = _markers_in(tmp_path / "out" / "eval" / "train.tfrecord", vocab)
    assert eval_markers == expected_eval
    assert train_markers == set(MARKERS) - expected_eval
    held_out = account["eval"]
    assert held_out["documents_in_other_split"] == 120 - len(expected_eval)
    assert account["documents_in_other_split"] == len(expected_eval)
    assert held_out["output_files"] == [str(tmp_path / "out" / "eval" / "train.tfrecord")]
    line = format_account(account)
    assert (f"held out for eval: {len(expected_eval)} of 120 documents (trained on: the other "
            f"{120 - len(expected_eval)})") in line
    for name, split in (("train.tfrecord", "train"), ("eval/train.tfrecord", "eval")):
        with open(tmp_path / "out" / f"{name}.meta.json", encoding="utf-8") as f:
            meta = json.load(f)
        assert (meta["document_split"], meta["eval_share"], meta["split_seed"]) == (split, 0.25, 7)


def test_the_split_is_byte_identical_for_any_worker_count(tmp_path):
    vocab = util.write_vocab(tmp_path, extra=MARKERS)
    corpus = util.write_corpus(tmp_path / "corpus.txt", _marked_documents(120))
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        run(_config(tmp_path, corpus, vocab, num_workers=workers,
                    output_file=str(out / "train.tfrecord")))
        outputs[workers] = [(out / name).read_bytes()
                            for name in ("train.tfrecord", "eval/train.tfrecord")]
    assert outputs[1] == outputs[2] and all(len(data) > 1000 for data in outputs[1])


def test_copies_of_a_document_land_in_one_split():
    docs = util.documents(64, 3)  # 16 distinct documents, each 4 times
    for split in ("train", "eval"):
        kept, _ = DocumentSplit(0.5, 11, split).keep(docs)
        others, _ = DocumentSplit(0.5, 11, "eval" if split == "train" else "train").keep(docs)
        assert not {tuple(d) for d in kept} & {tuple(d) for d in others}
        assert len(kept) % 4 == 0


def test_without_eval_share_nothing_changes(tmp_path):
    vocab = util.write_vocab(tmp_path, extra=MARKERS)
    corpus = util.write_corpus(tmp_path / "corpus.txt", _marked_documents(40))
    plain = run(_config(tmp_path, corpus, vocab, eval_share=0.0,
                        output_file=str(tmp_path / "a.tfrecord")))
    assert "eval" not in plain and "documents_in_other_split" not in plain
    assert not (tmp_path / "eval").exists()
    with open(tmp_path / "a.tfrecord.meta.json", encoding="utf-8") as f:
        assert "document_split" not in json.load(f)


def test_bad_eval_settings_name_the_flag_and_write_nothing(tmp_path):
    vocab = util.write_vocab(tmp_path, extra=MARKERS)
    corpus = util.write_corpus(tmp_path / "corpus.txt", _marked_documents(6))
    with pytest.raises(ConfigError, match=r"--eval_share=1.0: must be in \[0, 1\)"):
        run(_config(tmp_path, corpus, vocab, eval_share=1.0))
    with pytest.raises(ConfigError, match="--eval_output_file needs --eval_share > 0"):
        run(_config(tmp_path, corpus, vocab, eval_share=0.0, eval_output_file="e.tfrecord"))
    with pytest.raises(ConfigError, match="--eval_output_file and --output_file both name"):
        run(_config(tmp_path, corpus, vocab,
                    eval_output_file=str(tmp_path / "out" / "train.tfrecord")))
    # 6 documents, a 1% share: nothing held out, so no eval files, and no training files
    with pytest.raises(EmptyOutputError, match=r"no held-out instances: --eval_share=0.01"):
        run(_config(tmp_path, corpus, vocab, eval_share=0.01))
    assert not [name for _, _, names in os.walk(tmp_path / "out") for name in names]


def test_shares_documents_tells_a_held_out_split_from_one_made_over_the_same_text():
    flags = {"input_file": "corpus.txt"}
    train = {"flags": flags, "document_split": "train", "eval_share": 0.05, "split_seed": 1}
    held_out = dict(train, document_split="eval")
    assert shares_documents(train, held_out) is None
    assert shares_documents(train, dict(held_out, split_seed=2)) is not None
    plain = {"flags": flags}
    assert "without holding the eval documents out" in shares_documents(plain, plain)
    assert shares_documents(plain, {"flags": {"input_file": "other.txt"}}) is None
