"""finetune/statistics.py: metrics from per-example statistics, mean ± std over seeds and
the hierarchical paired bootstrap (exact zero for identical runs, coverage, seed spread).

Tolerances: the statistics are float64 NumPy arithmetic on counts, so pytest.approx's
default (relative 1e-6) sits ten orders above float64 rounding (2.2e-16 per operation) and
far below the smallest difference a count makes (1/N). Monte Carlo tolerances are stated
in standard errors where they occur.
"""
import math

import numpy as np
import pytest

from finetune import statistics


def test_accuracy_and_confusion_statistics_per_example():
    gold, predicted = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert statistics.accuracy_statistics(gold, predicted).tolist() == [[1], [0], [1], [1], [0]]
    confusion = statistics.confusion_statistics(gold, predicted, 3)
    assert confusion.shape == (5, 9) and (confusion.sum(axis=1) == 1).all()
    assert [int(np.argmax(row)) for row in confusion] == [0, 1, 4, 4, 6]  # gold * 3 + pred
    with pytest.raises(ValueError, match="lie in"):
        statistics.confusion_statistics([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="2 gold labels but 3"):
        statistics.accuracy_statistics([0, 1], [0, 1, 1])


def test_macro_f1_averages_over_labels_that_occur():
    gold, predicted = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    # label 0: tp 1, 2 gold, 2 predicted -> 0.5; label 1: tp 2, 2 gold, 3 predicted -> 0.8;
    # label 2: 1 gold, never predicted -> 0; label 3 (num_labels=4) never occurs: not averaged.
    expected = (0.5 + 0.8 + 0.0) / 3
    for num_labels in (3, 4, None):
        stats = statistics.statistics_for("macro_f1", gold, predicted, num_labels)
        assert statistics.metric_value("macro_f1", stats) == pytest.approx(expected)
    assert statistics.METRICS_FROM_TOTALS["macro_f1"](np.zeros(4)) == 0.0  # 0/0 -> 0
    accuracy = statistics.statistics_for("accuracy", gold, predicted)
    assert statistics.metric_value("accuracy", accuracy) == pytest.approx(0.6)


def test_entity_metrics_are_micro_averaged_and_zero_for_zero_over_zero():
    counts = [(2, 1, 1), (0, 2, 0), (3, 3, 2)]  # 5 gold, 6 predicted, 3 correct
    stats = statistics.statistics_for("f1", None, counts)
    assert stats.tolist() == [[2, 1, 1], [0, 2, 0], [3, 3, 2]]
    for metric, expected in (("precision", 3 / 6), ("recall", 3 / 5), ("f1", 6 / 11)):
        assert statistics.metric_value(metric, stats) == pytest.approx(expected)
        assert statistics.METRICS_FROM_TOTALS[metric](np.zeros(3)) == 0.0
    with pytest.raises(ValueError, match="num_correct"):
        statistics.entity_statistics([(1, 1, 2)])


def test_metrics_are_vectorised_over_leading_axes():
    rng = np.random.default_rng(3)
    totals = rng.integers(0, 5, size=(2, 3, 9)).astype(float)
    for metric, width in (("macro_f1", 9), ("f1", 3), ("precision", 3), ("accuracy", 1)):
        function = statistics.METRICS_FROM_TOTALS[metric]
        batched = function(totals[..., :width])
        assert batched.shape == (2, 3)
        for i in range(2):
            for j in range(3):
                assert batched[i, j] == pytest.approx(float(function(totals[i, j, :width])))


def test_mean_and_sample_standard_deviation():
    mean, std = statistics.mean_std([0.8, 0.9, 1.0])
    assert mean == pytest.approx(0.9) and std == pytest.approx(0.1)  # ddof=1
    assert statistics.mean_std([0.7]) == (0.7, None)
    assert statistics.mean_std([]) == (None, None)


def correctness(rng, num_seeds, num_examples, rate=0.7):
    """[S, N, 1] accuracy statistics: each example correct with probability `rate`."""
    return (rng.random((num_seeds, num_examples, 1)) < rate).astype(float)


def improved(stats_a, num_more, rng):
    """stats_a with `num_more` wrong examples per seed made correct."""
    stats_b = stats_a.copy()
    for seed in range(stats_a.shape[0]):
        wrong = np.flatnonzero(stats_a[seed, :, 0] == 0)
        stats_b[seed, rng.choice(wrong, num_more, replace=False), 0] = 1.0
    return stats_b


@pytest.mark.parametrize("num_seeds", [1, 3])
def test_identical_runs_are_never_called_different(num_seeds):
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=300)
    predicted = [np.where(rng.random(300) < 0.6, gold, rng.integers(0, 3, 300))
                 for _ in range(num_seeds)]
    cases = {
        "accuracy": np.stack([statistics.accuracy_statistics(gold, p) for p in predicted]),
        "macro_f1": np.stack([statistics.confusion_statistics(gold, p, 3) for p in predicted]),
        "f1": rng.integers(0, 3, size=(num_seeds, 300, 3)).astype(float),
    }
    for metric, stats in cases.items():
        result = statistics.paired_bootstrap(stats, stats.copy(), metric, num_samples=300)
        assert (result["difference"], result["low"], result["high"]) == (0.0, 0.0, 0.0)
        assert result["verdict"] == "no evidence"


def test_clearly_better_run_is_better_with_the_true_difference_inside():
    rng = np.random.default_rng(1)
    stats_a = correctness(rng, 3, 2000)
    stats_b = improved(stats_a, 200, rng)  # +10% of the examples, on every seed
    result = statistics.paired_bootstrap(stats_a, stats_b, "accuracy")
    assert result["difference"] == pytest.approx(0.1)
    assert result["low"] < 0.1 < result["high"] and result["low"] > 0
    assert result["verdict"] == "better"
    assert result["num_samples"] == 2000 and result["confidence"] == 0.95
    assert "2000 replicates" in result["method"] and "3 seeds" in result["method"]
    worse = statistics.paired_bootstrap(stats_b, stats_a, "accuracy")
    assert worse["difference"] == pytest.approx(-0.1) and worse["verdict"] == "worse"


def test_one_seed_interval_matches_the_normal_approximation():
    # One seed: only the examples vary. The differences d_n are 1 on 10% of the
    # examples, else 0, so the mean has standard error sqrt(0.1 * 0.9 / N).
    rng = np.random.default_rng(2)
    stats_a = correctness(rng, 1, 2000)
    stats_b = improved(stats_a, 200, rng)
    result = statistics.paired_bootstrap(stats_a, stats_b, "accuracy", num_samples=4000)
    half_width = 1.959964 * math.sqrt(0.1 * 0.9 / 2000)
    # The 2.5% quantile of 4000 replicates has a Monte Carlo standard deviation of
    # sqrt(0.025 * 0.975 / 4000) / phi(1.96) = 0.042 standard errors: 0.15 half-widths
    # (0.29 standard errors) is 7 of those.
    assert result["low"] == pytest.approx(0.1 - half_width, abs=0.15 * half_width)
    assert result["high"] == pytest.approx(0.1 + half_width, abs=0.15 * half_width)


def test_better_on_one_seed_and_worse_on_another_is_no_evidence():
    rng = np.random.default_rng(4)
    stats_a = correctness(rng, 2, 2000)
    stats_b = stats_a.copy()
    stats_b[0] = improved(stats_a[:1], 200, rng)[0]  # seed 0: +10 points
    stats_b[1] = 1.0 - improved(1.0 - stats_a[1:], 200, rng)[0]  # seed 1: -10 points
    result = statistics.paired_bootstrap(stats_a, stats_b, "accuracy")
    assert result["difference"] == pytest.approx(0.0, abs=1e-12)
    assert result["verdict"] == "no evidence"
    assert result["low"] < -0.05 and result["high"] > 0.05  # the seeds' spread, not the examples'
    only_first_seed = statistics.paired_bootstrap(stats_a[:1], stats_b[:1], "accuracy")
    assert only_first_seed["verdict"] == "better"


def test_no_difference_is_rarely_called_a_difference():
    # Runs a and b are draws of one model: example n is right with probability p_n on
    # every seed of both, so the true difference is 0.
    rng = np.random.default_rng(5)
    verdicts = []
    for dataset in range(200):
        difficulty = rng.uniform(0.3, 1.0, size=150)
        stats_a, stats_b = ((rng.random((3, 150)) < difficulty)[..., None].astype(float)
                            for _ in range(2))
        verdicts.append(statistics.paired_bootstrap(stats_a, stats_b, "accuracy",
                                                    num_samples=300, seed=dataset)["verdict"])
    assert verdicts.count("no evidence") >= 180, verdicts.count("no evidence")


def test_point_estimate_is_the_mean_of_the_per_seed_differences_in_f1():
    seed_counts_a = [[(2, 2, 1), (1, 1, 1)], [(2, 1, 0), (1, 2, 1)]]  # f1: 4/6, 2/6
    seed_counts_b = [[(2, 2, 2), (1, 1, 1)], [(2, 2, 1), (1, 1, 1)]]  # f1: 6/6, 4/6
    stats_a = np.stack([statistics.entity_statistics(c) for c in seed_counts_a])
    stats_b = np.stack([statistics.entity_statistics(c) for c in seed_counts_b])
    result = statistics.paired_bootstrap(stats_a, stats_b, "f1", num_samples=200)
    assert result["difference"] == pytest.approx(((6 - 4) / 6 + (4 - 2) / 6) / 2)


def test_bootstrap_is_reproducible_and_checks_its_input(monkeypatch):
    rng = np.random.default_rng(6)
    stats_a = correctness(rng, 3, 500)
    stats_b = correctness(rng, 3, 500)
    first = statistics.paired_bootstrap(stats_a, stats_b, "accuracy", num_samples=500, seed=7)
    assert statistics.paired_bootstrap(stats_a, stats_b, "accuracy", num_samples=500,
                                       seed=7) == first
    monkeypatch.setattr(statistics, "_CHUNK_ELEMENTS", 500 * 7)  # 7 replicates per chunk
    chunked = statistics.paired_bootstrap(stats_a, stats_b, "accuracy", num_samples=500, seed=7)
    assert chunked["difference"] == first["difference"]
    # Chunks draw other replicates from the same generator: each end of the interval moves
    # by Monte Carlo error only. The 2.5% quantile of 500 replicates has a standard deviation
    # of sqrt(0.025 * 0.975 / 500) / phi(1.96) = 0.12 standard errors (sigma), so two
    # independent draws differ by 5 of theirs within 5 * sqrt(2) * 0.12 sigma.
    sigma = (first["high"] - first["low"]) / (2 * 1.959964)
    monte_carlo = 5 * math.sqrt(2) * 0.12 * sigma
    assert chunked["low"] == pytest.approx(first["low"], abs=monte_carlo)
    assert chunked["high"] == pytest.approx(first["high"], abs=monte_carlo)
    with pytest.raises(ValueError, match="one shape"):
        statistics.paired_bootstrap(stats_a, stats_b[:2], "accuracy")
    with pytest.raises(ValueError, match="unknown metric"):
        statistics.paired_bootstrap(stats_a, stats_b, "bleu")


def test_example_counts_are_multinomial_draws():
    counts = statistics._example_counts(np.random.default_rng(8), 40000, 5)
    assert counts.shape == (40000, 5) and (counts.sum(axis=1) == 5).all()
    # Binomial(5, 1/5) per example: mean 1, variance 0.8. Over 40000 examples the mean's
    # standard error is sqrt(0.8 / 40000) = 0.0045 and the variance's sqrt((mu4 - 0.8**2) /
    # 40000) = 0.0057 (mu4 = 0.8 * (1 + 3 * 3 * 0.16) = 1.95): both within 6 of them.
    mean_error = math.sqrt(0.8 / 40000)
    variance_error = math.sqrt((0.8 * (1 + 3 * 3 * 0.16) - 0.8 ** 2) / 40000)
    assert counts.mean(axis=0) == pytest.approx(np.ones(5), abs=6 * mean_error)
    assert counts.var(axis=0) == pytest.approx(np.full(5, 5 * 0.2 * 0.8), abs=6 * variance_error)


def test_labels_that_never_occur_do_not_change_the_macro_f1_bootstrap():
    # Extra labels add all-zero confusion columns, which the bootstrap skips: same draws,
    # same interval, whatever the width.
    rng = np.random.default_rng(9)
    gold = rng.integers(0, 3, size=300)
    runs = [[np.where(rng.random(300) < rate, gold, rng.integers(0, 3, 300)) for _ in range(2)]
            for rate in (0.6, 0.7)]
    results = []
    for num_labels in (3, 40):
        stats_a, stats_b = (np.stack([statistics.confusion_statistics(gold, p, num_labels)
                                      for p in run]) for run in runs)
        results.append(statistics.paired_bootstrap(stats_a, stats_b, "macro_f1",
                                                   num_samples=400, seed=3))
    narrow, wide = results
    for key in ("difference", "low", "high"):
        # float64 sums over 3 or 40 label columns may pair differently: within 40 float64
        # ulps (1e-14 at these values); 1e-12 leaves a factor of 100
        assert wide[key] == pytest.approx(narrow[key], abs=1e-12)
    assert narrow["low"] < narrow["difference"] < narrow["high"]
