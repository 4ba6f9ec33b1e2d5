"""The Markdown report of a fine-tuning comparison, and the numbers behind its tables.

    markdown = render_markdown(comparison)   # results.md
    rows = comparison_rows(comparison)       # results.json: one dict per run

`comparison` holds the task, title, metrics (values in [0, 1]),
selection_metric, seeds, evaluated_split, runs (label, model,
init_checkpoint, per_seed results with dev/test metrics and `collapsed`),
differences (`statistics.paired_bootstrap` results of run i > 0 against run 0,
with their "label" and "metric"; `judge_differences` adds the verdict the tables show and
its flags, finetune.verdicts), settings and plot_note.

Table 1: per run, each metric's mean ± sample standard deviation over the
seeds on dev and (when any run has one) test, in %, and the best seed on the
selection metric. Table 2 (two runs or more): per later run and metric, the
mean paired difference to the first run in points, its confidence interval
and the verdict. Footnotes say what ± and the interval are, that every run
used the same seeds, the settings, a WARNING when the architectures differ,
and the plot note. Cells are escaped so the Markdown tables stay valid.
"""
from finetune import verdicts
from finetune.statistics import mean_std

MISSING = "—"
METRIC_NAMES = {"accuracy": "accuracy", "macro_f1": "macro F1", "f1": "F1",
                "precision": "precision", "recall": "recall"}


def _cell(text):
    """Text safe inside a Markdown table cell: pipes escaped, no line breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _metric_name(metric):
    return METRIC_NAMES.get(metric, metric)


def _percent(value):
    return f"{100 * value:.2f}"


def _mean_std_cell(summary):
    if summary is None or summary["mean"] is None:
        return MISSING
    if summary["std"] is None:
        return _percent(summary["mean"])
    return f"{_percent(summary['mean'])} ± {_percent(summary['std'])}"


def _points(value):
    return f"{100 * value:+.2f}"


def _split_summary(per_seed, split, metrics):
    """{metric: {"mean", "std"}} over the seeds, or None when a seed has no `split` results."""
    if not per_seed or any(not seed_result.get(split) for seed_result in per_seed):
        return None
    summary = {}
    for metric in metrics:
        mean, std = mean_std([seed_result[split][metric] for seed_result in per_seed])
        summary[metric] = {"mean": mean, "std": std}
    return summary


def _best_seed(per_seed, selection_metric):
    """The seed with the highest dev selection metric (the first seed wins a tie)."""
    scored = [seed_result for seed_result in per_seed
              if (seed_result.get("dev") or {}).get(selection_metric) is not None]
    if not scored:
        return None
    best = max(enumerate(scored), key=lambda item: (item[1]["dev"][selection_metric], -item[0]))[1]
    return {"seed": best["seed"], "metric": selection_metric,
            "dev": best["dev"][selection_metric]}


def _collapsed_seeds(run):
    return [seed_result["seed"] for seed_result in run["per_seed"] if seed_result.get("collapsed")]


def _first_seed_value(run, key):
    """A per-seed value that is the same for every seed (the dev set's), or None."""
    values = [seed_result.get(key) for seed_result in run["per_seed"]]
    return values[0] if values and values[0] is not None else None


def _differences_by_run(comparison):
    """{(label, metric): difference} of comparison["differences"]."""
    return {(difference["label"], difference["metric"]): difference
            for difference in comparison.get("differences") or []}


def _check(comparison):
    labels = [run["label"] for run in comparison["runs"]]
    if not labels:
        raise ValueError("a comparison needs at least one run")
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be unique, got {labels}")
    for run in comparison["runs"]:
        seeds = [seed_result["seed"] for seed_result in run["per_seed"]]
        if seeds != list(comparison["seeds"]):
            raise ValueError(f"run {run['label']!r} has seeds {seeds}, not the comparison's "
                             f"{list(comparison['seeds'])}: every run must use the same seeds")
    if comparison["selection_metric"] not in comparison["metrics"]:
        raise ValueError(f"selection metric {comparison['selection_metric']!r} is not one of "
                         f"the metrics {comparison['metrics']}")


def comparison_rows(comparison):
    """One dict per run: label, model, init_checkpoint, seeds, collapsed_seeds, dev and test
    ({metric: {"mean", "std"}}; test None without test results), best_seed ({"seed",
    "metric", "dev"}), dev_majority_share and dev_examples (classification), and
    against_first_run ({metric: {"difference", "low", "high", "verdict", "flags",
    "interval_verdict", "confidence", "num_samples"}}; None for the first run)."""
    _check(comparison)
    metrics, differences = comparison["metrics"], _differences_by_run(comparison)
    rows = []
    for index, run in enumerate(comparison["runs"]):
        against = None
        if index > 0:
            against = {}
            for metric in metrics:
                found = differences.get((run["label"], metric))
                against[metric] = None if found is None else {
                    key: found.get(key) for key in ("difference", "low", "high", "verdict",
                                                    "flags", "interval_verdict", "confidence",
                                                    "num_samples")}
        rows.append({
            "label": run["label"], "model": run.get("model"),
            "init_checkpoint": run.get("init_checkpoint"),
            "seeds": [seed_result["seed"] for seed_result in run["per_seed"]],
            "collapsed_seeds": _collapsed_seeds(run),
            "dev": _split_summary(run["per_seed"], "dev", metrics),
            "test": _split_summary(run["per_seed"], "test", metrics),
            "best_seed": _best_seed(run["per_seed"], comparison["selection_metric"]),
            "dev_majority_share": _first_seed_value(run, "dev_majority_share"),
            "dev_examples": _first_seed_value(run, "dev_examples"),
            "against_first_run": against,
        })
    return rows


def judge_differences(comparison):
    """Gives every difference the verdict the tables show and its flags (finetune.verdicts),
    keeping the bootstrap's own as interval_verdict. Idempotent."""
    rows = {row["label"]: row for row in comparison_rows(comparison)}
    baseline = rows[comparison["runs"][0]["label"]]
    for difference in comparison.get("differences") or []:
        interval = difference.setdefault("interval_verdict", difference["verdict"])
        difference.update(verdicts.judge(interval, len(comparison["seeds"]), baseline,
                                         rows[difference["label"]]))
    return comparison


def _label_cell(row):
    label = _cell(row["label"])
    if row["collapsed_seeds"]:
        label += " — collapsed (seeds " + ", ".join(map(str, row["collapsed_seeds"])) + ")"
    return label


def _results_table(comparison, rows):
    metrics = comparison["metrics"]
    splits = ["dev"] + (["test"] if any(row["test"] for row in rows) else [])
    selection = _metric_name(comparison["selection_metric"])
    header = ["starting point", "model"]
    header += [f"{split} {_metric_name(metric)}" for metric in metrics for split in splits]
    header.append(f"best seed (dev {selection})")
    lines = ["| " + " | ".join(header) + " |",
             "|---|---|" + "---:|" * (len(metrics) * len(splits)) + "---|"]
    for row in rows:
        cells = [_label_cell(row), _cell(row["model"] or MISSING)]
        for metric in metrics:
            for split in splits:
                cells.append(_mean_std_cell((row[split] or {}).get(metric)))
        best = row["best_seed"]
        cells.append(MISSING if best is None else f"seed {best['seed']}: {_percent(best['dev'])}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _confidence(comparison):
    """The one confidence level of the differences (0.95 when there are none)."""
    confidences = {d["confidence"] for d in comparison.get("differences") or []}
    if len(confidences) > 1:
        raise ValueError(f"differences at several confidence levels: {sorted(confidences)}")
    return confidences.pop() if confidences else 0.95


def _differences_table(comparison, rows):
    first = rows[0]
    level = f"{_confidence(comparison):.0%}"
    lines = [f"| starting point | metric | Δ vs {_cell(first['label'])} (points) | {level} CI "
             "| verdict |",
             "|---|---|---:|---|---|"]
    for row in rows[1:]:
        for metric in comparison["metrics"]:
            difference = row["against_first_run"][metric]
            if difference is None:
                cells = [MISSING, MISSING, "not computed"]
            else:
                cells = [_points(difference["difference"]),
                         f"[{_points(difference['low'])}, {_points(difference['high'])}]",
                         verdicts.verdict_cell(difference["verdict"])]
            lines.append(f"| {_cell(row['label'])} | {_metric_name(metric)} | "
                         + " | ".join(cells) + " |")
    return lines


def _format_setting(value):
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _footnotes(comparison, rows):
    seeds = comparison["seeds"]
    seed_list = ", ".join(map(str, seeds))
    split = comparison["evaluated_split"]
    selection = _metric_name(comparison["selection_metric"])
    notes = []
    if len(seeds) > 1:
        notes.append(f"Metrics in %: mean ± sample standard deviation over the {len(seeds)} "
                     f"seeds ({seed_list}) of each seed's best-on-dev checkpoint; the same "
                     "seeds were used for every run. (The dev curve's legend gives the peak of "
                     "the mean curve instead, which is never above the dev mean here.)")
    else:
        notes.append(f"Metrics in %: one seed ({seed_list}), so no standard deviation; the "
                     "same seed was used for every run.")
    notes.append(f"Best seed: the seed with the highest dev {selection} (the selection "
                 "metric), with that dev value.")
    if len(rows) > 1:
        differences = comparison.get("differences") or []
        method = differences[0]["method"] if differences else "not computed."
        first = _cell(rows[0]["label"])
        notes.append(f"Δ: mean over seeds of the paired difference to {first} on the {split} "
                     f"split, in points. CI: {method} Verdict: better / worse when the whole "
                     "interval lies above / below 0, else no evidence; none when fewer than "
                     f"{verdicts.MIN_SEEDS} seeds ran, when a seed predicted one class (or no "
                     f"entities) for nearly all of dev, or when {first} "
                     f"is at chance (dev accuracy within {verdicts.CHANCE_STANDARD_ERRORS:g} "
                     "standard errors of the majority share): the cell says which.")
    collapsed = [row for row in rows if row["collapsed_seeds"]]
    if collapsed:
        notes.append("collapsed: a seed whose fine-tuning collapsed (one class, or no "
                     "entities, for nearly every dev example); a comparison involving it "
                     "gets no verdict.")
    settings = comparison.get("settings") or {}
    if settings:
        notes.append("Settings: " + ", ".join(f"{name}={_format_setting(value)}"
                                              for name, value in settings.items()) + ".")
    models = list(dict.fromkeys(row["model"] for row in rows))
    if len(models) > 1:
        notes.append("WARNING: the runs differ in model architecture ("
                     + " vs ".join(map(str, models)) + "); the comparison is not like for like.")
    if comparison.get("plot_note"):
        notes.append(comparison["plot_note"])
    return notes


def render_markdown(comparison):
    """The comparison as Markdown: title, results table, differences table, footnotes.
    Judges its differences first (judge_differences), so results.json and the table agree."""
    rows = comparison_rows(judge_differences(comparison))
    title = " ".join(str(comparison["title"]).split())
    sections = [f"# {title}", "\n".join(_results_table(comparison, rows))]
    if len(rows) > 1:
        sections.append("\n".join(_differences_table(comparison, rows)))
    sections.append("\n\n".join(_footnotes(comparison, rows)))
    return "\n\n".join(sections) + "\n"
