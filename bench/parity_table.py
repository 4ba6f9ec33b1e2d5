"""The parity tables of docs/experiments.md, from bench/finetune_parity.py's JSON lines.

    python bench/parity_table.py runs/finetune_parity/*.jsonl

Prints Markdown tables: per-step training losses with dropout off (the largest relative
difference over the first steps compared), test metrics with dropout on over the seeds
(how many, ours and transformers', mean ± sample sd, collapsed seeds, the paired-bootstrap
interval of ours - theirs; no parity verdict when every seed collapsed on both sides), and,
when measured, the noise floor (our run against itself from a start moved by one and ten
rounding steps, beside transformers'). The last line of a comparison wins when a file holds
it twice, and a later file's line wins over an earlier file's.
"""
import json
import sys

TASKS = ("classification", "pair", "ner")


def _key(row):
    return (TASKS.index(row["task"]), row["init"], row["bias_correction"])


def _rows(paths):
    found = {}
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.strip().startswith("{") and '"kind"' in line:
                    row = json.loads(line)
                    found[(row["kind"],) + _key(row)] = row
    return found


def _setting(row):
    return (f"{row['task']} | {row['init']} | "
            f"{'on' if row['bias_correction'] else 'off'}")


def _mean_sd(summary):
    return f"{100 * summary['mean']:.2f} ± {100 * summary['std']:.2f}"


def _collapsed(flags):
    return str(sum(flags)) if any(flags) else "0"


def _metric_parity(row):
    """'yes' / 'no' by the interval; no verdict when every seed collapsed on both sides (two
    runs that learned nothing agree without showing that the training is the same)."""
    if all(row["ours_collapsed"]) and all(row["theirs_collapsed"]):
        return "no comparison: every seed collapsed on both sides"
    return "yes" if row["parity"] else "no"


def render(found):
    losses = sorted((row for (kind, *_), row in found.items() if kind == "losses"), key=_key)
    metrics = sorted((row for (kind, *_), row in found.items() if kind == "metrics"), key=_key)
    lines = ["| task | start | bias correction | steps | largest relative difference (step) | parity |",
             "|---|---|---|---:|---|---|"]
    for row in losses:
        lines.append(f"| {_setting(row)} | {row['steps_compared']} | "
                     f"{row['max_relative_difference']:.1e} ({row['at_step']}) | "
                     f"{'yes' if row['parity'] else 'no'} |")
    lines += ["", "| task | start | bias correction | metric | seeds | ours | transformers "
              "| collapsed seeds (ours / theirs) | ours − theirs [95% CI] | parity |",
              "|---|---|---|---|---:|---:|---:|---|---|---|"]
    for row in metrics:
        low, high = row["interval"]
        lines.append(f"| {_setting(row)} | {row['metric']} | {len(row['seeds'])} "
                     f"| {_mean_sd(row['ours_mean_std'])} | "
                     f"{_mean_sd(row['theirs_mean_std'])} | {_collapsed(row['ours_collapsed'])} / "
                     f"{_collapsed(row['theirs_collapsed'])} | {100 * row['difference']:+.2f} "
                     f"[{100 * low:+.2f}, {100 * high:+.2f}] | {_metric_parity(row)} |")
    floors = sorted((row for (kind, *_), row in found.items() if kind == "noise_floor"),
                    key=_key)
    if floors:
        lines += ["", "| task | start | bias correction | run | first step parting from ours "
                  "by > 1e-5 | largest relative difference from ours over 50 steps (step) "
                  "| mean loss, last 50 steps |", "|---|---|---|---|---:|---|---:|"]
        for row in floors:
            lines.append(f"| {_setting(row)} | ours | | | {row['ours_mean_loss_last_50']:.4f} |")
            for name, label in (("transformers", "transformers"),
                                ("ours_perturbed_1e-07", "ours, start moved by 1e-7"),
                                ("ours_perturbed_1e-06", "ours, start moved by 1e-6")):
                side = row[name]
                lines.append(f"| {_setting(row)} | {label} | "
                             f"{side['first_step_above_1e-5'] or 'none'} | "
                             f"{side['max_relative_difference']:.1e} ({side['at_step']}) | "
                             f"{side['mean_loss_last_50']:.4f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(_rows(sys.argv[1:])))
