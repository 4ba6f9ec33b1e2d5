"""End to end: data_gen.create_pretraining_data.run and the CLI."""
import collections
import glob
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.testutil import data_gen_runs as util
from conftest import REPO_ROOT
from data_gen.runner import parallel
from data_gen.config import ConfigError, GenerationConfig
from data_gen.text.corpus_reader import CorpusError
from data_gen.create_pretraining_data import run
from common.file_utils import file_sha256
from data_gen.text.tokenization import FullTokenizer, VocabError

SEQ, PRED = 64, 10


@pytest.fixture
def setup(tmp_path):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(30, 3))
    return tmp_path, vocab, corpus


def _config(tmp_path, vocab, corpus, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(tmp_path / "out.tfrecord"),
                    vocab_file=str(vocab), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=1, num_workers=1, random_seed=7, progress=False)
    settings.update(overrides)
    return GenerationConfig(**settings)


def _unmasked(record):
    """The instance's original ids: masked positions restored from their labels."""
    length = int(record["input_mask"].sum())
    ids = record["input_ids"][:length].copy()
    count = int(record["masked_lm_weights"].sum())
    ids[record["masked_lm_positions"][:count]] = record["masked_lm_ids"][:count]
    return ids


def test_roberta_round_trip_with_bert_feature_spec_and_metadata(setup):
    tmp_path, vocab, corpus = setup
    account = run(_config(tmp_path, vocab, corpus, dupe_factor=2))
    records = util.read_records(tmp_path / "out.tfrecord", SEQ, PRED)
    tokenizer = FullTokenizer(vocab)
    assert len(records) == account["instances"] > 0
    masked_total = 0
    for record in records:
        length = int(record["input_mask"].sum())
        assert list(record["input_mask"]) == [1] * length + [0] * (SEQ - length)
        assert not record["input_ids"][length:].any() and not record["segment_ids"].any()
        assert record["input_ids"][0] == tokenizer.vocab["[CLS]"]
        assert record["input_ids"][length - 1] == tokenizer.vocab["[SEP]"]
        count = int(record["masked_lm_weights"].sum())
        assert set(record["masked_lm_weights"]) <= {0.0, 1.0}
        assert 1 <= count <= PRED and not record["masked_lm_ids"][count:].any()
        positions = record["masked_lm_positions"][:count]
        assert list(positions) == sorted(positions) and (positions > 0).all()
        assert (positions < length - 1).all()
        assert record["next_sentence_labels"][0] == 0
        masked_total += count
    assert masked_total == account["masked_tokens"]

    meta = json.loads((tmp_path / "out.tfrecord.meta.json").read_text())
    assert meta["mode"] == "roberta" and meta["sentence_task"] == "none"
    assert meta["vocab_size"] == len(tokenizer.vocab)
    assert meta["vocab_sha256"] == file_sha256(vocab)
    assert meta["max_token_id"] == max(max(int(r["input_ids"].max()), int(r["masked_lm_ids"].max()))
                                       for r in records)
    assert meta["file_counts"] == {"instances": len(records), "masked_tokens": masked_total}
    assert meta["flags"]["dupe_factor"] == 2 and meta["has_token_boundary"] is False
    assert meta["run_counts"]["sentences"] == 90


def test_roberta_dupe_factor_one_loses_no_character(setup):
    tmp_path, vocab, corpus = setup
    run(_config(tmp_path, vocab, corpus, max_seq_length=40))
    tokenizer = FullTokenizer(vocab)
    special = {tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]}
    written = collections.Counter()
    for record in util.read_records(tmp_path / "out.tfrecord", 40, PRED):
        ids = [i for i in _unmasked(record).tolist() if i not in special]
        written.update("".join(tokenizer.convert_ids_to_tokens(ids)))
    expected = collections.Counter(corpus.read_text(encoding="utf-8").replace("\n", ""))
    assert written == expected


def test_albert_and_bert_modes_write_their_sentence_labels(setup):
    tmp_path, vocab, corpus = setup
    corpus = util.write_corpus(tmp_path / "long.txt", util.documents(40, 8))
    for mode, boundary in (("albert", True), ("bert", False)):
        account = run(_config(tmp_path, vocab, corpus, mode=mode, dupe_factor=3,
                              output_file=str(tmp_path / f"{mode}.tfrecord")))
        records = util.read_records(tmp_path / f"{mode}.tfrecord", SEQ, PRED, boundary)
        labels = collections.Counter(int(r["next_sentence_labels"][0]) for r in records)
        assert labels[0] + labels[1] == len(records) == account["instances"]
        assert 0.3 < labels[1] / len(records) < 0.7
        for record in records:
            length = int(record["input_mask"].sum())
            segments = record["segment_ids"][:length]
            assert segments[0] == 0 and segments[-1] == 1  # A then B
            assert list(segments) == sorted(segments)
            if boundary:
                tb = record["token_boundary"]
                assert tb[0] == 1 and tb[length - 1] == 1 and not tb[length:].any()
        meta = json.loads((tmp_path / f"{mode}.tfrecord.meta.json").read_text())
        assert meta["has_token_boundary"] is boundary
        assert meta["sentence_task"] == {"albert": "sop", "bert": "nsp"}[mode]


def test_output_is_byte_identical_for_one_and_two_workers(setup, monkeypatch):
    """1 worker in-process, 2 forked workers (the CLI's default: they inherit the
    loaded tokenizer) and 2 spawned workers (used once TensorFlow is imported)
    write the same bytes."""
    tmp_path, vocab, corpus = setup
    corpus = util.write_corpus(tmp_path / "big.txt", util.documents(200, 4))
    outputs = {}
    for workers, start_method in ((1, None), (2, "fork"), (2, "spawn")):
        if start_method:
            monkeypatch.setattr(parallel, "default_start_method", lambda: start_method)
        prefix = tmp_path / f"w{workers}{start_method}"
        run(_config(tmp_path, vocab, corpus, mode="albert", dupe_factor=2, num_workers=workers,
                    chunk_bytes=4096, num_output_shards=2, output_file=str(prefix)))
        outputs[workers, start_method] = [
            open(f"{prefix}-{i:05d}-of-00002", "rb").read() for i in range(2)]
    assert outputs[1, None] == outputs[2, "fork"] == outputs[2, "spawn"]
    assert all(len(data) > 1000 for data in outputs[1, None])


def test_default_start_method_forks_only_without_tensorflow():
    import tensorflow  # noqa: F401  (loaded by this test process anyway)
    assert parallel.default_start_method() == "spawn"
    code = ("import sys; from data_gen.runner import parallel; "
            "assert 'tensorflow' not in sys.modules; print(parallel.default_start_method())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, check=True).stdout
    assert out.strip() == "fork"


def test_gzip_output_is_readable_by_tensorflow(setup):
    """Workers compress their own pieces: the file is several gzip members, which
    TensorFlow and Python read as one stream, equal to the uncompressed file."""
    tmp_path, vocab, corpus = setup
    corpus = util.write_corpus(tmp_path / "big.txt", util.documents(100, 4))
    run(_config(tmp_path, vocab, corpus, compression="gzip", chunk_bytes=2048, num_workers=2))
    run(_config(tmp_path, vocab, corpus, output_file=str(tmp_path / "plain.tfrecord"),
                chunk_bytes=2048))
    zipped_bytes = (tmp_path / "out.tfrecord").read_bytes()
    assert zipped_bytes.count(b"\x1f\x8b\x08\x00") > 3  # one member per chunk
    assert gzip.decompress(zipped_bytes) == (tmp_path / "plain.tfrecord").read_bytes()
    zipped = util.read_records(tmp_path / "out.tfrecord", SEQ, PRED, compression="GZIP")
    plain = util.read_records(tmp_path / "plain.tfrecord", SEQ, PRED)
    assert len(zipped) == len(plain) > 0
    for a, b in zip(zipped, plain):
        np.testing.assert_array_equal(a["input_ids"], b["input_ids"])


def test_awkward_input_files_give_the_stated_account(setup):
    tmp_path, vocab, _ = setup
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    text = "\n".join(util.SENTENCES[:6])
    (inputs / "bom_crlf.txt").write_bytes(b"\xef\xbb\xbf" + (text + "\r\n\r\n\r\n").replace(
        "\n", "\r\n").encode("utf-8"))
    (inputs / "empty.txt").write_bytes(b"")
    (inputs / "ctrl.txt").write_text("\x07\x01\n\n" + util.SENTENCES[7] + " 😀  \n", "utf-8")
    (inputs / "bad.txt").write_bytes(b"\xff\xfe\n" + util.SENTENCES[8].encode("utf-8"))
    config = _config(tmp_path, vocab, f"{inputs}/*.txt", on_decode_error="skip",
                     max_sentences_per_document=4, max_unreadable_share=0.2)  # 1 of 10 lines
    account = run(config)
    assert account["files"] == 4 and account["empty_files"] == 1
    assert account["files_with_bom"] == 1 and account["lines_skipped_invalid_utf8"] == 1
    assert account["documents_cut_at_sentence_cap"] == 1  # 6 lines without a blank line
    assert account["sentences_skipped_no_tokens"] == 1  # the line of control characters
    assert account["documents_skipped_no_tokens"] == 1
    assert account["sentences"] == 6 + 2 + 1 and account["instances"] > 0

    failing = _config(tmp_path, vocab, f"{inputs}/*.txt", output_file=str(tmp_path / "x.rec"))
    with pytest.raises(CorpusError, match=r"bad.txt: line 1 \(byte offset 0\): invalid UTF-8"):
        run(failing)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["corpus.txt", "inputs", "out.tfrecord", "out.tfrecord.meta.json", "vocab.txt"])


def test_bad_settings_name_what_is_wrong(setup):
    tmp_path, _, corpus = setup
    vocab = util.write_vocab(tmp_path / "..", drop=("[MASK]",))
    with pytest.raises(VocabError, match=r"lacks the special token\(s\) \[MASK\]"):
        run(_config(tmp_path, vocab, corpus))
    good_vocab = util.write_vocab(tmp_path)
    with pytest.raises(ConfigError, match="--mode='gpt': choose one of roberta, albert, bert, "
                       "xlnet"):
        run(_config(tmp_path, good_vocab, corpus, mode="gpt"))
    with pytest.raises(CorpusError, match="matches no file"):
        run(_config(tmp_path, good_vocab, str(tmp_path / "missing*.txt")))
    assert not glob.glob(str(tmp_path / "out.tfrecord*"))


def test_a_run_that_makes_no_instance_fails_and_writes_nothing(setup):
    tmp_path, vocab, _ = setup
    empty_dir = tmp_path / "empty_run"
    empty_dir.mkdir()
    blank = empty_dir / "blank.txt"
    blank.write_text("\n\n\x07\n\n", encoding="utf-8")  # no document with a token
    output = str(empty_dir / "out.tfrecord")
    with pytest.raises(ConfigError, match=r"no instances were made from 1 file\(s\) \(1 documents, "
                       r"1 sentences\); dropped: documents_skipped_no_tokens=1, "
                       r"sentences_skipped_no_tokens=1.*no output was written"):
        run(_config(tmp_path, vocab, str(blank), output_file=output))
    assert sorted(os.listdir(empty_dir)) == ["blank.txt"]


def _cli(args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "data_gen.create_pretraining_data"] + args,
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def test_cli_prints_the_account_and_reports_errors(setup):
    tmp_path, vocab, corpus = setup
    out = tmp_path / "cli.tfrecord"
    process = _cli([f"--input_file={corpus}", f"--output_file={out}", f"--vocab_file={vocab}",
                    "--max_seq_length=64", "--dupe_factor=1", "--num_workers=1"])
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "1 files, 30 documents, 90 sentences" in stdout and "MB/s" in stdout
    assert out.exists() and (tmp_path / "cli.tfrecord.meta.json").exists()
    process = _cli([f"--input_file={tmp_path}/nothing*.txt", f"--output_file={out}",
                    f"--vocab_file={vocab}"])
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2 and "matches no file" in stderr
    process = _cli(["--help"])
    stdout, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    for flag in ("--input_file", "--dupe_factor", "--[no]do_whole_word_mask", "--mode", "--ngram",
                 "--num_workers", "--jieba_user_dict", "--compression", "--on_decode_error"):
        assert flag in stdout


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_killed_run_leaves_no_finished_looking_file(tmp_path, signum):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(3000, 3))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    process = _cli([f"--input_file={corpus}", f"--output_file={out_dir}/data.tfrecord",
                    f"--vocab_file={vocab}", "--max_seq_length=64", "--dupe_factor=40",
                    "--num_workers=1", "--chunk_bytes=16384", "--noprogress"])
    deadline = time.monotonic() + 60
    temporaries = []
    while time.monotonic() < deadline and process.poll() is None:
        temporaries = glob.glob(str(out_dir / ".data.tfrecord.incomplete-*"))
        if temporaries and os.path.getsize(temporaries[0]) > 0:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    assert temporaries, "no temporary file appeared"
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert glob.glob(str(out_dir / "*")) == []  # nothing that looks finished
    leftovers = os.listdir(out_dir)
    if signum == signal.SIGTERM:
        assert leftovers == [], stderr  # cleaned up
        assert "interrupted" in stderr and "no partial output" in stderr, stderr
    else:
        assert all(name.startswith(".data.tfrecord.incomplete-") for name in leftovers)


def test_a_missing_vocab_names_where_a_models_vocab_is(setup):
    tmp_path, _, corpus = setup
    with pytest.raises(ConfigError, match=r"--vocab_file is required: the vocab of the model the "
                       r"data is for, e\.g\. the vocab\.txt beside its checkpoint"):
        run(_config(tmp_path, "", corpus))

