"""Seed statistics and the paired bootstrap behind a fine-tuning comparison.

Every metric is computed from per-example sufficient statistics, an array
[N examples, K]: a metric is a function of their mean over the examples (the
"totals"), so resampling examples is a weighted mean, i.e. a matrix product.

    accuracy_statistics(gold, predicted)           [N, 1]    1.0 where correct
    confusion_statistics(gold, predicted, L)       [N, L*L]  one-hot of gold*L+pred
    entity_statistics([(gold, predicted, correct)])[N, 3]    entity counts per sentence
    METRICS_FROM_TOTALS[metric](totals [..., K]) -> [...]

"totals" are the per-example statistics averaged over the examples (accuracy
needs the mean; the ratio metrics would give the same from the sums). Metrics ("accuracy", "macro_f1", "f1", "precision", "recall") lie in [0, 1];
0/0 counts as 0. `paired_bootstrap` compares two runs fine-tuned with the
same seeds and evaluated on the same examples: its point estimate is the mean
over seeds of metric(b) - metric(a), and its interval resamples both the
seeds and the examples, with the same draws for both runs, so two identical
runs get difference 0, interval [0, 0] and the verdict "no evidence".
"""
import math

import numpy as np

# Replicates are drawn in chunks of about this many [replicate, example] counts (12 bytes
# each: the drawn int32 indices and the float64 counts), ~50 MB at a time.
_CHUNK_ELEMENTS = 4_000_000


def _safe_ratio(numerator, denominator):
    """numerator / denominator elementwise, 0 where the denominator is 0."""
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    safe = np.where(denominator == 0, 1.0, denominator)
    return np.where(denominator == 0, 0.0, numerator / safe)


def _as_ids(ids, name):
    array = np.asarray(ids)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of label ids, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name}: expected integer label ids, got dtype {array.dtype}")
    return array.astype(np.int64)


def _paired_ids(gold_ids, predicted_ids):
    gold, predicted = _as_ids(gold_ids, "gold_ids"), _as_ids(predicted_ids, "predicted_ids")
    if gold.shape != predicted.shape:
        raise ValueError(f"{gold.size} gold labels but {predicted.size} predictions")
    return gold, predicted


def accuracy_statistics(gold_ids, predicted_ids):
    """float array [N, 1]: 1.0 where the prediction equals the gold label, else 0.0."""
    gold, predicted = _paired_ids(gold_ids, predicted_ids)
    return (gold == predicted).astype(np.float64)[:, None]


def confusion_statistics(gold_ids, predicted_ids, num_labels):
    """float array [N, L*L]: row n is the one-hot of gold[n] * L + predicted[n]."""
    gold, predicted = _paired_ids(gold_ids, predicted_ids)
    for name, ids in (("gold", gold), ("predicted", predicted)):
        if ids.size and (ids.min() < 0 or ids.max() >= num_labels):
            raise ValueError(f"{name} label ids must lie in [0, {num_labels}), "
                             f"got {ids.min()}..{ids.max()}")
    statistics = np.zeros((gold.size, num_labels * num_labels))
    statistics[np.arange(gold.size), gold * num_labels + predicted] = 1.0
    return statistics


def entity_statistics(counts):
    """float array [N, 3] of per-sentence (num_gold, num_predicted, num_correct) entities."""
    statistics = np.asarray(counts, dtype=np.float64).reshape(-1, 3)
    if statistics.size and ((statistics < 0).any() or (statistics[:, 2] > statistics[:, :2]
                                                       .min(axis=1)).any()):
        raise ValueError("entity counts: expected (num_gold, num_predicted, num_correct) with "
                         "0 <= num_correct <= min(num_gold, num_predicted)")
    return statistics


def _accuracy(totals):
    return np.asarray(totals, float)[..., 0]


def _macro_f1(totals):
    """Mean F1 over the labels that occur in gold or predicted (their counts > 0)."""
    totals = np.asarray(totals, float)
    num_labels = math.isqrt(totals.shape[-1])
    if num_labels * num_labels != totals.shape[-1]:
        raise ValueError(f"macro_f1: {totals.shape[-1]} statistics is not L*L for any L")
    confusion = totals.reshape(totals.shape[:-1] + (num_labels, num_labels))
    true_positive = np.diagonal(confusion, axis1=-2, axis2=-1)
    gold_plus_predicted = confusion.sum(axis=-1) + confusion.sum(axis=-2)
    f1_per_label = _safe_ratio(2 * true_positive, gold_plus_predicted)
    occurring = (gold_plus_predicted > 0).sum(axis=-1)
    return _safe_ratio(f1_per_label.sum(axis=-1), occurring)


def _precision(totals):
    totals = np.asarray(totals, float)
    return _safe_ratio(totals[..., 2], totals[..., 1])


def _recall(totals):
    totals = np.asarray(totals, float)
    return _safe_ratio(totals[..., 2], totals[..., 0])


def _micro_f1(totals):
    totals = np.asarray(totals, float)
    return _safe_ratio(2 * totals[..., 2], totals[..., 0] + totals[..., 1])


# metric -> function of the mean statistics [..., K] -> metric [...].
METRICS_FROM_TOTALS = {
    "accuracy": _accuracy,
    "macro_f1": _macro_f1,
    "f1": _micro_f1,
    "precision": _precision,
    "recall": _recall,
}
CLASSIFICATION_METRICS = ("accuracy", "macro_f1")  # from label ids
ENTITY_METRICS = ("f1", "precision", "recall")  # from per-sentence entity counts


def _metric_function(metric):
    if metric not in METRICS_FROM_TOTALS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS_FROM_TOTALS)}")
    return METRICS_FROM_TOTALS[metric]


def statistics_for(metric, gold, predicted, num_labels=None):
    """Per-example statistics [N, K] for `metric`.

    accuracy / macro_f1: gold and predicted are label-id arrays (num_labels for
    macro_f1 defaults to 1 + the largest id seen). f1 / precision / recall:
    predicted is the list of per-sentence (num_gold, num_predicted,
    num_correct) entity counts; gold is not used.
    """
    _metric_function(metric)
    if metric in ENTITY_METRICS:
        return entity_statistics(predicted)
    if metric == "accuracy":
        return accuracy_statistics(gold, predicted)
    if num_labels is None:  # macro_f1
        gold_ids, predicted_ids = _paired_ids(gold, predicted)
        num_labels = 1 + int(max(gold_ids.max(initial=0), predicted_ids.max(initial=0)))
    return confusion_statistics(gold, predicted, num_labels)


def metric_value(metric, statistics):
    """The metric of per-example statistics [N, K] over all N examples (a float)."""
    statistics = np.asarray(statistics, float)
    if statistics.ndim != 2 or statistics.shape[0] == 0:
        raise ValueError(f"expected statistics [N > 0, K], got shape {statistics.shape}")
    return float(_metric_function(metric)(statistics.mean(axis=0)))


def mean_std(values):
    """(mean, sample standard deviation with ddof=1); std is None for fewer than 2 values,
    both are None for no values."""
    values = [float(value) for value in values]
    if not values:
        return None, None
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


def _check_paired(stats_a, stats_b):
    stats_a, stats_b = np.asarray(stats_a, float), np.asarray(stats_b, float)
    if stats_a.ndim != 3 or stats_a.shape != stats_b.shape:
        raise ValueError("expected two statistics arrays [seeds, examples, K] of one shape, got "
                         f"{stats_a.shape} and {stats_b.shape}")
    if 0 in stats_a.shape:
        raise ValueError(f"no seeds, examples or statistics: shape {stats_a.shape}")
    return stats_a, stats_b


def _example_counts(rng, num_replicates, num_examples):
    """[replicates, examples] multinomial counts: how often each example is drawn (sum N)."""
    drawn = rng.integers(0, num_examples, size=(num_replicates, num_examples), dtype=np.int32)
    counts = np.empty((num_replicates, num_examples))
    for replicate, row in enumerate(drawn):
        counts[replicate] = np.bincount(row, minlength=num_examples)
    return counts


def _columns(stats_a, stats_b):
    """The statistics of every seed of a, then of every seed of b that differs from a's, side
    by side: (the columns that are not all zero [N, C], their indices among all the columns,
    the number of all the columns, the column slice of each seed of a, of each seed of b).
    A seed of b identical to a's gets a's slice. Zero columns (most of a confusion one-hot)
    have zero totals in every resample, so only the others are multiplied."""
    num_seeds, _, width = stats_a.shape
    blocks = [stats_a[seed] for seed in range(num_seeds)]
    slices_a = [slice(width * seed, width * (seed + 1)) for seed in range(num_seeds)]
    slices_b = []
    for seed in range(num_seeds):
        if np.array_equal(stats_a[seed], stats_b[seed]):
            slices_b.append(slices_a[seed])  # the same totals: the difference is exactly 0
        else:
            slices_b.append(slice(width * len(blocks), width * (len(blocks) + 1)))
            blocks.append(stats_b[seed])
    kept = [np.flatnonzero(block.any(axis=0)) for block in blocks]
    columns = np.concatenate([block[:, index] for block, index in zip(blocks, kept)], axis=1)
    indices = np.concatenate([width * number + index for number, index in enumerate(kept)])
    return columns, indices, width * len(blocks), slices_a, slices_b


def _replicate_differences(columns, indices, num_columns, slices, metric_fn, num_replicates,
                           rng):
    """Mean over resampled seeds of metric(b) - metric(a) on resampled examples, per replicate."""
    slices_a, slices_b = slices
    num_examples, num_seeds = columns.shape[0], len(slices_a)
    seed_counts = np.zeros((num_replicates, num_seeds))
    drawn_seeds = rng.integers(0, num_seeds, size=(num_replicates, num_seeds))
    np.add.at(seed_counts, (np.arange(num_replicates)[:, None], drawn_seeds), 1.0)
    totals = np.zeros((num_replicates, num_columns))
    totals[:, indices] = _example_counts(rng, num_replicates, num_examples) @ columns
    totals /= num_examples
    per_seed = np.stack([metric_fn(totals[:, slice_b]) - metric_fn(totals[:, slice_a])
                         for slice_a, slice_b in zip(slices_a, slices_b)], axis=1)
    return (seed_counts * per_seed).sum(axis=1) / num_seeds


def paired_bootstrap(stats_a, stats_b, metric, num_samples=2000, confidence=0.95, seed=0):
    """Run b against run a: mean paired difference, percentile interval and verdict.

    stats_a, stats_b: [S seeds, N examples, K] per-example statistics; seed s
    of a is paired with seed s of b, example n is the same example in both.
    Each replicate draws S seeds and N examples with replacement (the same
    for both runs, the same examples for every seed), takes the metric of
    each drawn seed of a and b on the drawn examples and averages b - a over
    the drawn seeds. Returns {"difference", "low", "high", "verdict",
    "num_samples", "confidence", "method"}; verdict is "better" when low > 0,
    "worse" when high < 0, else "no evidence".
    """
    stats_a, stats_b = _check_paired(stats_a, stats_b)
    metric_fn = _metric_function(metric)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be at least 1, got {num_samples}")
    num_seeds, num_examples, _ = stats_a.shape
    difference = float(np.mean(metric_fn(stats_b.mean(axis=1)) - metric_fn(stats_a.mean(axis=1))))
    rng = np.random.default_rng(seed)
    columns, indices, num_columns, *slices = _columns(stats_a, stats_b)
    chunk = max(1, _CHUNK_ELEMENTS // max(num_examples, num_columns))
    replicates = np.concatenate([
        _replicate_differences(columns, indices, num_columns, slices, metric_fn,
                               min(chunk, num_samples - start), rng)
        for start in range(0, num_samples, chunk)])
    tail = 100 * (1 - confidence) / 2
    low, high = (float(value) for value in np.percentile(replicates, [tail, 100 - tail]))
    verdict = "better" if low > 0 else "worse" if high < 0 else "no evidence"
    return {
        "difference": difference, "low": low, "high": high, "verdict": verdict,
        "num_samples": int(num_samples), "confidence": float(confidence),
        "method": (f"Hierarchical paired bootstrap: each of {num_samples} replicates resamples "
                   f"the {num_seeds} seeds and the {num_examples} examples with replacement, "
                   f"the same draws for both runs, and the {confidence:.0%} interval is the "
                   "percentile interval of the replicates' mean differences over seeds."),
    }
