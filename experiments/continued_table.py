r"""The continued-pretraining tables: one row per task and model, general vs general +
continued; and a sweep's, one row per continuing recipe.

    python -m experiments.continued_table --runs_dir=runs/continued \
        [--output_file=runs/continued/table.md] [--summary_file=rows.json]
    python -m experiments.continued_table --sweep_dir=runs/continued/lcqmc/roberta/sweep \
        [--output_file=runs/continued/lcqmc/roberta/sweep/table.md] [--summary_file=sweep.json]

Reads what scripts/continued_experiment.sh leaves in RUNS_DIR/TASK/MODEL/:
  continued/eval_results.txt   the continued model's held-out eval beside its start's on the
                               same batches (init_*), and general/* on held-out general text
  compare/results.json         finetune.compare of "general" (first run: the baseline),
                               "general + continued" and "random init", at the task's
                               fine-tuning budget
  compare_trainN/results.json  the same on N training examples (FINETUNE_MAX_TRAIN_EXAMPLES)
One line per comparison, the task's budget first. A row whose comparison has not run yet
(only continued/eval_results.txt) shows its evals and says so in the fine-tuning cells.
The Δ is the continued model's against the general one (the question continuing asks), on
the task's selection metric, with compare's interval and verdict, not recomputed here.
A sweep (`continued_experiment.sh TASK MODEL sweep`) leaves SWEEP_DIR/compare/results.json:
"general" first, then one run per point labelled "lr RATE, N steps", each point's
eval_results.txt beside its checkpoint (SWEEP_DIR/compare_trainN/: on N examples).
--summary_file writes the rows (collect_rows) or the sweep (read_sweep) as JSON, which
markdown_table and sweep_markdown_table take back: experiments.tables renders the docs'
continued tables so from experiments/measured/continued_*.json.
"""
import dataclasses
import glob
import json
import os
import re

from common import cli_options
from common.cli_options import UserError, option
from experiments.from_scratch_table import MISSING, mean_sd, show_and_write
from finetune import compare, comparison_report, verdicts
from pretrain.training import learning_check

GENERAL, CONTINUED, RANDOM = "general", "general + continued", "random init"
SWEEP_POINT = re.compile(r"^lr (?P<rate>[0-9.eE+-]+), (?P<steps>[0-9]+) steps$")
NOT_RUN = "fine-tuning not run yet"
DEFAULT_COMPARISON = "compare"
RESULTS = "results.json"
BUDGET_COMPARISON = re.compile(r"^compare_train(?P<examples>[1-9][0-9]*)$")
EVAL_RESULTS = os.path.join("continued", "eval_results.txt")


def comparisons(row_dir):
    """The finished comparisons' folder names in `row_dir`: compare, then compare_trainN by N."""
    def examples(name):
        match = BUDGET_COMPARISON.match(name)
        return int(match["examples"]) if match else 0
    return sorted((name for name in os.listdir(row_dir)
                   if (name == DEFAULT_COMPARISON or BUDGET_COMPARISON.match(name))
                   and os.path.isfile(os.path.join(row_dir, name, RESULTS))), key=examples)


def fine_tuning_budget(comparison):
    """'16,000 × 1 ep.' (training examples × epochs; 'all' for every example) from a
    comparison's recorded settings, '—' when not recorded."""
    settings = comparison.get("settings") or {}
    examples, epochs = settings.get("max_train_examples"), settings.get("num_train_epochs")
    if examples is None or epochs is None:
        return MISSING
    return (f"{examples:,}" if examples else "all") + f" × {epochs:g} ep."


def read_row(row_dir, comparison_name=DEFAULT_COMPARISON):
    """{task, model_name, model, metric, seeds, split, budget, general, continued, random
    (compare's rows), difference (continued vs general on the metric, or None), eval (the
    continued run's eval_results as floats)} of one TASK/MODEL folder's comparison; before
    it has run, the evals alone (metric None)."""
    path = os.path.join(row_dir, comparison_name, RESULTS)
    eval_path = os.path.join(row_dir, EVAL_RESULTS)
    if not os.path.isfile(path):
        config = os.path.join(row_dir, "continued", "bert_config.json")
        with open(config, encoding="utf-8") as f:
            model = compare.describe_model(json.load(f))
        return {"task": os.path.basename(os.path.dirname(row_dir)),
                "model_name": os.path.basename(row_dir), "model": model, "metric": None,
                "seeds": [], "budget": MISSING, "general": None, "continued": None,
                "random": None, "difference": None,
                "eval": learning_check.read_eval_results(eval_path)}
    with open(path, encoding="utf-8") as f:
        comparison = comparison_report.judge_differences(json.load(f))
    rows = {row["label"]: row for row in comparison_report.comparison_rows(comparison)}
    if GENERAL not in rows or CONTINUED not in rows:
        raise ValueError(f"{path}: expected the runs {GENERAL!r} and {CONTINUED!r} (from "
                         f"scripts/continued_experiment.sh), found {sorted(rows)}")
    metric = comparison["selection_metric"]
    return {"task": os.path.basename(os.path.dirname(row_dir)),
            "model_name": os.path.basename(row_dir), "model": rows[CONTINUED]["model"],
            "metric": metric, "seeds": rows[CONTINUED]["seeds"],
            "split": comparison["evaluated_split"], "budget": fine_tuning_budget(comparison),
            "general": rows[GENERAL],
            "continued": rows[CONTINUED], "random": rows.get(RANDOM),
            "difference": (rows[CONTINUED]["against_first_run"] or {}).get(metric),
            "eval": learning_check.read_eval_results(eval_path)}


def collect_rows(runs_dir):
    """Every TASK/MODEL row of `runs_dir` whose continued pretraining has been evaluated, by
    task then model, one per fine-tuning budget (the task's first)."""
    rows = []
    for path in sorted(glob.glob(os.path.join(runs_dir, "*", "*", EVAL_RESULTS))):
        row_dir = os.path.dirname(os.path.dirname(path))
        rows += [read_row(row_dir, name) for name in comparisons(row_dir) or [DEFAULT_COMPARISON]]
    return rows


def scores_cell(run, metric):
    if run is None:
        return MISSING
    dev, test = ((run.get(split) or {}).get(metric) for split in ("dev", "test"))
    text = f"{mean_sd(dev)} / {mean_sd(test)}"
    if run["collapsed_seeds"]:
        text += " collapsed (seeds " + ", ".join(map(str, run["collapsed_seeds"])) + ")"
    return text


def start_end(values, prefix=""):
    """'start → end' MLM accuracy in % from eval_results (prefix: 'general/')."""
    start = values.get(prefix + "init_masked_lm_accuracy")
    end = values.get(prefix + "masked_lm_accuracy")
    if start is None or end is None:
        return MISSING
    return f"{100 * start:.1f} → {100 * end:.1f}"


def delta_cell(row):
    difference = row["difference"]
    if difference is None:
        return MISSING
    return (f"{100 * difference['difference']:+.2f} [{100 * difference['low']:+.2f}, "
            f"{100 * difference['high']:+.2f}]")


HEADER = ("task", "model", "MLM acc. on held-out task text, start → end", "on general text",
          "metric", "fine-tuned on", "general dev / test", "general + continued dev / test",
          "Δ continued − general [95% CI]", "verdict", "random init dev / test", "seeds")
BUDGET_COLUMN = HEADER.index("fine-tuned on")


def _line(cells):
    """A Markdown table line; an empty cell is '| |'."""
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def _cells(row):
    evals = [row["task"], f"{row['model_name']}: {row['model']}", start_end(row["eval"]),
             start_end(row["eval"], "general/")]
    metric = row["metric"]
    if metric is None:
        return evals + [NOT_RUN, "", NOT_RUN, NOT_RUN, "", "", "", ""]
    verdict = (verdicts.verdict_cell(row["difference"]["verdict"]) if row["difference"]
               else "not computed")
    return evals + [metric, row["budget"], scores_cell(row["general"], metric),
                    scores_cell(row["continued"], metric), delta_cell(row), verdict,
                    scores_cell(row["random"], metric), ", ".join(map(str, row["seeds"]))]


def markdown_table(rows, budget_column=True):
    """One line per task and model; without the 'fine-tuned on' column if not
    `budget_column` (the docs' tables of one budget each, from before it was added)."""
    def shown(cells):
        return [cell for index, cell in enumerate(cells)
                if budget_column or index != BUDGET_COLUMN]
    rule = ["---:" if name.startswith("Δ") else "---" for name in HEADER]
    return "\n".join([_line(shown(HEADER)), "|" + "|".join(shown(rule)) + "|"]
                     + [_line(shown(_cells(row))) for row in rows])


def footnote():
    return ("Metrics in %: mean ± sample standard deviation over the seeds, the same seeds for "
            "every starting point. Fine-tuned on: training examples × epochs (one line per "
            "budget a row was fine-tuned at). MLM acc.: the continued run's eval of its "
            "starting checkpoint (start) and of itself (end) on the same held-out batches of "
            "the task's text and of general text (forgetting). Δ: the continued model minus the "
            "general one it started from, on the task's test split, in points, with "
            "finetune.compare's paired bootstrap interval; verdict: better / worse when the "
            "interval excludes 0, else no evidence; none with fewer than "
            f"{verdicts.MIN_SEEDS} seeds, a collapsed seed or a baseline at chance (the cell "
            "says why).")


def read_comparison(path, first, mode):
    """(the comparison judged, its rows) of a results.json whose first run (the baseline) is
    labelled `first`, as continued_experiment.sh TASK MODEL `mode` makes it."""
    with open(path, encoding="utf-8") as f:
        comparison = comparison_report.judge_differences(json.load(f))
    rows = comparison_report.comparison_rows(comparison)
    if not rows or rows[0]["label"] != first:
        raise ValueError(f"{path}: expected {first!r} as the first run (from "
                         f"scripts/continued_experiment.sh TASK MODEL {mode})")
    return comparison, rows


def read_sweep(sweep_dir, comparison_name=DEFAULT_COMPARISON):
    """{metric, seeds, budget, general (compare's row), points: [{rate, steps, row, eval}]} of
    a sweep's comparison, points by steps then learning rate."""
    path = os.path.join(sweep_dir, comparison_name, RESULTS)
    comparison, rows = read_comparison(path, GENERAL, "sweep")
    points = []
    for row in rows[1:]:
        match = SWEEP_POINT.match(row["label"])
        if match is None:
            raise ValueError(f"{path}: run {row['label']!r} is not a sweep point "
                             "('lr RATE, N steps')")
        points.append({"rate": match["rate"], "steps": int(match["steps"]), "row": row,
                       "eval": learning_check.read_eval_results(
                           os.path.join(row["init_checkpoint"] or "", "eval_results.txt"))})
    points.sort(key=lambda point: (point["steps"], float(point["rate"])))
    return {"metric": comparison["selection_metric"], "seeds": rows[0]["seeds"],
            "budget": fine_tuning_budget(comparison), "general": rows[0], "points": points}


def _overlapping(best, judged, metric):
    """' Its interval overlaps ...' naming the points the largest Δ is not told apart from
    (overlapping 95% intervals: a rough reading, not a paired test between points)."""
    def interval(point):
        difference = point["row"]["against_first_run"][metric]
        return difference["low"], difference["high"]
    low, high = interval(best)
    close = [f"lr {point['rate']}, {point['steps']} steps" for point in judged
             if point is not best and interval(point)[0] <= high and low <= interval(point)[1]]
    if not close:
        return " Its interval overlaps no other point's."
    named = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " and " + close[-1]
    return (f" Its interval overlaps that of {named}: at these seeds the sweep does not tell "
            "them apart.")


def sweep_markdown_table(sweep):
    """One line for the general model, then one per point."""
    metric = sweep["metric"]
    lines = ["| continuing recipe | MLM acc. on held-out task text, start → end "
             "| on general text | " + f"{metric} dev / test "
             "| Δ vs general [95% CI] | verdict |",
             "|---|---|---|---|---:|---|",
             f"| general (not continued) | | | {scores_cell(sweep['general'], metric)} | | |"]
    for point in sweep["points"]:
        difference = (point["row"]["against_first_run"] or {}).get(metric)
        verdict = verdicts.verdict_cell(difference["verdict"]) if difference else MISSING
        lines.append(
            f"| lr {point['rate']}, {point['steps']} steps | {start_end(point['eval'])} "
            f"| {start_end(point['eval'], 'general/')} | {scores_cell(point['row'], metric)} "
            f"| {delta_cell({'difference': difference})} | {verdict} |")
    return "\n".join(lines)


def largest_delta(sweep):
    """'Largest Δ: ...', the point with the largest Δ and those it is not told apart from;
    '' when no point has a Δ."""
    metric = sweep["metric"]
    judged = [point for point in sweep["points"]
              if (point["row"]["against_first_run"] or {}).get(metric)]
    if not judged:
        return ""
    best = max(judged, key=lambda point: point["row"]["against_first_run"][metric]
               ["difference"])
    return (f"Largest Δ: lr {best['rate']}, {best['steps']} steps (seeds "
            f"{', '.join(map(str, sweep['seeds']))}; fine-tuned on {sweep['budget']}; "
            f"Δ in points of test {metric}, each point against the same general "
            "fine-tunings)." + _overlapping(best, judged, metric))


def sweep_table(sweep):
    """The sweep's table, the largest Δ named below it."""
    return "\n\n".join(filter(None, [sweep_markdown_table(sweep), largest_delta(sweep)]))


@dataclasses.dataclass
class ContinuedTableOptions:
    """The flags of `python -m experiments.continued_table`."""
    runs_dir: str = option("", "The RUNS folder of scripts/continued_experiment.sh.")
    sweep_dir: str = option("", "Instead: a sweep's folder (RUNS/TASK/MODEL/sweep of "
                                "continued_experiment.sh TASK MODEL sweep).")
    comparison: str = option(DEFAULT_COMPARISON, "With --sweep_dir: its comparison folder, "
                             "compare (the task's fine-tuning budget) or compare_trainN (N "
                             "training examples).")
    output_file: str = option("", "Also write the Markdown table here.")
    summary_file: str = option("", "Also write the rows' (or the sweep's) numbers here as "
                               "JSON (what experiments.tables renders the docs' tables from, "
                               "experiments/measured/continued_*.json).")


def _run(options):
    if bool(options.runs_dir) == bool(options.sweep_dir):
        raise UserError("give --runs_dir (the rows' table) or --sweep_dir (a sweep's), one of "
                        "them")
    if options.sweep_dir:
        name = options.comparison
        if name != DEFAULT_COMPARISON and not BUDGET_COMPARISON.match(name):
            raise UserError(f"--comparison={name}: give compare or compare_trainN (N training "
                            "examples, as continued_experiment.sh names them)")
        path = os.path.join(name, RESULTS)
        if not os.path.isfile(os.path.join(options.sweep_dir, path)):
            raise UserError(f"--sweep_dir={options.sweep_dir}: no {path} yet (run bash "
                            "scripts/continued_experiment.sh TASK MODEL sweep)")
        sweep = read_sweep(options.sweep_dir, name)
        show_and_write(sweep_table(sweep), options.output_file, sweep, options.summary_file)
        return
    rows = collect_rows(options.runs_dir) if os.path.isdir(options.runs_dir) else []
    if not rows:
        raise UserError(f"--runs_dir={options.runs_dir}: no TASK/MODEL/{EVAL_RESULTS} yet (run "
                        "bash scripts/continued_experiment.sh TASK MODEL)")
    show_and_write(markdown_table(rows) + "\n\n" + footnote(), options.output_file, rows,
                   options.summary_file)


def main(argv=None):
    cli_options.run_main(ContinuedTableOptions, _run, argv, expected=(OSError, ValueError))


if __name__ == "__main__":
    main()
