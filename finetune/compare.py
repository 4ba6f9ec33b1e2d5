r"""Did pretraining help? Fine-tune from several starting points, one table.

    python -m finetune.compare --data_dir=LCQMC --vocab_file=vocab.txt \
        --bert_config_file=configs/x.json --output_dir=results/lcqmc \
        --run="random init=" --run="after pretraining=output/pretrain"

Each `--run=LABEL=CHECKPOINT` (empty checkpoint = random initialisation) is
fine-tuned with the same seed and settings into `OUTPUT_DIR/runs/<n>-<label>/`
(features are built once, in `OUTPUT_DIR/feature_cache`). A finished run
whose settings and starting checkpoint are unchanged is collected instead of
re-run (`--rerun` forces training; `--collect_only` never trains).

Model config per run: the `bert_config.json` beside its checkpoint, else
`--bert_config_file`. A random-init run takes the config of the first
checkpoint run that has one, so both train the same architecture.

Outputs: the Markdown table on screen and in `OUTPUT_DIR/results.md`, every
run's numbers in `OUTPUT_DIR/results.json`, and `OUTPUT_DIR/dev_curve.png`
(dev accuracy per evaluation step, one line per run; needs matplotlib, the
`plots` extra: without it the table says why there is no picture).
"""
import dataclasses
import json
import os
import re
import sys

import tensorflow.compat.v1 as tf

from common.file_utils import atomic_output, write_json_atomically
from finetune import dev_curve_plot, lcqmc_data, run_lcqmc
from common import cli_options
from common.cli_options import UserError, option
from pretrain import checkpoint_loading

PLOT_NAME = "dev_curve.png"
RUN_HELP = ("LABEL=CHECKPOINT starting point (repeat; empty CHECKPOINT = random init). The first "
            "row is the baseline.")

# Settings that must be equal for two runs to be compared (or one to be reused).
COMPARED_SETTINGS = ("data_dir", "vocab_file", "do_lower_case", "max_seq_length",
                     "train_batch_size", "eval_batch_size", "learning_rate", "num_train_epochs",
                     "max_train_examples", "max_dev_examples", "eval_every_steps",
                     "warmup_proportion", "random_seed", "strategy")


def parse_run(spec):
    """'LABEL=PATH' -> (label, path or None)."""
    label, sep, path = spec.partition("=")
    if not sep or not label.strip():
        raise UserError(f"--run={spec!r}: expected LABEL=CHECKPOINT (empty CHECKPOINT for "
                        "random initialisation), e.g. --run='after pretraining=output/pretrain'")
    return label.strip(), path.strip() or None


def config_beside(checkpoint):
    if not checkpoint:
        return None
    folder = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    candidate = os.path.join(folder, "bert_config.json")
    return candidate if os.path.isfile(candidate) else None


def resolved_checkpoint(checkpoint):
    if checkpoint and os.path.isdir(checkpoint):
        return tf.train.latest_checkpoint(checkpoint)
    return checkpoint


def plan_runs(run_specs, common, out_dir):
    """Returns [{label, init_checkpoint, bert_config_file, run_dir}] in the given order."""
    runs = [parse_run(spec) for spec in run_specs]
    if not runs:
        raise UserError("give at least one --run=LABEL=CHECKPOINT")
    if len({label for label, _ in runs}) != len(runs):
        raise UserError(f"run labels must differ: {[label for label, _ in runs]}")
    shared_config = next((config_beside(path) for _, path in runs if config_beside(path)), None)
    plans = []
    for index, (label, checkpoint) in enumerate(runs, start=1):
        config = config_beside(checkpoint) or (shared_config if not checkpoint else None)
        config = config or common.get("bert_config_file")
        if not config:
            raise UserError(f"run {label!r}: no bert_config.json beside {checkpoint!r} and no "
                            "--bert_config_file (CONFIG=) given")
        slug = re.sub(r"[^0-9A-Za-z\u4e00-\u9fff]+", "_", label).strip("_") or "run"
        plans.append({"label": label, "init_checkpoint": checkpoint,
                      "bert_config_file": os.path.abspath(config),
                      "run_dir": os.path.join(out_dir, "runs", f"{index}-{slug}")})
    return plans


def reusable(plan, common):
    """A finished run in plan['run_dir'] with the same settings and starting weights, or None."""
    path = os.path.join(plan["run_dir"], "results.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    saved = results.get("settings", {})
    same = all(saved.get(name) == common.get(name) for name in COMPARED_SETTINGS)
    same = same and results.get("bert_config_file") == plan["bert_config_file"]
    same = same and (results.get("init") or {}).get("checkpoint") == resolved_checkpoint(
        plan["init_checkpoint"])
    return results if same else None


def markdown_table(rows):
    lines = ["| starting point | model | dev accuracy | test accuracy | Δ dev | Δ test "
             "| best step / steps | time |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    first = rows[0]
    for row in rows:
        delta_dev = 100 * (row["dev_accuracy"] - first["dev_accuracy"])
        delta_test = 100 * (row["test_accuracy"] - first["test_accuracy"])
        lines.append(
            f"| {row['label']} | {row['model']} | {100 * row['dev_accuracy']:.2f} "
            f"| {100 * row['test_accuracy']:.2f} | {delta_dev:+.2f} | {delta_test:+.2f} "
            f"| {row['best_step']} / {row['num_train_steps']} | {row['wall_time_seconds']:.0f} s |")
    return "\n".join(lines)


def describe_model(config):
    kind = config.get("model_type") or "bert"
    return (f"{kind} L{config['num_hidden_layers']} H{config['hidden_size']} "
            f"V{config['vocab_size']}")


def summarise(plans, results_per_run):
    rows = []
    for plan, results in zip(plans, results_per_run):
        rows.append({
            "label": plan["label"], "init_checkpoint": plan["init_checkpoint"],
            "loaded_checkpoint": (results.get("init") or {}).get("checkpoint"),
            "run_dir": plan["run_dir"], "bert_config_file": results["bert_config_file"],
            "model": describe_model(results["bert_config"]),
            "dev_accuracy": results["dev_accuracy"], "test_accuracy": results["test_accuracy"],
            "best_step": results["best_step"], "num_train_steps": results["num_train_steps"],
            "wall_time_seconds": results["wall_time_seconds"], "dev_curve": results["dev_curve"],
        })
    return rows


def write_plot(rows, out_dir):
    """Draws dev_curve.png beside results.md; returns (path or None, its line for results.md)."""
    path = os.path.join(out_dir, PLOT_NAME)
    series = [(row["label"], [p["step"] for p in row["dev_curve"]],
               [p["accuracy"] for p in row["dev_curve"]]) for row in rows]
    try:
        dev_curve_plot.write_dev_curve(path, series)
    except dev_curve_plot.PlotUnavailable as why:
        if os.path.exists(path):  # a previous comparison's picture would not match the table
            os.remove(path)
        return None, f"No {PLOT_NAME}: {why}."
    return path, f"Dev accuracy per evaluation step, one line per starting point: {PLOT_NAME}."


def write_outputs(rows, common, out_dir, log_fn=print):
    """Prints the table; writes results.md, results.json, dev_curve.png. Returns the table."""
    table = markdown_table(rows)
    plot_path, plot_line = write_plot(rows, out_dir)
    settings_line = ", ".join(f"{name}={common.get(name)}" for name in COMPARED_SETTINGS)
    differs = len({row["model"] for row in rows}) > 1
    note = ("\n\nWARNING: the runs use different model architectures; the comparison is not "
            "like for like." if differs else "")
    markdown = (f"# LCQMC fine-tuning: does pretraining help?\n\n{table}\n\n"
                f"Accuracies in %, best-on-dev checkpoint; Δ = difference to the first row in "
                f"points. Same seed and settings for every run: {settings_line}.\n\n"
                f"{plot_line}{note}\n")
    with atomic_output(os.path.join(out_dir, "results.md")) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(markdown)
    write_json_atomically(os.path.join(out_dir, "results.json"), {
        "runs": rows, "settings": {name: common.get(name) for name in COMPARED_SETTINGS},
        "table_markdown": table, "plot": plot_path, "plot_note": plot_line})
    log_fn(markdown)
    return table


def compare(run_specs, common, out_dir, rerun=False, collect_only=False, log_fn=print):
    """Runs or collects every starting point, then writes the outputs. Returns the rows."""
    common = dict(run_lcqmc.DEFAULTS, **common)
    os.makedirs(out_dir, exist_ok=True)
    plans = plan_runs(run_specs, common, out_dir)
    common.setdefault("cache_dir", None)
    cache_dir = common["cache_dir"] or os.path.join(out_dir, "feature_cache")
    results_per_run = []
    for plan in plans:
        previous = None if rerun else reusable(plan, common)
        if previous is not None:
            log_fn(f"== {plan['label']}: collecting the finished run in {plan['run_dir']}")
            results_per_run.append(previous)
            continue
        if collect_only:
            raise UserError(f"run {plan['label']!r}: no finished run with these settings in "
                            f"{plan['run_dir']} (drop --collect_only to train it)")
        log_fn(f"== {plan['label']}: fine-tuning from "
               f"{plan['init_checkpoint'] or 'random initialisation'} "
               f"(config {plan['bert_config_file']}) into {plan['run_dir']}")
        settings = dict(common, init_checkpoint=plan["init_checkpoint"],
                        bert_config_file=plan["bert_config_file"], output_dir=plan["run_dir"],
                        cache_dir=cache_dir, overwrite_output_dir=True)
        results_per_run.append(run_lcqmc.run(settings, log_fn=log_fn))
    rows = summarise(plans, results_per_run)
    write_outputs(rows, common, out_dir, log_fn=log_fn)
    return rows


@dataclasses.dataclass
class CompareOptions(run_lcqmc.FinetuneSettings):
    """The flags of `python -m finetune.compare`: run_lcqmc's settings, starting points, output."""
    run: tuple = option((), RUN_HELP)
    output_dir: str = option("results/lcqmc", "Where runs/, results.md, results.json and "
                                              "dev_curve.png go.")
    rerun: bool = option(False, "Train every run even if a finished one matches.")
    collect_only: bool = option(False, "Only collect finished runs; never train.")


def _compare_from_flags(options):
    tf.logging.set_verbosity(tf.logging.ERROR)  # progress comes from run_lcqmc's log lines
    settings = dataclasses.asdict(options)
    run_specs, out_dir = settings.pop("run"), settings.pop("output_dir")
    rerun, collect_only = settings.pop("rerun"), settings.pop("collect_only")
    compare(run_specs or [], settings, out_dir, rerun=rerun, collect_only=collect_only)


def main(argv=None):
    from absl import flags  # pylint: disable=import-outside-toplevel
    if "run" not in flags.FLAGS:  # repeatable, so defined here (cli_options skips it)
        flags.DEFINE_multi_string("run", [], RUN_HELP, module_name=sys.argv[0])
    cli_options.run_main(CompareOptions, _compare_from_flags, argv,
                         expected=(lcqmc_data.DataError, OSError,
                                   checkpoint_loading.CheckpointMismatchError))


if __name__ == "__main__":
    main()
