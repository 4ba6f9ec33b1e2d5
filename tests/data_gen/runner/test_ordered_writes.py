"""Workers that write their own pieces (data_gen.runner.ordered_writes) and the run's profile.

The workers are forked, so a function patched here before the run is what
they run: a chunk made slowly, a worker that dies after handing its pieces to
its writer thread, a writer thread that fails.
"""
from concurrent.futures.process import BrokenProcessPool
import os
import time

import pytest

from tests.testutil import data_gen_runs as util
from data_gen.runner import chunk_processing
from data_gen.runner import ordered_writes
from data_gen.runner import parallel
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.runner.run_account import format_account

SEQ, PRED = 64, 10


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ordered_writes")
    vocab = util.write_vocab(folder)
    corpus = util.write_corpus(folder / "corpus.txt", util.documents(400, 4))
    return folder, vocab, corpus


def _config(inputs, output, **overrides):
    folder, vocab, corpus = inputs
    settings = dict(input_file=str(corpus), output_file=str(folder / output),
                    vocab_file=str(vocab), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=2, num_workers=2, random_seed=3, progress=False,
                    chunk_bytes=1024, num_output_shards=2, mode="bert")
    settings.update(overrides)
    return GenerationConfig(**settings)


def _shards(inputs, prefix):
    return [(inputs[0] / f"{prefix}-{i:05d}-of-00002").read_bytes() for i in range(2)]


@pytest.fixture(scope="module")
def one_worker(inputs):
    account = run(_config(inputs, "one", num_workers=1, profile_workers=True))
    return account, _shards(inputs, "one")


@pytest.fixture
def forked(monkeypatch):
    monkeypatch.setattr(parallel, "default_start_method", lambda: "fork")
    return monkeypatch


def _slow_chunk(index, seconds):
    """A process_span that makes chunk `index` `seconds` late."""
    original = chunk_processing.ChunkProcessor.process_span

    def process_span(self, span, opener=None, document_split=None):
        if span.index == index:
            time.sleep(seconds)
        return original(self, span, opener, document_split)
    return process_span


def test_a_straggling_chunk_changes_no_byte_and_holds_back_only_the_writes(
        inputs, one_worker, forked):
    """Chunk 1 is made 0.4 s late: the other worker goes on making chunks (its
    writer thread, not the worker, waits for chunk 1's turn) and the files
    are those of one worker."""
    forked.setattr(chunk_processing.ChunkProcessor, "process_span", _slow_chunk(1, 0.4))
    account = run(_config(inputs, "straggler", profile_workers=True))
    assert _shards(inputs, "straggler") == one_worker[1]
    workers = account["profile"]["workers"]
    assert sum(worker["chunks"] for worker in workers) == account["chunks"] > 20
    assert max(worker["writer_waiting_seconds"] for worker in workers) > 0.2
    # The other worker made more than the QUEUED_CHUNKS it may hold while chunk 1 was late.
    assert max(worker["chunks"] for worker in workers) > ordered_writes.QUEUED_CHUNKS


def test_profile_accounts_for_the_run(inputs, one_worker):
    account, _ = one_worker
    profile = account["profile"]
    assert [worker["chunks"] for worker in profile["workers"]] == [account["chunks"]]
    assert profile["parent_writing_seconds"] > 0  # one worker: the parent writes
    assert profile["workers"][0]["writer_writing_seconds"] == 0
    two = run(_config(inputs, "two", profile_workers=True))
    profile = two["profile"]
    assert two["chunks"] == account["chunks"]
    assert sum(worker["chunks"] for worker in profile["workers"]) == two["chunks"]
    assert profile["parent_writing_seconds"] == 0  # the workers write
    assert sum(worker["writer_writing_seconds"] for worker in profile["workers"]) > 0
    parallel_part = profile["wall_seconds"] - profile["serial_start_seconds"] - profile[
        "serial_end_seconds"]
    for worker in profile["workers"]:
        assert worker["busy_seconds"] > 0 and worker["idle_seconds"] >= 0
        assert (worker["busy_seconds"] + worker["waiting_for_offsets_seconds"]
                <= parallel_part + 0.01)
    quantiles = profile["chunk_busy_seconds"]
    assert 0 < quantiles["p50"] <= quantiles["p90"] <= quantiles["max"]
    text = format_account(dict(two, output_files=["x"]))
    assert "parent alone" in text and "worker 0:" in text and "waiting for offsets" in text
    assert "profile" not in run(_config(inputs, "plain"))  # only when asked


def _die_in_writer(index):
    original = ordered_writes.OrderedOffsets._place_and_write

    def place_and_write(self, chunk, pieces, fds):
        if chunk == index:
            os._exit(1)  # after the worker has returned the chunk's outcome
        return original(self, chunk, pieces, fds)
    return place_and_write


def _fail_in_writer(index):
    original = ordered_writes.OrderedOffsets._place_and_write

    def place_and_write(self, chunk, pieces, fds):
        if chunk == index:
            raise ValueError("a bug in the writer")
        return original(self, chunk, pieces, fds)
    return place_and_write


@pytest.mark.parametrize("patch,error", [
    (_die_in_writer, (RuntimeError, BrokenProcessPool)),
    (_fail_in_writer, RuntimeError),
])
def test_a_chunk_never_written_stops_the_run_and_leaves_nothing(inputs, forked, patch, error,
                                                                 capfd):
    """A worker that dies after handing over its pieces, or a writer thread that
    fails, ends the run with an error (no hang) and no output file."""
    forked.setattr(ordered_writes.OrderedOffsets, "_place_and_write", patch(3))
    started = time.monotonic()
    with pytest.raises(error) as raised:
        run(_config(inputs, f"broken_{patch.__name__}"))
    assert time.monotonic() - started < 30
    if patch is _fail_in_writer:
        assert "writer thread failed" in str(raised.value)
        assert "a bug in the writer" in capfd.readouterr().err  # its traceback, from the worker
    leftovers = [name for name in os.listdir(inputs[0]) if name.startswith(("broken", ".broken"))]
    assert leftovers == []
