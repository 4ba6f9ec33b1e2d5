"""The continuing recipe's sweep: the general model continued at every point (learning rate x
steps) on one task, and one finetune.compare of the general model against every point
(`continued_experiment.sh TASK MODEL sweep`, run by experiments.continued_row).

The points are SWEEP_POINTS (RATExSTEPS, comma-separated), else every rate of
SWEEP_LEARNING_RATES at every count of SWEEP_STEPS (continuing.json's grid by default). The
row's own continued run stands for its recipe's point, and the row's finished fine-tunings
of the same budget are collected, not retrained.
"""
import re

from experiments import stage_folders
from common.script_runs import Refusal, split_list

POINT = re.compile(r"([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)x([1-9][0-9]*)")


def points(values):
    """The sweep's points as RATExSTEPS strings, steps outer, rates inner."""
    if values["SWEEP_POINTS"]:
        return split_list(values["SWEEP_POINTS"])
    return [f"{rate}x{steps}" for steps in split_list(values["SWEEP_STEPS"])
            for rate in split_list(values["SWEEP_LEARNING_RATES"])]


def check_points(found):
    for point in found:
        if not POINT.fullmatch(point):
            raise Refusal(f"sweep point '{point}' (of SWEEP_POINTS, or SWEEP_LEARNING_RATES x "
                          "SWEEP_STEPS) is not RATExSTEPS: give e.g. 1e-4x500")


def sweep_stages(row, found):
    """Every point continued (or found finished), one comparison, the sweep's table."""
    values, run = row.values, row.run
    run_flags = [f"--run=general={row.general}/released"]
    for point in found:
        match = POINT.fullmatch(point)
        rate, steps = match.group(1), match.group(3)
        out = f"{row.row}/sweep/lr{rate}_steps{steps}"
        if stage_folders.finished_recipe(f"{row.row}/continued", row.recipe(rate, steps)):
            out = f"{row.row}/continued"
        row.continue_general(out, rate, steps)
        run_flags.append(f"--run=lr {rate}, {steps} steps={out}")
    row.stage(f"fine-tuning: general and every sweep point on {row.examples} examples, seeds "
              f"{values['SEEDS']}")
    row.compare_reusing_row(f"{row.row}/sweep/{row.comparison_name}", run_flags)
    row.stage("sweep table")
    run.run(run.tool("experiments.continued_table", f"--sweep_dir={row.row}/sweep",
                     f"--comparison={row.comparison_name}",
                     f"--output_file={row.row}/sweep/{row.table_name}"))
