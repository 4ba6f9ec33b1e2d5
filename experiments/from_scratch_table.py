r"""The reference experiment's table: one row per pretraining recipe, over its seeds.

    python -m experiments.from_scratch_table --runs_dir=runs/lcqmc_experiment \
        [--output_file=runs/lcqmc_experiment/table.md] \
        [--summary_file=experiments/measured/from_scratch.json]

Reads what scripts/lcqmc_experiment.sh leaves in RUNS_DIR:
  RECIPE/pretrain/eval_results.txt    pretraining eval (MLM, SOP, SBO, ELECTRA's RTD)
  RECIPE/pretrain/bert_config.json, experiment_settings.txt, RECIPE/data/*.meta.json
                                      the pretraining compute: steps x batch x the
                                      family's FLOPs per example (pretrain.models.flops)
  RECIPE/compare/results.json         finetune.compare of random init (its first run)
                                      against the pretrained model (its second run)
Accuracies are compare's mean ± sample standard deviation over the seeds; the
difference in test accuracy, its confidence interval and the verdict are
compare's paired bootstrap (its `differences`), not recomputed here.
"""
import dataclasses
import glob
import json
import os
import sys

from common import cli_options
from common.cli_options import UserError, option, required
from common.file_utils import write_json_atomically, write_text_atomically
from experiments import recipe_files
from finetune import comparison_report, verdicts
from pretrain.models import registry
from pretrain.training import learning_check

# With each head's baseline on the same eval data (pretrain.training.learning_check), so that a
# model still on the unigram plateau or at chance shows as such.
PRETRAIN_METRICS = (("masked_lm_loss", "MLM loss", "{:.2f}"),
                    ("masked_lm_accuracy", "MLM acc", "{:.1%}"),
                    ("masked_lm_unigram_accuracy", "unigram", "{:.1%}"),
                    ("next_sentence_accuracy", "SOP acc", "{:.1%}"),
                    ("sentence_chance_accuracy", "chance", "{:.1%}"),
                    ("span_boundary_loss", "SBO loss", "{:.2f}"),
                    ("disc_auc", "RTD AUC", "{:.3f}"),
                    ("disc_accuracy", "RTD acc", "{:.1%}"),
                    ("disc_majority_accuracy", "always original", "{:.1%}"),
                    ("plm_loss", "PLM loss", "{:.2f}"),
                    ("plm_accuracy", "PLM acc", "{:.1%}"),
                    ("plm_unigram_accuracy", "unigram", "{:.1%}"))
METRIC = "accuracy"
MISSING = "—"
COMPARISON = os.path.join("compare", "results.json")


class UnfinishedRow(Exception):
    """A row's comparison that holds random init alone: its pretrained run is still to come
    (the row is running, or its baseline was fine-tuned ahead of it)."""


def read_comparison(path, recipe=None):
    """The table row of one finetune.compare results.json: {recipe, model, seeds,
    random_init, pretrained (compare's rows: dev/test {metric: {mean, std}},
    collapsed_seeds), difference (the accuracy entry of `differences` for the
    pretrained run, or None), split (the evaluated split)}."""
    with open(path, encoding="utf-8") as f:
        comparison = json.load(f)
    try:
        if any("flags" not in d for d in comparison.get("differences") or []):
            comparison_report.judge_differences(comparison)  # written before verdict flags
            comparison["rows"] = comparison_report.comparison_rows(comparison)
        rows = comparison.get("rows") or comparison_report.comparison_rows(comparison)
        if len(rows) == 1:
            raise UnfinishedRow(f"{path}: {rows[0]['label']} only, no pretrained run yet")
        if len(rows) < 2:
            raise ValueError(f"{len(rows)} run(s), expected random init and a pretrained model")
        random_init, pretrained = rows[0], rows[1]
        difference = next((d for d in comparison.get("differences") or []
                           if d["label"] == pretrained["label"] and d["metric"] == METRIC), None)
        return {"recipe": recipe or pretrained["label"], "model": pretrained["model"],
                "seeds": list(comparison["seeds"]), "random_init": random_init,
                "pretrained": pretrained, "difference": difference,
                "split": comparison["evaluated_split"]}
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: not a finished finetune.compare comparison ({error!r}); "
                         "rerun bash scripts/lcqmc_experiment.sh RECIPE") from None


def collect_rows(runs_dir, left_out=None):
    """One row per recipe with a finished comparison, in the recipes' order
    (experiments/recipes/*.json), then by name. A comparison of random init alone is
    not a row yet: its UnfinishedRow message goes to `left_out` (a list), if given."""
    found = [os.path.basename(os.path.dirname(os.path.dirname(path)))
             for path in glob.glob(os.path.join(runs_dir, "*", COMPARISON))]
    order = [recipe.name for recipe in recipe_files.all_recipes()]
    recipes = [r for r in order if r in found] + sorted(set(found) - set(order))
    rows = []
    for recipe in recipes:
        try:
            row = read_comparison(os.path.join(runs_dir, recipe, COMPARISON), recipe)
        except UnfinishedRow as unfinished:
            if left_out is not None:
                left_out.append(str(unfinished))
            continue
        row["pretraining"] = learning_check.read_eval_results(
            os.path.join(runs_dir, recipe, "pretrain", "eval_results.txt"))
        row["pretraining_flops"] = pretraining_flops(os.path.join(runs_dir, recipe),
                                                     row["pretraining"])
        rows.append(row)
    return rows


def _settings(path):
    """KEY=VALUE lines of lcqmc_experiment.sh's experiment_settings.txt."""
    with open(path, encoding="utf-8") as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def pretraining_flops(recipe_dir, pretraining_eval):
    """Training FLOPs of a row's pretraining (matmuls, forward + backward): evaluated
    steps x batch x the family's count per example at the data's sequence length and
    predictions, with the heads its eval shows; None when a file is missing."""
    try:
        config = registry.read_config(os.path.join(recipe_dir, "pretrain", "bert_config.json"))
        batch = int(_settings(os.path.join(recipe_dir, "pretrain",
                                           "experiment_settings.txt"))["PRETRAIN_BATCH_SIZE"])
        sidecars = sorted(glob.glob(os.path.join(recipe_dir, "data", "*.meta.json")))
        with open(sidecars[0], encoding="utf-8") as f:
            data = json.load(f)
        steps = int(pretraining_eval["global_step"])
    except (OSError, KeyError, IndexError, ValueError, UserError):
        return None
    per_example = registry.family_of(config).training_flops_per_example(
        config, data["max_seq_length"], data["max_predictions_per_seq"],
        sentence_head="next_sentence_accuracy" in pretraining_eval,
        span_boundary="span_boundary_loss" in pretraining_eval)
    return steps * batch * per_example


def mean_sd(summary):
    """'mean ± sd' in % of a {"mean", "std"} summary (the mean alone for one seed)."""
    if not summary or summary.get("mean") is None:
        return MISSING
    text = f"{100 * summary['mean']:.2f}"
    return text if summary.get("std") is None else f"{text} ± {100 * summary['std']:.2f}"


def _accuracies(run):
    """'dev / test' accuracy of one compare row, marked when a seed collapsed."""
    dev, test = ((run.get(split) or {}).get(METRIC) for split in ("dev", "test"))
    text = f"{mean_sd(dev)} / {mean_sd(test)}"
    collapsed = run["collapsed_seeds"]
    if collapsed:
        text += (f" collapsed (seed{'s' if len(collapsed) > 1 else ''} "
                 + ", ".join(map(str, collapsed)) + ")")
    return text


def _delta(row):
    """'+d [+low, +high]' in points, or MISSING."""
    difference = row["difference"]
    if difference is None:
        return MISSING
    text = (f"{100 * difference['difference']:+.2f} "
            f"[{100 * difference['low']:+.2f}, {100 * difference['high']:+.2f}]")
    return text if row["split"] == "test" else f"{text} (on {row['split']})"


def _verdict(row):
    """compare's verdict (finetune.verdicts), bold when it stands."""
    return verdicts.verdict_cell(row["difference"]["verdict"]) if row["difference"] else (
        "not computed")


def _confidence(rows):
    levels = sorted({row["difference"]["confidence"] for row in rows if row["difference"]})
    return "/".join(f"{level:.0%}" for level in levels) or "95%"


def markdown_table(rows):
    """The Markdown table, one line per row."""
    lines = [f"| recipe | model | pretraining eval | random init dev / test acc. "
             f"| pretrained dev / test acc. | Δ test acc. [{_confidence(rows)} CI] | verdict "
             "| seeds | pretraining TFLOP |",
             "|---|---|---|---|---|---:|---|---|---:|"]
    for row in rows:
        evals = ", ".join(f"{name} {fmt.format(row['pretraining'][key])}"
                          for key, name, fmt in PRETRAIN_METRICS
                          if row["pretraining"].get(key) is not None)
        unlearned = learning_check.unlearned_start_heads(row["pretraining"])
        if unlearned:
            cells = ", ".join(head.not_learned_cell for head in unlearned)
            evals += f" (not learned: {cells})"
        lines.append(
            f"| {_label(row['recipe'])} | {row['model']} "
            f"| {evals or MISSING} | {_accuracies(row['random_init'])} "
            f"| {_accuracies(row['pretrained'])} | {_delta(row)} | {_verdict(row)} "
            f"| {', '.join(map(str, row['seeds']))} | {_tflop(row.get('pretraining_flops'))} |")
    return "\n".join(lines)


def _label(recipe):
    """The row's label from its finetune/recipes file (the folder name for another row)."""
    labels = {found.name: found.label for found in recipe_files.all_recipes()}
    return labels.get(recipe, recipe)


def _tflop(flops):
    return MISSING if flops is None else f"{flops / 1e12:.3g}"


def footnote(rows):
    """One paragraph: what the cells are, with compare's bootstrap method."""
    methods = list(dict.fromkeys(row["difference"]["method"] for row in rows
                                 if row["difference"]))
    if len(methods) > 1:  # rows with other seed or example counts
        methods = [f"{_label(row['recipe'])}: "
                   f"{row['difference']['method']}" for row in rows if row["difference"]]
    method = " ".join(methods) or "not computed."
    return ("Accuracies in %: mean ± sample standard deviation over the seeds (the same seeds "
            "for both starting points). Δ: mean over seeds of the paired difference in test "
            f"accuracy, pretrained minus random init, in points, from finetune.compare; CI: "
            f"{method} Verdict (finetune.compare): better / worse when the whole interval "
            "lies above / below 0, else no evidence; none, and the cell says why, when fewer "
            f"than {verdicts.MIN_SEEDS} seeds ran, when a seed collapsed (one class for nearly "
            "every dev example) or when random init is at chance (dev accuracy within "
            f"{verdicts.CHANCE_STANDARD_ERRORS:g} standard errors of the majority share). "
            "TFLOP: the pretraining's matmul FLOPs, forward and backward (steps × batch × "
            "the model family's count per example, pretrain.models.flops): the rows share "
            "batch and, unless a recipe sets its own, steps; not compute.")


def render(rows):
    """The table and its footnote, as Markdown."""
    return markdown_table(rows) + "\n\n" + footnote(rows)


@dataclasses.dataclass
class TableOptions:
    """The flags of `python -m experiments.from_scratch_table`."""
    runs_dir: str = required("The RUNS folder of scripts/lcqmc_experiment.sh.")
    output_file: str = option("", "Also write the Markdown table here.")
    summary_file: str = option("", "Also write the rows' numbers here as JSON (what "
                               "experiments.tables renders the docs' tables from, e.g. "
                               "experiments/measured/from_scratch.json).")


def _run(options):
    if not os.path.isdir(options.runs_dir):
        raise UserError(f"--runs_dir={options.runs_dir}: no such folder (run "
                        "bash scripts/lcqmc_experiment.sh RECIPE first)")
    left_out = []
    rows = collect_rows(options.runs_dir, left_out)
    for message in left_out:
        print(f"left out of the table: {message}", file=sys.stderr)
    if not rows:
        raise UserError(f"--runs_dir={options.runs_dir}: no recipe with a finished comparison "
                        f"yet (no RECIPE/{COMPARISON}; run bash scripts/lcqmc_experiment.sh "
                        "RECIPE)")
    show_and_write(render(rows), options.output_file, rows, options.summary_file)


def show_and_write(text, output_file, summary=None, summary_file=""):
    """Prints a rendered table and, given a file, writes it there too (atomically); given a
    summary file, writes there the numbers it was rendered from, as JSON."""
    print(text)
    if output_file:
        write_text_atomically(output_file, text.splitlines())
        print(f"wrote {output_file}")
    if summary_file:
        write_json_atomically(summary_file, summary)
        print(f"wrote {summary_file}")


def main(argv=None):
    cli_options.run_main(TableOptions, _run, argv, expected=(OSError, ValueError))


if __name__ == "__main__":
    main()
