r"""The reference experiment's table: one row per pretraining recipe, seeds pooled.

    python -m finetune.experiment_table --runs_dir=runs/lcqmc_experiment \
        [--output_file=runs/lcqmc_experiment/table.md]

Reads what scripts/lcqmc_experiment.sh leaves in RUNS_DIR:
  RECIPE/pretrain/eval_results.txt          pretraining eval (MLM, SOP, SBO)
  RECIPE/finetune/seedS/results.json        fine-tuning after pretraining
  baseline-CONFIG/seedS/results.json        fine-tuning from random initialisation
A recipe's baseline is the random-init run of the same architecture (its
results' "model" field, e.g. "bert L4 H256 V21128") and seed. Accuracies are
means over the seeds with their standard error (sample standard deviation /
sqrt(n)); a difference is averaged over seeds paired by seed.
"""
import dataclasses
import glob
import json
import math
import os
import re

from common import cli_options
from common.cli_options import UserError, option, required
from common.file_utils import write_text_atomically

RECIPE_ORDER = ("roberta", "albert", "span", "macbert")
RECIPE_LABELS = {
    "roberta": "RoBERTa: whole-word masking",
    "albert": "ALBERT: SOP + n-gram masking",
    "span": "SpanBERT: spans + SBO",
    "macbert": "MacBERT: similar-word n-grams",
}
PRETRAIN_METRICS = (("masked_lm_loss", "MLM loss", "{:.2f}"),
                    ("masked_lm_accuracy", "MLM acc", "{:.1%}"),
                    ("next_sentence_accuracy", "SOP acc", "{:.1%}"),
                    ("span_boundary_loss", "SBO loss", "{:.2f}"))


def _seed_of(path):
    match = re.search(r"seed(\d+)", path)
    return int(match.group(1)) if match else None


def _load_runs(pattern):
    """{seed: the single run row of each finetune.compare results.json matching pattern}."""
    runs = {}
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)["runs"]
        runs[_seed_of(path)] = rows[0]
    return runs


def read_eval_results(path):
    """{key: float} of an eval_results.txt (`key = value` lines); {} when absent."""
    results = {}
    if not os.path.isfile(path):
        return results
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, sep, value = line.partition(" = ")
            try:
                results[key.strip()] = float(value) if sep else None
            except ValueError:
                continue
    return results


def mean_and_se(values):
    """(mean, standard error) of a list; se is None for fewer than two values."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def _cell(values, signed=False):
    mean, se = mean_and_se([100 * v for v in values])
    text = f"{mean:+.2f}" if signed else f"{mean:.2f}"
    return text + (f" ± {se:.2f}" if se is not None else "")


def collect_rows(runs_dir):
    """One dict per recipe that has both fine-tuned and baseline runs for some seed."""
    baselines = {}
    for path in glob.glob(os.path.join(runs_dir, "baseline-*", "seed*", "results.json")):
        with open(path, encoding="utf-8") as f:
            row = json.load(f)["runs"][0]
        baselines[(row["model"], _seed_of(path))] = row
    found = [os.path.basename(os.path.dirname(p)) for p in
             glob.glob(os.path.join(runs_dir, "*", "finetune"))]
    recipes = [r for r in RECIPE_ORDER if r in found] + sorted(set(found) - set(RECIPE_ORDER))
    rows = []
    for recipe in recipes:
        tuned = _load_runs(os.path.join(runs_dir, recipe, "finetune", "seed*", "results.json"))
        pairs = [(seed, baselines[(run["model"], seed)], run) for seed, run in
                 sorted(tuned.items()) if (run["model"], seed) in baselines]
        if not pairs:
            continue
        rows.append({
            "recipe": recipe, "model": pairs[0][2]["model"],
            "seeds": [seed for seed, _, _ in pairs],
            "pretraining": read_eval_results(
                os.path.join(runs_dir, recipe, "pretrain", "eval_results.txt")),
            **{f"{kind}_{split}": [pair[index][f"{split}_accuracy"] for pair in pairs]
               for index, kind in ((1, "baseline"), (2, "pretrained"))
               for split in ("dev", "test")},
        })
    return rows


def markdown_table(rows):
    lines = ["| recipe | model | pretraining eval | random init dev / test | pretrained dev / test "
             "| Δ dev | Δ test | seeds |",
             "|---|---|---|---|---|---:|---:|---|"]
    for row in rows:
        evals = ", ".join(f"{name} {fmt.format(row['pretraining'][key])}"
                          for key, name, fmt in PRETRAIN_METRICS
                          if row["pretraining"].get(key) is not None)
        deltas = {split: [after - before for before, after in
                          zip(row[f"baseline_{split}"], row[f"pretrained_{split}"])]
                  for split in ("dev", "test")}
        lines.append(
            f"| {RECIPE_LABELS.get(row['recipe'], row['recipe'])} | {row['model']} "
            f"| {evals or '-'} | {_cell(row['baseline_dev'])} / {_cell(row['baseline_test'])} "
            f"| {_cell(row['pretrained_dev'])} / {_cell(row['pretrained_test'])} "
            f"| {_cell(deltas['dev'], True)} | {_cell(deltas['test'], True)} "
            f"| {', '.join(map(str, row['seeds']))} |")
    return "\n".join(lines)


@dataclasses.dataclass
class TableOptions:
    """The flags of `python -m finetune.experiment_table`."""
    runs_dir: str = required("The RUNS folder of scripts/lcqmc_experiment.sh.")
    output_file: str = option("", "Also write the Markdown table here.")


def _run(options):
    if not os.path.isdir(options.runs_dir):
        raise UserError(f"--runs_dir={options.runs_dir}: no such folder (run "
                        "bash scripts/lcqmc_experiment.sh RECIPE first)")
    rows = collect_rows(options.runs_dir)
    if not rows:
        raise UserError(f"--runs_dir={options.runs_dir}: no recipe with both a fine-tuned and "
                        "a random-init run yet (run bash scripts/lcqmc_experiment.sh RECIPE)")
    table = markdown_table(rows)
    print(table)
    if options.output_file:
        write_text_atomically(options.output_file, table.splitlines())
        print(f"wrote {options.output_file}")


def main(argv=None):
    cli_options.run_main(TableOptions, _run, argv, expected=(OSError, ValueError))


if __name__ == "__main__":
    main()
