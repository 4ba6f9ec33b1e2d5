"""One verdict for every comparison of two fine-tuning runs, and the flags that withhold it.

finetune.compare, its results.md (finetune.comparison_report) and the experiment table
(experiments.from_scratch_table) all judge a difference here, so results.json stores exactly
what the tables show:

    judged = judge(interval_verdict, num_seeds, baseline, compared)
    judged == {"verdict": "better" | "worse" | "no evidence" | "<why there is none>",
               "flags": [...]}

`interval_verdict` is the paired bootstrap's (finetune.statistics: better / worse when the
whole interval lies above / below 0, else no evidence). It stands only when nothing below
undermines it; otherwise the verdict says why there is none. Flags:

- `too_few_seeds`: fewer than MIN_SEEDS seeds, so the seed-to-seed spread is not known
  well enough for an interval over seeds to mean much;
- `collapsed`: a seed of the compared run collapsed (one class, or no entities, for nearly
  every example: finetune.run_finetune's collapse check);
- `baseline_collapsed`: a seed of the baseline collapsed;
- `baseline_at_chance`: the baseline's mean dev accuracy is within CHANCE_STANDARD_ERRORS
  binomial standard errors (sqrt(q (1 - q) / N) for the dev majority share q over N dev
  examples) of predicting the majority label: it did not learn, so beating it says little.

`baseline` and `compared` are comparison rows (finetune.comparison_report.comparison_rows):
"seeds", "collapsed_seeds", "dev" ({metric: {"mean", "std"}}) and, for classification,
"dev_majority_share" and "dev_examples".
"""
import math

MIN_SEEDS = 3
CHANCE_STANDARD_ERRORS = 3.0
STANDING = ("better", "worse")


def chance_margin(majority_share, num_examples):
    """How far above the majority share a dev accuracy must be not to count as chance."""
    return CHANCE_STANDARD_ERRORS * math.sqrt(
        majority_share * (1.0 - majority_share) / max(num_examples, 1))


def at_chance(row):
    """(True/False, its reason text) for a row's mean dev accuracy; (False, None) when the
    row has no accuracy or no majority share (NER, or results written before both were)."""
    share, count = row.get("dev_majority_share"), row.get("dev_examples")
    accuracy = ((row.get("dev") or {}).get("accuracy") or {}).get("mean")
    if share is None or not count or accuracy is None:
        return False, None
    if accuracy - share >= chance_margin(share, count):
        return False, None
    return True, (f"baseline at chance (dev accuracy {100 * accuracy:.2f}% vs the majority "
                  f"share {100 * share:.2f}%, within {CHANCE_STANDARD_ERRORS:g} standard "
                  f"errors over {count} examples)")


def _seeds(seeds):
    return "seed" + ("s" if len(seeds) > 1 else "") + " " + ", ".join(map(str, seeds))


def judge(interval_verdict, num_seeds, baseline, compared):
    """{"verdict": the table's text, "flags": [...]} (module docstring)."""
    flags, reasons = [], []
    if num_seeds < MIN_SEEDS:
        flags.append("too_few_seeds")
        reasons.append(f"{num_seeds} seed{'s' if num_seeds != 1 else ''}: too few for a verdict")
    if compared.get("collapsed_seeds"):
        flags.append("collapsed")
        reasons.append(f"collapsed run ({_seeds(compared['collapsed_seeds'])})")
    if baseline.get("collapsed_seeds"):
        flags.append("baseline_collapsed")
        reasons.append(f"baseline collapsed ({_seeds(baseline['collapsed_seeds'])})")
    chance, why = at_chance(baseline)
    if chance:
        flags.append("baseline_at_chance")
        reasons.append(why)
    if not reasons:
        return {"verdict": interval_verdict, "flags": flags}
    if flags == ["too_few_seeds"]:
        return {"verdict": reasons[0], "flags": flags}
    return {"verdict": "no verdict: " + "; ".join(reasons), "flags": flags}


def verdict_cell(verdict):
    """The table cell: a standing verdict in bold, anything else as it is."""
    return f"**{verdict}**" if verdict in STANDING else verdict
