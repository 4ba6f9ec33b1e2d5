"""The arithmetic of the scaling benchmarks: the two-worker ratios and the N-worker model.

Tolerances: the benchmarks round what they print (ratios and efficiency to 3 decimals, the
model's merge time to 2), so a value is within half a unit of that digit of the exact one:
1e-3 (2e-3 for a product of two rounded ratios), 0.01 s for merge_s; a blocked time that is
exactly zero in the model is checked to 1e-9 s."""
import os
import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import data_gen_worker_model as model  # noqa: E402
import two_worker_rounds  # noqa: E402

COSTS = {"pwrite_bps": 1e12, "copy_mbps": 1000.0, "place_s": 0.0, "notify_per_waiter_s": 0.0,
         "file_s": 0.0, "parent_per_chunk_s": 0.0}


def test_halves_are_cut_at_a_blank_line_and_add_up_to_the_corpus(tmp_path):
    corpus = tmp_path / "corpus.txt"
    documents = [f"文档{n}第一句。\n文档{n}第二句。\n" for n in range(41)]
    corpus.write_text("\n".join(documents), encoding="utf-8")
    first, second = two_worker_rounds.split_in_halves(str(corpus), str(tmp_path))
    data = [open(path, "rb").read() for path in (first, second)]
    assert data[0] + data[1] == corpus.read_bytes()
    assert data[0].endswith(b"\n\n") and not data[1].startswith(b"\n")
    assert abs(len(data[0]) - len(data[1])) < 2 * len(documents[0].encode("utf-8"))


def test_ratios_compare_two_workers_with_two_processes():
    record = {"one_s": 20.0, "two_s": 11.0, "halves_side_s": 10.5, "halves_in_turn_s": 22.0}
    ratios = two_worker_rounds.ratios(record)
    assert ratios["speedup"] == pytest.approx(20 / 11, abs=1e-3)
    assert ratios["ceiling"] == pytest.approx(20 / 10.5, abs=1e-3)
    assert ratios["ratio"] == pytest.approx(10.5 / 11, abs=1e-3)  # = speedup / ceiling
    assert ratios["ceiling_in_turn"] == pytest.approx(22 / 10.5, abs=1e-3)
    assert ratios["start_up_cap"] == pytest.approx(20 / 22, abs=1e-3)
    assert ratios["ratio_in_turn"] == pytest.approx(ratios["ratio"] * 20 / 22, abs=2e-3)
    rounds = [dict(record, **ratios), dict(record, one_s=22.0, **two_worker_rounds.ratios(
        dict(record, one_s=22.0)))]
    summary = two_worker_rounds.summarize(rounds, identical=True)
    assert summary["one_s"] == {"median": 21.0, "min": 20.0, "max": 22.0}
    assert summary["ratio_at_least_0.9_in_rounds"] == 2
    assert summary["ratios_of_median_times"]["speedup"] == pytest.approx(21 / 11, abs=1e-3)


def test_uniform_chunks_keep_every_design_busy_but_the_merge():
    draws = [(0.1, 1_000_000)] * 80
    for design in ("lock_step", "write_behind"):
        result = model.simulate(design, 8, draws, COSTS)
        assert result["efficiency"] == pytest.approx(1.0, abs=1e-3), design
        assert result["blocked_s_per_worker"] == pytest.approx(0.0, abs=1e-9)
    merged = model.simulate("own_files", 8, draws, COSTS, shards=2)
    assert merged["merge_s"] == pytest.approx(80 / 2 / 1000.0, abs=0.01)  # 80 MB, 2 shards
    assert merged["efficiency"] == pytest.approx(1.0 / (1.0 + 0.04), abs=1e-3)


def test_a_straggler_holds_back_ordered_writes_and_queued_chunks_bound_memory():
    draws = [(0.1, 1_000_000)] * 200
    draws[10] = (3.0, 1_000_000)  # 30 chunk times
    lock_step = model.simulate("lock_step", 4, draws, COSTS)
    behind = model.simulate("write_behind", 4, draws, COSTS, queued=4)
    own = model.simulate("own_files", 4, draws, COSTS, shards=1000)
    assert lock_step["efficiency"] < behind["efficiency"] < own["efficiency"]
    assert behind["held_chunks_max"] == 4 and behind["held_mb_per_worker_max"] == 4.0
    assert behind["blocked_s_per_worker"] > 1.0  # the others waited once 4 were queued
    deeper = model.simulate("write_behind", 4, draws, COSTS, queued=40)
    assert deeper["blocked_s_per_worker"] == pytest.approx(0.0, abs=1e-9)
    assert deeper["held_chunks_max"] > 4
