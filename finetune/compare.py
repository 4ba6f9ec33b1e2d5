r"""Did pretraining help? Fine-tune several starting points over several seeds, one table.

    python -m finetune.compare --task=classification --data_dir=chnsenticorp \
        --output_dir=results/sentiment --seeds=1,2,3 \
        --run="random init=" --run="after pretraining=output/pretrain"

Each `--run=LABEL=CHECKPOINT` (empty checkpoint = random initialisation) is
fine-tuned once per seed of `--seeds` (the same seeds for every run, default
`--random_seed` alone) with run_finetune's settings, into
`OUTPUT_DIR/runs/<n>-<label>/seed<S>/` (features are built once, in
`OUTPUT_DIR/feature_cache`). A finished run whose settings and starting point
are unchanged is collected instead of re-run (`--rerun` forces training;
`--collect_only` never trains), and one that was interrupted (killed) is resumed from its
last checkpoint; a run with the same starting point as an
earlier one reuses that run's fine-tunings, so identical starting points give
identical numbers. `--reuse_from=DIR` also collects matching finished runs from
another comparison's output folder (a sweep's baseline fine-tuned once).

Model config and vocab per run: the files beside its checkpoint, else
`--bert_config_file` / `--vocab_file` (or `--spm_model_file`: an XLNet's
sentencepiece model, as run_finetune chooses it). A random-init run takes those of the
first checkpoint run that has them, so both train the same architecture.

Outputs: `OUTPUT_DIR/results.md` (finetune.comparison_report: mean ± sd over
seeds, best seed, and per run against the first the mean paired difference
with a bootstrap confidence interval over test examples and seeds, and a
verdict), every seed's numbers in `results.json`, and `dev_curve.png` (mean
over seeds with a band; needs matplotlib).
"""
import dataclasses
import filecmp
import glob
import json
import os
import re
import sys
import time

import numpy as np
import tensorflow.compat.v1 as tf

from common import cli_options
from common.cli_options import UserError, option
from common.file_utils import write_json_atomically, write_text_atomically
from common.model_configs import resolve_config_file
from finetune import comparison_report, dev_curve_plot, metrics, run_finetune, statistics, tasks
from finetune import output_dir as output_dir_lib
from finetune.progress import format_duration
from pretrain.checkpoints import checkpoint_assets, checkpoint_loading
from pretrain.models import registry
from pretrain.models.config import ConfigError

PLOT_NAME = "dev_curve.png"
RUN_HELP = ("LABEL=CHECKPOINT starting point (repeat; empty CHECKPOINT = random init). The first "
            "row is the baseline.")
MAX_STATISTICS_BYTES = 200 * 2**20  # per run; macro-F1 of many labels is [seeds, N, L*L]

# Settings that must be equal for two runs to be compared (or one to be reused).
COMPARED_SETTINGS = ("task", "train_file", "dev_file", "test_file", "data_dir", "input_format",
                     "text_fields", "label_field", "tag_scheme", "allow_unseen_labels",
                     "selection_metric", "do_lower_case", "max_seq_length", "train_batch_size",
                     "eval_batch_size", "learning_rate", "num_train_epochs",
                     "max_train_examples", "max_dev_examples", "eval_every_steps",
                     "warmup_proportion", "adam_bias_correction", "strategy")

PATH_SETTINGS = ("train_file", "dev_file", "test_file", "data_dir")


def parse_run(spec):
    """'LABEL=PATH' -> (label, path or None)."""
    label, sep, path = spec.partition("=")
    if not sep or not label.strip():
        raise UserError(f"--run={spec!r}: expected LABEL=CHECKPOINT (empty CHECKPOINT for "
                        "random initialisation), e.g. --run='after pretraining=output/pretrain'")
    return label.strip(), path.strip() or None


def parse_seeds(text, default):
    """'1,2,3' -> [1, 2, 3]; empty -> [default]."""
    if not str(text or "").strip():
        return [int(default)]
    try:
        seeds = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--seeds={text!r}: expected comma-separated integers, e.g. "
                        "--seeds=1,2,3") from None
    if len(set(seeds)) != len(seeds) or not seeds:
        raise UserError(f"--seeds={text!r}: give each seed once")
    return seeds


def plan_runs(run_specs, common, out_dir):
    """[{label, init_checkpoint, checkpoint, bert_config_file, vocab_file, spm_model_file,
    run_dir, same_as}] in the given order (one of vocab_file, spm_model_file None); same_as
    = index of an earlier run with the same start."""
    runs = [parse_run(spec) for spec in run_specs]
    if not runs:
        raise UserError("give at least one --run=LABEL=CHECKPOINT")
    if len({label for label, _ in runs}) != len(runs):
        raise UserError(f"run labels must differ: {[label for label, _ in runs]}")
    resolved = [checkpoint_assets.resolve(path) if path else None for _, path in runs]
    shared_config = next((a.config_file for a in resolved if a and a.config_file), None)
    configs, vocabs = [], {}
    for index, ((label, path), assets) in enumerate(zip(runs, resolved)):
        configs.append((assets.config_file if assets else shared_config)
                       or resolve_config_file(common.get("bert_config_file")))
        if not configs[-1]:
            raise UserError(f"run {label!r}: no bert_config.json beside {path!r} and no "
                            "--bert_config_file given")
        if assets:  # the vocab run_finetune will choose (refuses flags the checkpoint contradicts)
            _, chosen = run_finetune.resolve_model(dict(
                common, init_checkpoint=path, bert_config_file=configs[-1]))
            vocabs[index] = (chosen.vocab_file, chosen.spm_model_file)
    # A random-init run tokenises as the first checkpoint run does, else with the flags.
    shared_vocab = next(iter(vocabs.values()), (common.get("vocab_file"),
                                                common.get("spm_model_file")))
    plans = []
    for index, ((label, path), assets) in enumerate(zip(runs, resolved)):
        config = configs[index]
        vocab, spm = vocabs.get(index, shared_vocab)
        if not (vocab or spm):
            raise UserError(f"run {label!r}: no vocab.txt or spiece.model beside {path!r} and "
                            "no --vocab_file or --spm_model_file given")
        slug = re.sub(r"[^0-9A-Za-z\u4e00-\u9fff]+", "_", label).strip("_") or "run"
        plan = {"label": label, "init_checkpoint": path,
                "checkpoint": assets.checkpoint if assets else None,
                "bert_config_file": os.path.abspath(config),
                "vocab_file": vocab and os.path.abspath(vocab),
                "spm_model_file": spm and os.path.abspath(spm),
                "run_dir": os.path.join(out_dir, "runs", f"{index + 1}-{slug}")}
        start = _start(plan)
        plan["same_as"] = next((i for i, earlier in enumerate(plans) if _start(earlier) == start),
                               None)
        plans.append(plan)
    return plans


def _start(plan):
    return tuple(plan[name] for name in ("checkpoint", "bert_config_file", "vocab_file",
                                         "spm_model_file"))


def reusable(run_dir, plan, settings):
    """A finished run in run_dir with the same settings and starting weights, or None."""
    path = os.path.join(run_dir, "results.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    saved = results.get("settings", {})
    same = all(_same_setting(name, saved.get(name, run_finetune.DEFAULTS.get(name)),
                             settings.get(name))
               for name in COMPARED_SETTINGS)  # a setting added later: its default
    same = same and saved.get("random_seed") == settings["random_seed"]
    same = same and _same_config(results.get("bert_config_file"), plan["bert_config_file"])
    same = same and all(_same_file(results.get(key), plan[key])
                        for key in ("vocab_file", "spm_model_file"))
    init = results.get("init") or {}
    same = same and init.get("checkpoint") == plan["checkpoint"]
    if same and plan["checkpoint"]:
        same = _same_weights(init, plan["checkpoint"], path)
    return results if same else None


def _same_setting(name, saved, value):
    """Equal values; the data's paths equal when they name the same file or folder
    (`d/../data/x` and `/abs/data/x`, or a tree run from another checkout)."""
    if saved == value:
        return True
    if name in PATH_SETTINGS and saved and value:
        return os.path.realpath(saved) == os.path.realpath(value)
    return False


def _same_weights(init, checkpoint, results_path):
    """Whether a finished run started from the weights now at `checkpoint`: the same
    fingerprint, or for runs saved before fingerprints, a checkpoint not rewritten since."""
    if init.get("fingerprint"):
        return init["fingerprint"] == checkpoint_assets.checkpoint_fingerprint(checkpoint)
    index = f"{checkpoint}.index"
    return os.path.isfile(index) and os.path.getmtime(index) <= os.path.getmtime(results_path)


def _same_file(saved_path, path):
    """True when a finished run's vocab (or SentencePiece model) is the one a run would use
    now: the same path, or the same bytes elsewhere (a vocab of the same size that maps ids
    to other tokens is another model's input)."""
    if saved_path == path:
        return True
    try:
        return bool(saved_path and path) and filecmp.cmp(saved_path, path, shallow=False)
    except OSError:
        return False


def _same_config(saved_path, path):
    """True when two model config files name the same model: the same path, or equal JSON
    (a random-init run keeps its results when its config is now read from beside a
    checkpoint rather than from --bert_config_file)."""
    if saved_path == path:
        return True
    try:
        return (registry.read_config(saved_path).to_dict()
                == registry.read_config(path).to_dict())  # defaults filled in
    except (OSError, TypeError, ValueError, ConfigError):
        return False


def describe_model(config):
    """"bert L2 H32 V50" of a config dict (BERT's field names, or XLNet's n_layer, d_model,
    n_token)."""
    kind = config.get("model_type") or "bert"
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    hidden = config.get("hidden_size", config.get("d_model"))
    vocab = config.get("vocab_size", config.get("n_token"))
    return f"{kind} L{layers} H{hidden} V{vocab}"


def _finished_run_dirs(compare_dir, seed):
    """The seed's run folders of an earlier comparison: those under its runs/, and those its
    results.json names, which lie in the folders it collected them from (a comparison made
    only of collected runs has no runs/ of its own)."""
    run_dirs = sorted(glob.glob(os.path.join(compare_dir, "runs", "*", f"seed{seed}")))
    try:
        with open(os.path.join(compare_dir, "results.json"), encoding="utf-8") as f:
            runs = json.load(f).get("runs", [])
    except (OSError, ValueError):
        runs = []
    for run in runs:
        for per_seed in run.get("per_seed", []):
            run_dir = per_seed.get("run_dir", "")
            if os.path.basename(run_dir) == f"seed{seed}" and run_dir not in run_dirs:
                run_dirs.append(run_dir)
    return run_dirs


def reusable_elsewhere(reuse_from, plan, settings, seed):
    """(run_dir, results) of a finished run with these settings, seed and starting weights in
    another comparison's output folder (any of `reuse_from`), or None."""
    for other_dir in reuse_from:
        for run_dir in _finished_run_dirs(other_dir, seed):
            results = reusable(run_dir, plan, settings)
            if results is not None:
                return run_dir, results
    return None


def _fine_tune_all(plans, seeds, common, out_dir, rerun, collect_only, log_fn, reuse_from=()):
    """{(run index, seed): (run_dir, results)}."""
    cache_dir = common.get("cache_dir") or os.path.join(out_dir, "feature_cache")
    done = {}
    total = sum(len(seeds) for plan in plans if plan["same_as"] is None)
    clock = _RunClock(total)
    for index, plan in enumerate(plans):
        for seed in seeds:
            if plan["same_as"] is not None:
                done[index, seed] = done[plan["same_as"], seed]
                continue
            position = clock.next()
            run_dir = os.path.join(plan["run_dir"], f"seed{seed}")
            settings = dict(common, random_seed=seed, init_checkpoint=plan["init_checkpoint"],
                            bert_config_file=plan["bert_config_file"],
                            vocab_file=plan["vocab_file"],
                            spm_model_file=plan["spm_model_file"], output_dir=run_dir,
                            cache_dir=cache_dir)
            previous = None if rerun else reusable(run_dir, plan, settings)
            found = (run_dir, previous) if previous is not None else None
            if found is None and not rerun:
                found = reusable_elsewhere(reuse_from, plan, settings, seed)
            if found is not None:
                log_fn(f"== {position}{plan['label']}, seed {seed}: collecting the finished run "
                       f"in {found[0]}")
                done[index, seed] = found
                clock.skipped()
                continue
            if collect_only:
                raise UserError(f"run {plan['label']!r}, seed {seed}: no finished run with these "
                                f"settings in {run_dir} (drop --collect_only to train it)")
            # An interrupted run of these settings is resumed; anything else there is replaced.
            latest, changed = output_dir_lib.unfinished_run(settings)
            resume = latest is not None and not changed and not rerun
            log_fn(f"== {position}{plan['label']}, seed {seed}: "
                   + (f"resuming the interrupted run in {run_dir}" if resume else
                      f"fine-tuning from {plan['init_checkpoint'] or 'random initialisation'} "
                      f"into {run_dir}"))
            done[index, seed] = (run_dir, run_finetune.run(
                dict(settings, overwrite_output_dir=not resume), log_fn=log_fn))
            clock.trained()
    return done


class _RunClock:
    """'run k of n' and, once a run has trained, the ETA of the whole comparison (mean time
    of the runs trained so far × the runs left; reused runs take no time)."""

    def __init__(self, total):
        self.total, self.position, self.left = total, 0, total
        self.trained_seconds, self.trained_runs = 0.0, 0
        self._started = None

    def next(self):
        self.position += 1
        self._started = time.monotonic()
        eta = ""
        if self.trained_runs:
            seconds = self.trained_seconds / self.trained_runs * self.left
            eta = f", about {format_duration(seconds)} left in all"
        return f"run {self.position} of {self.total}{eta}: "

    def skipped(self):
        self.left -= 1

    def trained(self):
        self.left -= 1
        self.trained_runs += 1
        self.trained_seconds += time.monotonic() - self._started


def _read_predictions(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _evaluated_split(common, first_results):
    """('test' or 'dev', path): test when the runs scored a labelled test set."""
    if first_results.get("test"):
        return "test", first_results["data"]["test"]["file"]
    return "dev", first_results["data"]["dev"]["file"]


def _per_example_statistics(task_name, metric_names, split, path, runs, common):
    """{metric: array [runs, seeds, N, K]} of the evaluated split's labelled examples."""
    task = tasks.get_task(task_name)
    first = runs[0][0][1]
    settings = dict(common, tag_scheme=first.get("tag_scheme") or common.get("tag_scheme"))
    examples, _ = task.read(path, settings, require_labels=False, log_fn=lambda message: None)
    labels = first["labels"]
    by_metric = {metric: [] for metric in metric_names}
    for seeds in runs:
        per_seed = {metric: [] for metric in metric_names}
        for run_dir, _ in seeds:
            predictions = _read_predictions(os.path.join(run_dir, f"{split}_predictions.jsonl"))
            if len(predictions) != len(examples):
                raise UserError(f"{run_dir}: {len(predictions)} {split} predictions for "
                                f"{len(examples)} examples of {path}; rerun with --rerun")
            if task.metric_kind == "ner":
                pairs = [(e.tags, p["tags"]) for e, p in zip(examples, predictions) if e.tags]
                counts = metrics.entity_counts([g for g, _ in pairs], [p for _, p in pairs],
                                               first["tag_scheme"])
                for metric in metric_names:
                    per_seed[metric].append(statistics.statistics_for(metric, None, counts))
                continue
            index = {label: i for i, label in enumerate(labels)}
            pairs = [(index.get(e.label, len(labels)), index[p["label"]])
                     for e, p in zip(examples, predictions) if e.label is not None]
            gold, predicted = (np.array(values) for values in zip(*pairs))
            for metric in metric_names:
                per_seed[metric].append(statistics.statistics_for(
                    metric, gold, predicted, num_labels=len(labels) + 1))
        for metric in metric_names:
            by_metric[metric].append(np.stack(per_seed[metric]))
    return {metric: np.stack(values) for metric, values in by_metric.items()}


def _per_seed_rows(seeds, results_by_seed):
    rows = []
    for seed, (run_dir, results) in zip(seeds, results_by_seed):
        rows.append({"seed": seed, "run_dir": run_dir,
                     "dev": _scalars(results.get("dev")), "test": _scalars(results.get("test")),
                     "best_step": results["best_step"],
                     "num_train_steps": results["num_train_steps"],
                     "wall_time_seconds": results["wall_time_seconds"],
                     "collapsed": bool(results.get("collapsed")),
                     "dev_majority_share": (results.get("collapse") or {}).get(
                         "gold_majority_share"),
                     "dev_examples": (results.get("collapse") or {}).get("num_examples"),
                     "dev_curve": results["dev_curve"]})
    return rows


def _scalars(scores):
    return None if not scores else {k: v for k, v in scores.items() if isinstance(v, float)}


def write_plot(comparison, metric, out_dir):
    """Draws dev_curve.png; returns (path or None, its line for results.md)."""
    path = os.path.join(out_dir, PLOT_NAME)
    series = []
    for run in comparison["runs"]:
        curves = [row["dev_curve"] for row in run["per_seed"]]
        steps = [point["step"] for point in max(curves, key=len)]
        values = [[point[metric] for point in curve] for curve in curves]
        series.append((run["label"], steps, values))
    try:
        dev_curve_plot.write_dev_curve(path, series, metric_name=metric)
    except dev_curve_plot.PlotUnavailable as why:
        if os.path.exists(path):  # a previous comparison's picture would not match the table
            os.remove(path)
        return None, f"No {PLOT_NAME}: {why}."
    seeds = len(comparison["seeds"])
    band = f", band = min..max over {seeds} seeds" if seeds > 1 else ""
    return path, (f"Dev {metric} per evaluation step, one line per starting point (mean over "
                  f"seeds{band}): {PLOT_NAME}.")


def compare(run_specs, common, out_dir, seeds=None, rerun=False, collect_only=False,
            bootstrap_samples=2000, log_fn=print, reuse_from=()):
    """Runs or collects every starting point and seed, then writes the outputs.

    Returns the comparison dict (also in results.json)."""
    common = dict(run_finetune.DEFAULTS, **common)
    seeds = list(seeds or [common["random_seed"]])
    os.makedirs(out_dir, exist_ok=True)
    plans = plan_runs(run_specs, common, out_dir)
    done = _fine_tune_all(plans, seeds, common, out_dir, rerun, collect_only, log_fn,
                          reuse_from)
    runs = [[done[index, seed] for seed in seeds] for index in range(len(plans))]
    first = runs[0][0][1]
    metric_names = tasks.get_task(first["task"]).metrics
    split, path = _evaluated_split(common, first)
    stats = _per_example_statistics(first["task"], metric_names, split, path, runs, common)
    differences = []
    for index in range(1, len(plans)):
        for metric in metric_names:
            if stats[metric][0].nbytes > MAX_STATISTICS_BYTES:
                log_fn(f"no confidence interval for {metric}: {len(first['labels'])} labels make "
                       "its per-example statistics too large")
                continue
            result = statistics.paired_bootstrap(stats[metric][0], stats[metric][index], metric,
                                                 num_samples=bootstrap_samples)
            differences.append(dict(result, label=plans[index]["label"], metric=metric))
    comparison = {
        "task": first["task"], "labels": first["labels"],
        "title": f"{first['task']} fine-tuning on {os.path.basename(os.path.dirname(path)) or path}"
                 ": does pretraining help?",
        "metrics": list(metric_names), "selection_metric": first["selection_metric"],
        "seeds": seeds, "evaluated_split": split, "evaluated_file": path,
        "runs": [{"label": plan["label"], "model": describe_model(results[0][1]["bert_config"]),
                  "init_checkpoint": plan["init_checkpoint"], "checkpoint": plan["checkpoint"],
                  "bert_config_file": plan["bert_config_file"], "run_dir": plan["run_dir"],
                  "same_start_as": (plans[plan["same_as"]]["label"]
                                    if plan["same_as"] is not None else None),
                  "per_seed": _per_seed_rows(seeds, results)}
                 for plan, results in zip(plans, runs)],
        "differences": differences,
        "settings": {name: common.get(name) for name in COMPARED_SETTINGS},
    }
    comparison_report.judge_differences(comparison)
    comparison["plot"], comparison["plot_note"] = write_plot(
        comparison, comparison["selection_metric"], out_dir)
    markdown = comparison_report.render_markdown(comparison)
    comparison["rows"] = comparison_report.comparison_rows(comparison)
    for run, row in zip(comparison["runs"], comparison["rows"]):  # one number per run and split
        for split_name in ("dev", "test"):
            values = [seed_row[split_name][metric_names[0]] for seed_row in run["per_seed"]
                      if seed_row[split_name]]
            run[f"{split_name}_{metric_names[0]}"] = float(np.mean(values)) if values else None
    write_text_atomically(os.path.join(out_dir, "results.md"), markdown.splitlines())
    write_json_atomically(os.path.join(out_dir, "results.json"), comparison)
    log_fn(markdown)
    return comparison


@dataclasses.dataclass
class CompareOptions(run_finetune.FinetuneSettings):
    """The flags of `python -m finetune.compare`: run_finetune's settings, starting points,
    seeds, output."""
    run: tuple = option((), RUN_HELP)
    seeds: str = option("", "Comma-separated fine-tuning seeds, the same for every run "
                            "(default: --random_seed alone). 3 or more for a verdict that "
                            "accounts for seed noise.")
    bootstrap_samples: int = option(2000, "Bootstrap replicates of the paired difference.")
    output_dir: str = option("results/compare", "Where runs/, results.md, results.json and "
                                                "dev_curve.png go.")
    rerun: bool = option(False, "Train every run even if a finished one matches.")
    collect_only: bool = option(False, "Only collect finished runs; never train.")
    reuse_from: str = option("", "Comma-separated output folders of other comparisons whose "
                                 "finished runs are collected when settings, seed and starting "
                                 "weights match (e.g. a sweep reusing its baseline's runs).")


def _compare_from_flags(options):
    tf.logging.set_verbosity(tf.logging.ERROR)  # progress comes from run_finetune's log lines
    settings = dataclasses.asdict(options)
    run_specs, out_dir = settings.pop("run"), settings.pop("output_dir")
    rerun, collect_only = settings.pop("rerun"), settings.pop("collect_only")
    reuse_from = [path for path in settings.pop("reuse_from").split(",") if path]
    for path in reuse_from:
        if not (os.path.isdir(os.path.join(path, "runs"))
                or os.path.isfile(os.path.join(path, "results.json"))):
            raise UserError(f"--reuse_from={path}: no runs/ folder or results.json there (give "
                            "the --output_dir of an earlier finetune.compare)")
    seeds = parse_seeds(settings.pop("seeds"), settings["random_seed"])
    compare(run_specs or [], settings, out_dir, seeds=seeds, rerun=rerun,
            collect_only=collect_only, bootstrap_samples=settings.pop("bootstrap_samples"),
            reuse_from=reuse_from)


def main(argv=None):
    from absl import flags  # pylint: disable=import-outside-toplevel
    if "run" not in flags.FLAGS:  # repeatable, so defined here (cli_options skips it)
        flags.DEFINE_multi_string("run", [], RUN_HELP, module_name=sys.argv[0])
    cli_options.run_main(CompareOptions, _compare_from_flags, argv,
                         expected=(OSError, checkpoint_loading.CheckpointMismatchError))


if __name__ == "__main__":
    main()
