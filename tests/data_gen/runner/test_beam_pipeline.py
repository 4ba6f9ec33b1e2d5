"""data_gen.runner.beam_pipeline on the DirectRunner, 2 worker processes: the CLI's files
(albert mode with MacBERT masking, so the similar-words table goes to the workers too)."""
import glob
import json
import os
import pathlib

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import module_command, run_parallel, tool_env
from data_gen import native
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.records.tfrecord_scan import scan_file

pytest.importorskip("apache_beam", reason="apache-beam is not installed (the .[beam] extra)")

SEQ, PRED = 64, 10
DIRECT_2_PROCESSES = ["--runner=DirectRunner", "--direct_num_workers=2",
                      "--direct_running_mode=multi_processing"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Three input files (one empty) and a vocab."""
    directory = tmp_path_factory.mktemp("beam")
    vocab = util.write_vocab(directory)
    inputs = directory / "inputs"
    inputs.mkdir()
    util.write_corpus(inputs / "a.txt", util.documents(120, 4))
    util.write_corpus(inputs / "b.txt", util.documents(50, 3, offset=7), newline="\r\n", bom=True)
    (inputs / "c.txt").write_bytes(b"")
    (directory / "similar.tsv").write_text("北京\t上海\n图书馆\t火车站\n天气\t政府\t经济\n",
                                           encoding="utf-8")
    return directory, vocab, f"{inputs}/*.txt"


def _flags(vocab, pattern, output, **overrides):
    settings = dict(input_file=pattern, output_file=str(output), vocab_file=str(vocab),
                    mode="albert", max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=2, random_seed=11, chunk_bytes=4096, num_output_shards=3,
                    compression="gzip", masking="macbert",
                    similar_words_file=str(pathlib.Path(vocab).parent / "similar.tsv"))
    settings.update(overrides)
    return settings


def _records(path):
    """The serialized records of one gzip shard, as TensorFlow's reader returns them."""
    import tensorflow as tf
    return [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression_type="GZIP")]


def test_beam_writes_the_cli_files_and_their_account(corpus):
    directory, vocab, pattern = corpus
    cli_prefix, beam_prefix = directory / "cli" / "train", directory / "beam" / "train"
    cli_prefix.parent.mkdir()
    beam_prefix.parent.mkdir()
    settings = _flags(vocab, pattern, beam_prefix)
    argv = module_command("data_gen.runner.beam_pipeline",
                          *[f"--{k}={v}" for k, v in settings.items()], "--noprogress",
                          *DIRECT_2_PROCESSES)
    results = run_parallel([("beam", argv)], cwd=directory, env=tool_env())
    run(GenerationConfig(**_flags(vocab, pattern, cli_prefix, num_workers=2, progress=False)))
    code, out, err, _ = results["beam"]
    assert code == 0, err[-3000:]
    assert "[data_gen] wrote:" in out and "DirectRunner" in out

    cli_files = sorted(glob.glob(f"{cli_prefix}-*-of-00003"))
    beam_files = sorted(glob.glob(f"{beam_prefix}-*-of-00003"))
    assert [os.path.basename(p) for p in beam_files] == [os.path.basename(p) for p in cli_files]
    assert len(cli_files) == 3
    # The same set of serialized records ...
    cli_records = sorted(r for path in cli_files for r in _records(path))
    beam_records = sorted(r for path in beam_files for r in _records(path))
    assert len(cli_records) > 100 and beam_records == cli_records
    # ... and in fact the same bytes, shard by shard (same chunks, seeds and shard rule).
    for cli_file, beam_file in zip(cli_files, beam_files):
        assert open(cli_file, "rb").read() == open(beam_file, "rb").read()
        scan = scan_file(beam_file, "gzip")
        assert scan.intact and scan.records == len(_records(beam_file))

    cli_meta = [json.load(open(p + ".meta.json")) for p in cli_files]
    beam_meta = [json.load(open(p + ".meta.json")) for p in beam_files]
    for a, b in zip(cli_meta, beam_meta):
        assert b["file_counts"] == a["file_counts"] and b["max_token_id"] == a["max_token_id"]
        assert b["compression"] == "gzip" and b["sentence_task"] == "sop"
        assert b["masking"] == a["masking"] == "macbert"
        for key in ("files", "empty_files", "files_with_bom", "documents", "sentences",
                    "instances", "masked_tokens", "chunks", "input_bytes",
                    "similar_words_words_kept", "similar_words_candidates_kept"):
            assert b["run_counts"][key] == a["run_counts"][key], key
    run_counts = beam_meta[0]["run_counts"]
    assert run_counts["files"] == 3 and run_counts["empty_files"] == 1
    assert run_counts["similar_words_words_kept"] == 3  # the table counted once, not per worker
    assert run_counts["instances"] == sum(m["file_counts"]["instances"] for m in beam_meta)
    if native.resolve("_tokenize", None) and native.resolve("_records", None):
        # The C accelerators did the work inside Beam's worker processes.
        assert run_counts["chunks_made_in_c"] == run_counts["chunks"] > 3
    # Nothing of the run is left beside the output but the shards and their sidecars.
    assert sorted(os.listdir(beam_prefix.parent)) == sorted(
        os.path.basename(p) + suffix for p in beam_files for suffix in ("", ".meta.json"))


def test_beam_failures_are_one_line(corpus, tmp_path):
    directory, vocab, _ = corpus
    bad = tmp_path / "bad.txt"
    bad.write_bytes("好句子\n".encode("utf-8") + b"\xff broken\n")
    out = tmp_path / "out"
    out.mkdir()
    commands = [
        ("typo", module_command("data_gen.runner.beam_pipeline", *[
            f"--{k}={v}" for k, v in _flags(vocab, str(bad), out / "t").items()],
            "--runnr=DirectRunner")),
        ("utf8", module_command("data_gen.runner.beam_pipeline", *[
            f"--{k}={v}" for k, v in _flags(vocab, str(bad), out / "u").items()],
            *DIRECT_2_PROCESSES)),
        ("profile", module_command("data_gen.runner.beam_pipeline", *[
            f"--{k}={v}" for k, v in _flags(vocab, str(bad), out / "p").items()],
            "--profile_workers")),
    ]
    results = run_parallel(commands, cwd=tmp_path, env=tool_env())
    for key, expected in (("typo", "unknown flag(s) --runnr"),
                          ("profile", "--profile_workers profiles the local runner's"),
                          ("utf8", f"{bad}: line 2 (byte offset 10): invalid UTF-8")):
        code, _, err, _ = results[key]
        assert code == 2, err[-2000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith("error: ") and expected in last, err[-2000:]
    assert os.listdir(out) == []  # no shard, no temporary directory


def test_eval_share_on_beam_writes_the_clis_two_splits(corpus, tmp_path):
    """--eval_share on Beam: the CLI's two passes, train and held-out files byte for byte,
    their sidecars' split fields and counts the CLI's."""
    directory, vocab, pattern = corpus
    settings = _flags(vocab, pattern, tmp_path / "beam" / "train", eval_share=0.2,
                      eval_dupe_factor=1, mode="roberta", masking="auto",
                      similar_words_file="", compression="none", num_output_shards=2)
    argv = module_command("data_gen.runner.beam_pipeline",
                          *[f"--{k}={v}" for k, v in settings.items()], "--noprogress",
                          *DIRECT_2_PROCESSES)
    results = run_parallel([("beam", argv)], cwd=directory, env=tool_env())
    cli = dict(settings, output_file=str(tmp_path / "cli" / "train"), num_workers=2,
               progress=False)
    account = run(GenerationConfig(**cli))
    code, out, err, _ = results["beam"]
    assert code == 0, err[-3000:]
    assert "[data_gen] held out for eval:" in out
    for split in ("", "eval/"):
        cli_files = sorted(glob.glob(f"{tmp_path}/cli/{split}train-*-of-00002"))
        beam_files = sorted(glob.glob(f"{tmp_path}/beam/{split}train-*-of-00002"))
        assert len(cli_files) == len(beam_files) == 2, split
        for cli_file, beam_file in zip(cli_files, beam_files):
            assert open(cli_file, "rb").read() == open(beam_file, "rb").read(), beam_file
            a, b = (json.load(open(p + ".meta.json")) for p in (cli_file, beam_file))
            assert b["document_split"] == a["document_split"] == ("eval" if split else "train")
            assert b["run_counts"] == {k: v for k, v in a["run_counts"].items()
                                       if k in b["run_counts"]}
            assert b["run_counts"]["documents_in_other_split"] == a["run_counts"][
                "documents_in_other_split"] > 0
    assert account["eval"]["instances"] > 0
