r"""The arms' table of one task (#66 point 4) and #66's decision across the three tasks.

    python -m experiments.arms_table --arms_dir=runs/continued/lcqmc/roberta/arms \
        --comparison=compare_train40000 [--output_file=.../arms/table_train40000.md]
    python -m experiments.arms_table --decision_runs=runs/continued [--output_file=...]

Reads what `continued_experiment.sh TASK roberta arms` (experiments.continued_arms) leaves in
ARMS_DIR: COMPARISON/results.json (today's recipe first, then one run per arm, labelled by
its name in continuing_arms.json), each arm's eval_results.txt beside its checkpoint (a
train-time arm's: on train-time held-out records at its final rate) and a train-time arm's
static_eval/eval_results.txt (on the row's static held-out records, as every static arm's
eval). The MLM start is the general model on those static batches, from today's run.

The rule, fixed before the runs (docs/experiments.md): an arm becomes the continuing default
only if it is told apart as better than today's recipe on at least 2 of the 3 tasks and worse
on none. Told apart as better: the Δ's 95% interval above 0 with compare's verdict standing
(none withheld for collapsed seeds, too few seeds or a baseline at chance); worse: the
interval below 0, withheld or not (the rule errs towards today's recipe). Each task's
comparison is the one continuing_arms.json's decision_comparisons names.

A task's arms are compared on one build of the general model, but the three tasks need not
share one: each task's comparison is summarised (--summary_file) into
experiments/measured/arms_TASK.json and committed, and the decision reads a task's summary
where RUNS no longer holds its comparison (a session's machine is not always kept).
"""
import dataclasses
import os

from common import cli_options
from common.cli_options import UserError, option
from experiments import continued_arms, continued_table, data_files
from experiments.data_files import MEASURED_DIR
from experiments.continued_table import MISSING, RESULTS, delta_cell, scores_cell, start_end
from experiments.from_scratch_table import show_and_write
from finetune import verdicts
from pretrain.training import learning_check

MIN_BETTER = 2
MLM_KEYS = ("init_masked_lm_accuracy", "masked_lm_accuracy")
# What a summary keeps of compare's row of a run: what the table and the rule read.
ROW_FIELDS = ("label", "dev", "test", "collapsed_seeds", "against_first_run")
SUMMARY_FIELDS = {"task": str, "comparison": str, "metric": str, "seeds": list, "budget": str,
                  "baseline": str, "arms": list, "source": str}
ENTRY_FIELDS = {"name": str, "arm": dict, "static": dict, "own": dict, "row": dict}


def _evals(folder):
    return learning_check.read_eval_results(os.path.join(folder or "", "eval_results.txt"))


def final_rate(flags):
    """The masking rate of a train-time arm's last step, as its evals draw it ('0.15')."""
    rates = dict(flag[2:].split("=", 1) for flag in flags if "=" in flag)
    return rates.get("final_mlm_probability", rates.get("mlm_probability", "0.15"))


def read_arms_comparison(arms_dir, comparison_name):
    """{metric, seeds, budget, baseline, arms: [{name, arm, row, static, own}]} of an arms
    comparison: `row` compare's, `static` the evals on static held-out records (the start
    from today's run), `own` a train-time arm's eval on its own records ({} for static)."""
    defined = continued_arms.read_arms()
    path = os.path.join(arms_dir, comparison_name, RESULTS)
    comparison, rows = continued_table.read_comparison(path, defined["baseline"], "arms")
    today = _evals(rows[0]["init_checkpoint"])
    start = {key: today[key] for key in ("init_masked_lm_accuracy",
                                         "general/init_masked_lm_accuracy") if key in today}
    arms = []
    for row in rows:
        if row["label"] not in defined["arms"]:
            raise ValueError(f"{path}: run {row['label']!r} is not an arm of "
                             f"{continued_arms.ARMS_FILE}")
        arm = defined["arms"][row["label"]]
        own = _evals(row["init_checkpoint"])
        static = own if arm["data"] == "static" else _evals(
            os.path.join(row["init_checkpoint"] or "", continued_arms.STATIC_EVAL))
        static = {key: value for key, value in static.items() if "init_" not in key}
        arms.append({"name": row["label"], "arm": arm, "row": row, "static": dict(static, **start),
                     "own": own if arm["data"] == "train_time" else {}})
    return {"metric": comparison["selection_metric"], "seeds": rows[0]["seeds"],
            "budget": continued_table.fine_tuning_budget(comparison),
            "baseline": defined["baseline"], "arms": arms}


def summary(comparison, task, comparison_name):
    """read_arms_comparison()'s result, JSON-able and without paths: the numbers its table
    and the rule read, for experiments/measured/arms_TASK.json."""
    arms = [{"name": entry["name"], "arm": entry["arm"], "static": entry["static"],
             "own": entry["own"], "row": {key: entry["row"].get(key) for key in ROW_FIELDS}}
            for entry in comparison["arms"]]
    return dict(comparison, task=task, comparison=comparison_name, arms=arms)


def summary_path(measured_dir, task):
    return os.path.join(measured_dir, f"arms_{task}.json")


def read_summary(path):
    """A task's summary (summary()'s fields; `source` optional: where transcribed numbers came
    from), each field and each arm's entry checked; UserError naming the file and field."""
    found = data_files.read_fields(path, SUMMARY_FIELDS, optional={"source": ""})
    for index, entry in enumerate(found["arms"]):
        where = f"{path}: arms[{index}]"
        data_files.check_fields(where, entry, ENTRY_FIELDS)
        data_files.check_fields(f"{where}.row", entry["row"], dict.fromkeys(ROW_FIELDS, object))
    return found


def told_apart(difference):
    """'better', 'worse' or 'neither' of a Δ against today's recipe (the module's rule);
    None when there is none."""
    if not difference:
        return None
    if difference["high"] < 0:
        return "worse"
    if difference["low"] > 0 and difference["verdict"] == "better":
        return "better"
    return "neither"


def outcomes(comparison):
    """{arm: told_apart(...)} of every arm but today's in one task's arms comparison."""
    metric = comparison["metric"]
    return {entry["name"]: told_apart((entry["row"]["against_first_run"] or {}).get(metric))
            for entry in comparison["arms"][1:]}


def decide(by_task, arm_names):
    """{arm: {better, worse, missing (task lists), adopted}} of the rule over `by_task`
    ({task: outcomes(...) or None when its comparison is missing})."""
    decided = {}
    for name in arm_names:
        found = {task: (results or {}).get(name) for task, results in by_task.items()}
        better = [task for task, outcome in found.items() if outcome == "better"]
        worse = [task for task, outcome in found.items() if outcome == "worse"]
        missing = [task for task, outcome in found.items() if outcome is None]
        decided[name] = {"better": better, "worse": worse, "missing": missing,
                         "adopted": not missing and len(better) >= MIN_BETTER and not worse}
    return decided


def decision_line(decided, baseline, tasks):
    """'#66's decision: ...' of decide()'s result."""
    adopted = [name for name, result in decided.items() if result["adopted"]]
    if adopted:
        return ("#66's decision: " + " and ".join(adopted) + (" meets" if len(adopted) == 1
                else " each meet") + f" the rule (better than {baseline} on at least "
                f"{MIN_BETTER} tasks, worse on none): the continuing default changes.")
    waiting = [name for name, result in decided.items() if result["missing"]]
    if waiting:
        return (f"#66's decision: not yet: {', '.join(waiting)} still to be compared on "
                f"{len(tasks)} tasks (not compared on: no arms comparison there, or not in it).")
    return (f"#66's decision: {baseline} (today's recipe) stays the continuing default: no arm "
            f"is better on at least {MIN_BETTER} of the {len(tasks)} tasks and worse on none.")


def _tasks(result):
    return ", ".join(result) or "none"


def decision_table(decided, baseline, tasks):
    lines = [f"| arm | better than {baseline} on | worse on | not compared on | the default? |",
             "|---|---|---|---|---|"]
    lines += [f"| {name} | {_tasks(result['better'])} | {_tasks(result['worse'])} "
              f"| {_tasks(result['missing'])} | {'yes' if result['adopted'] else 'no'} |"
              for name, result in decided.items()]
    return "\n".join(lines + ["", decision_line(decided, baseline, tasks)])


def collect_decision(runs_dir, model_name=None, measured_dir=MEASURED_DIR):
    """decision_table() of decide() over every task continuing_arms.json's
    decision_comparisons names: RUNS_DIR/TASK/MODEL/arms/COMPARISON (MODEL: its first model by
    default), else the task's summary MEASURED_DIR/arms_TASK.json; then where each came from."""
    defined = continued_arms.read_arms()
    model_name = model_name or defined["models"][0]
    by_task, sources = {}, []
    for task, name in defined["decision_comparisons"].items():
        arms_dir = os.path.join(runs_dir, task, model_name, "arms")
        recorded = summary_path(measured_dir, task)
        if os.path.isfile(os.path.join(arms_dir, name, RESULTS)):
            by_task[task] = outcomes(read_arms_comparison(arms_dir, name))
            sources.append(f"{task}: {arms_dir}/{name}")
        elif os.path.isfile(recorded):
            found = read_summary(recorded)
            usable = found.get("comparison") == name
            by_task[task] = outcomes(found) if usable else None
            sources.append(f"{task}: {recorded}" + ("" if usable else
                           f" (of {found.get('comparison')}, not {name}: not read)"))
        else:
            by_task[task] = None
    names = [name for name in defined["arms"] if name != defined["baseline"]]
    return "\n".join([decision_table(decide(by_task, names), defined["baseline"], list(by_task)),
                      "", "Read from: " + ("; ".join(sources) or "no task's comparison yet")
                      + "."])


def _own_cell(entry):
    if entry["arm"]["data"] == "static":
        return "(static: the column before)"
    values = {key: entry["own"].get(key) for key in MLM_KEYS}
    return f"{start_end(values)} (masks at {final_rate(entry['arm']['flags'])})"


def table_lines(comparison, what_column=True):
    """The table alone: one line per arm, today's recipe first (what_column: each arm's help
    from continuing_arms.json beside its name)."""
    metric = comparison["metric"]
    what = ("what", "---") if what_column else ()
    lines = ["| " + " | ".join(["arm", *what[:1], "MLM acc. on held-out task text (static "
                                "masks), start → end", "on general text", "on its own eval "
                                "data (train-time masks)", f"{metric} dev / test",
                                f"Δ vs {comparison['baseline']} [95% CI]", "verdict"]) + " |",
             "|" + "|".join(["---", *what[1:], "---", "---", "---", "---", "---:", "---"]) + "|"]
    for entry in comparison["arms"]:
        difference = (entry["row"]["against_first_run"] or {}).get(metric)
        verdict = verdicts.verdict_cell(difference["verdict"]) if difference else MISSING
        cells = [entry["name"], *([entry["arm"]["help"]] if what_column else []),
                 start_end(entry["static"]), start_end(entry["static"], "general/"),
                 _own_cell(entry), scores_cell(entry["row"], metric),
                 delta_cell({"difference": difference}) if difference else "", verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def arms_table(comparison):
    """table_lines(), then what this task tells apart."""
    lines = table_lines(comparison)
    metric = comparison["metric"]
    found = outcomes(comparison)
    told = {kind: [name for name, outcome in found.items() if outcome == kind]
            for kind in ("better", "worse")}
    lines += ["", f"Told apart from {comparison['baseline']} on this task (seeds "
              f"{', '.join(map(str, comparison['seeds']))}; fine-tuned on {comparison['budget']}"
              f"; Δ in points of test {metric}): better: {_tasks(told['better'])}; worse: "
              f"{_tasks(told['worse'])}."]
    return "\n".join(lines)


def footnote():
    return ("MLM acc.: every arm's end on the same static held-out batches of the task's text "
            "and of general text (a train-time arm scored there in ARM/static_eval/), the start "
            "the general model on them (today's run); its own eval data: a train-time arm's "
            "held-out train-time records, masked at its final rate (start and end from its run). "
            "Δ: the arm minus today's recipe, finetune.compare's paired bootstrap interval. For "
            "#66's rule an arm is better where the interval lies above 0 and compare's verdict "
            "stands (none withheld), worse where it lies below 0, withheld or not.")


@dataclasses.dataclass
class ArmsTableOptions:
    """The flags of `python -m experiments.arms_table`."""
    arms_dir: str = option("", "An arms folder: RUNS/TASK/MODEL/arms of continued_experiment.sh "
                               "TASK MODEL arms.")
    comparison: str = option(continued_table.DEFAULT_COMPARISON, "With --arms_dir: its "
                             "comparison folder, compare or compare_trainN (N training examples).")
    decision_runs: str = option("", "Instead: the RUNS folder, for #66's decision across the "
                                    "tasks' arms comparisons.")
    output_file: str = option("", "Also write the Markdown here.")
    summary_file: str = option("", "With --arms_dir: also write the comparison's numbers here "
                                   "as JSON (experiments/measured/arms_TASK.json, committed: "
                                   "the decision reads it once RUNS is gone).")
    measured_dir: str = option(MEASURED_DIR, "The tasks' committed summaries "
                               "(arms_TASK.json), read where RUNS lacks a task's comparison.")


def _run(options):
    if bool(options.arms_dir) == bool(options.decision_runs):
        raise UserError("give --arms_dir (a task's arms table) or --decision_runs (#66's "
                        "decision), one of them")
    if options.decision_runs:
        if options.summary_file:
            raise UserError("--summary_file goes with --arms_dir (one task's comparison)")
        show_and_write(collect_decision(options.decision_runs,
                                        measured_dir=options.measured_dir), options.output_file)
        return
    path = os.path.join(options.arms_dir, options.comparison, RESULTS)
    if not os.path.isfile(path):
        raise UserError(f"--arms_dir={options.arms_dir}: no {options.comparison}/{RESULTS} yet "
                        "(run bash scripts/continued_experiment.sh TASK roberta arms)")
    row_dir = os.path.dirname(os.path.abspath(options.arms_dir))  # RUNS/TASK/MODEL
    runs_dir, model_name = os.path.dirname(os.path.dirname(row_dir)), os.path.basename(row_dir)
    comparison = read_arms_comparison(options.arms_dir, options.comparison)
    show_and_write("\n\n".join([
        arms_table(comparison), footnote(),
        "Across the tasks (continuing_arms.json's comparisons):",
        collect_decision(runs_dir, model_name, options.measured_dir)]), options.output_file,
        summary(comparison, os.path.basename(os.path.dirname(row_dir)), options.comparison),
        options.summary_file)


def main(argv=None):
    cli_options.run_main(ArmsTableOptions, _run, argv, expected=(OSError, ValueError))


if __name__ == "__main__":
    main()
