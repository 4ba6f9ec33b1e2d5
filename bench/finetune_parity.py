"""Fine-tuning parity with transformers: the same weights, examples, order and recipe.

    python bench/finetune_parity.py --hf_python=/path/to/hfenv/bin/python \
        [--pretrained_checkpoint=DIR] [--tasks=classification,pair,ner] [--seeds=1,2,3,4,5]

For each task (classification: ChnSentiCorp, pair: LCQMC, ner: MSRA; 3000 training, 800
dev, 1000 test examples drawn from ../shared/data, or --data_root), each starting point
(`random`: initialisation; `pretrained`: --pretrained_checkpoint, or without it the bench's
tiny BERT pretrained on the CLUE sample by the toolkit's own commands, make_pretrained_start)
and each seed:

1. the starting weights, head included, are made once by `finetune.run_finetune` itself (one
   update at learning rate 0, so best/ holds the initial weights) and exported with
   `export_hf`, so both sides start from the same tensors;
2. ours: `finetune.run_finetune` from them, logging every step's training loss;
3. theirs: transformers' own *ForSequenceClassification / *ForTokenClassification in a plain
   torch loop (bench/hf_finetune_reference.py, run by --hf_python), on the batches our input
   pipeline drew, in its order, with the same schedule, clipping, epsilon and weight-decay
   exclusions; dev is scored at the same steps, the best dev step picks the test score, and
   both sides' predictions go through the same task code (collect, score);
4. with and without Adam's bias correction (--bias_correction).

One JSON line per comparison:
- `kind: losses` (dropout off, one seed): each side's training loss per step and the largest
  relative difference over the first --loss_steps steps (parity: below 1e-3);
- `kind: metrics` (dropout on, every seed): each side's test metric per seed, mean and
  standard deviation, collapsed runs, and the hierarchical paired bootstrap of ours - theirs
  (finetune.statistics; parity: the interval contains 0, null when every seed collapsed on
  both sides);
- `kind: noise_floor` (--comparisons=noise_floor; dropout off, one seed): how far transformers'
  losses, and ours from the start moved by 1e-7 and 1e-6 (relative, about one and ten float32
  rounding steps), part from ours: the first step above 1e-5, the largest difference over
  --loss_steps, and each run's mean loss over its last 50 steps.
Runs are kept under --work_dir and reused when their results exist.
"""
import argparse
import glob
import json
import math
import os
import random
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pretrain import cpu_kernels  # noqa: E402,F401  (CPU kernel default before TF loads)
import tensorflow.compat.v1 as tf  # noqa: E402

from data_gen.text.tokenization import FullTokenizer  # noqa: E402
from finetune import features as records  # noqa: E402
from finetune import metrics, run_finetune, statistics, tasks  # noqa: E402
from pretrain.interop.export_hf import export_model  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
SIZES = {"train": 3000, "dev": 800, "test": 1000}
TINY_BERT = {"vocab_size": 21128, "hidden_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 512, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
             "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02}
STEP_LOSS = re.compile(r"^train step (\d+)/\d+: loss ([0-9.eE+-]+|nan|inf) \(mean of the last 1\)")


# ---- data --------------------------------------------------------------------------------
def _write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


def make_task_data(root, data_root):
    """{task: folder with train/dev/test} drawn reproducibly from the shared sets."""
    made = {}
    senti = os.path.join(data_root, "chnsenticorp")
    if os.path.isdir(senti):
        folder = os.path.join(root, "classification")
        for split, source in (("train", "train"), ("dev", "dev"), ("test", "test")):
            with open(os.path.join(senti, source + ".tsv"), encoding="utf-8") as f:
                header, *rows = f.read().splitlines()
            if split == "train":
                random.Random(0).shuffle(rows)
            _write(os.path.join(folder, split + ".tsv"), [header] + rows[:SIZES[split]])
        made["classification"] = folder
    lcqmc = os.path.join(data_root, "lcqmc")
    if os.path.isdir(lcqmc):
        folder = os.path.join(root, "pair")
        for split in SIZES:
            with open(os.path.join(lcqmc, split + ".txt"), encoding="utf-8") as f:
                rows = f.read().splitlines()
            random.Random(0).shuffle(rows)
            _write(os.path.join(folder, split + ".txt"), rows[:SIZES[split]])
        made["pair"] = folder
    msra = os.path.join(data_root, "msra_ner")
    if os.path.isdir(msra):
        folder = os.path.join(root, "ner")
        sentences = {}
        for source in ("train", "test"):
            with open(os.path.join(msra, source + ".txt"), encoding="utf-8") as f:
                sentences[source] = [s for s in f.read().split("\n\n") if s.strip()]
        train = sentences["train"]
        parts = {"train": train[:SIZES["train"]],
                 "dev": train[SIZES["train"]:SIZES["train"] + SIZES["dev"]],
                 "test": sentences["test"][:SIZES["test"]]}
        for split, part in parts.items():
            _write(os.path.join(folder, split + ".txt"), ["\n\n".join(part)])
        made["ner"] = folder
    return made


# ---- runs ----------------------------------------------------------------------------------
def _config_file(folder, dropout):
    path = os.path.join(folder, f"bert_config_dropout{dropout}.json")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        config = dict(TINY_BERT, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
        with open(path, "w", encoding="utf-8") as out:
            json.dump(config, out, indent=1)
    return path


def _settings(args, task, data_dir, output_dir, **overrides):
    settings = dict(task=task, data_dir=data_dir, output_dir=output_dir,
                    max_seq_length=args.max_seq_length, train_batch_size=args.batch_size,
                    num_train_epochs=args.epochs, learning_rate=args.learning_rate,
                    warmup_proportion=args.warmup_proportion,
                    eval_every_steps=args.eval_every_steps, log_every_n_steps=1,
                    cache_dir=os.path.join(args.work_dir, "cache", task),
                    overwrite_output_dir=True,
                    # the 3,000-sentence MSRA sample's dev has a tag (S-PER) its training
                    # sentences lack: scored as an error on both sides alike
                    allow_unseen_labels=task == "ner")
    settings.update(overrides)
    return settings


def make_pretrained_start(args):
    """The pretrained start, made when --pretrained_checkpoint is not given: the bench's tiny
    BERT pretrained on general text (--pretrain_corpus, none of the tasks' text) with the
    toolkit's own commands, RoBERTa whole-word data, bias-corrected AdamW, seed 1; eval on 5%
    of the documents held out. Returns its folder; exits when learning_check says it has not
    learned (a plateau start would compare two collapses)."""
    root = os.path.join(args.work_dir, "pretrained_start")
    model_dir = os.path.join(root, "pretrain")
    data = ["data_gen.create_pretraining_data", f"--input_file={args.pretrain_corpus}",
            f"--output_file={root}/data/general.tfrecord", f"--vocab_file={args.vocab_file}",
            "--mode=roberta", f"--max_seq_length={args.max_seq_length}",
            "--max_predictions_per_seq=10", "--dupe_factor=5", "--eval_share=0.05",
            "--random_seed=1", "--noprogress"]
    pretrain = ["pretrain.run_pretraining",
                f"--bert_config_file={_config_file(args.work_dir, 0.1)}",
                f"--input_file={root}/data/general.tfrecord",
                f"--eval_input_file={root}/data/eval/general.tfrecord",
                f"--output_dir={model_dir}", "--do_train", "--do_eval",
                "--train_batch_size=64", "--eval_batch_size=64",
                f"--num_train_steps={args.pretrain_steps}", "--num_warmup_steps=100",
                "--learning_rate=5e-4", "--optimizer=adamw", "--adam_bias_correction",
                "--max_eval_steps=100", "--random_seed=1", "--strategy=cpu"]
    check = ["pretrain.training.learning_check", f"--eval_results={model_dir}/eval_results.txt"]
    steps = [(data, os.path.join(root, "data", "eval", "general.tfrecord.meta.json")),
             (pretrain, os.path.join(model_dir, "eval_results.txt")), (check, None)]
    for (module, *flags), done in steps:
        if done and os.path.exists(done):
            continue  # made by an earlier run
        # their output goes to stderr: stdout carries the bench's JSON lines only
        status = subprocess.run([sys.executable, "-m", module, *flags], cwd=REPO,
                                stdout=sys.stderr).returncode
        if status:
            sys.exit(f"the pretrained start: {module} exited {status} (its output is above)")
    return model_dir


def make_start(args, task, data_dir, init, seed):
    """(our starting checkpoint: a fine-tuning run's best/, transformers' directory)."""
    folder = os.path.join(args.work_dir, "start", f"{task}_{init}_seed{seed}")
    hf_dir = os.path.join(folder, "hf")
    if not os.path.exists(os.path.join(hf_dir, "config.json")):
        # One epoch at learning rate 0 over the whole training file, so that the start's
        # label list (NER: the tags of every training sentence) is the runs'; scored once.
        settings = _settings(
            args, task, data_dir, os.path.join(folder, "run"), learning_rate=0.0,
            num_train_epochs=1, eval_every_steps=10 ** 6,
            random_seed=seed, bert_config_file=_config_file(args.work_dir, 0.1),
            cache_dir=os.path.join(args.work_dir, "cache", "start_" + task),
            vocab_file=args.vocab_file,
            init_checkpoint=args.pretrained_checkpoint if init == "pretrained" else None)
        run_finetune.run(settings, log_fn=lambda message: None)
        export_model(os.path.join(folder, "run"), output_dir=hf_dir, overwrite=True,
                     log_fn=lambda message: None)
    return os.path.join(folder, "run", "best"), hf_dir


def perturbed_start(start, scale, seed=0):
    """A copy of the checkpoint folder `start` with every float weight w replaced by
    w (1 + scale N(0, 1)) (scale 1e-7: about one float32 rounding step). Returns its path."""
    out = f"{start.rstrip(os.sep)}_perturbed{scale:g}"
    if os.path.isfile(os.path.join(out, "checkpoint")):
        return out
    checkpoint = tf.train.latest_checkpoint(start)
    reader = tf.train.load_checkpoint(checkpoint)
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(start):
        if not name.startswith(("model.ckpt", "checkpoint")):
            with open(os.path.join(start, name), "rb") as src, \
                    open(os.path.join(out, name), "wb") as dst:
                dst.write(src.read())
    with tf.Graph().as_default():
        variables = []
        for name, dtype in sorted(reader.get_variable_to_dtype_map().items()):
            value = reader.get_tensor(name)
            if dtype == tf.float32 and value.ndim:
                value = (value * (1 + scale * rng.standard_normal(value.shape))).astype(
                    np.float32)
            variables.append(tf.Variable(value, name=name))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(variables).save(session, os.path.join(
                out, os.path.basename(checkpoint)), write_meta_graph=False)
    return out


def run_ours(args, task, data_dir, init, start, seed, bias_correction, dropout, tag=""):
    """(results dict, per-step losses, run folder) of finetune.run_finetune from `start`."""
    out = os.path.join(args.work_dir, "runs", f"{task}_{init}_bc{int(bias_correction)}"
                       f"_dropout{dropout}_seed{seed}{tag}")
    losses_path = os.path.join(out, "step_losses.json")
    if not os.path.exists(losses_path):
        lines = []
        settings = _settings(args, task, data_dir, out, random_seed=seed, init_checkpoint=start,
                             adam_bias_correction=bias_correction,
                             bert_config_file=_config_file(args.work_dir, dropout))
        run_finetune.run(settings, log_fn=lines.append)
        losses = [float(m.group(2)) for m in map(STEP_LOSS.match, lines) if m]
        with open(losses_path, "w", encoding="utf-8") as f:
            json.dump(losses, f)
    with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    with open(losses_path, encoding="utf-8") as f:
        return results, json.load(f), out


def _task_examples(task, results, split):
    """(examples, plan, feature arrays) of a split, featurised as run_finetune does."""
    settings = dict(run_finetune.DEFAULTS, tag_scheme=results.get("tag_scheme") or "")
    examples, _ = task.read(results["data"][split]["file"], settings, require_labels=True,
                            log_fn=lambda message: None)
    if task.metric_kind == "ner":
        task.label_list(examples, settings)  # sets the task's tag scheme
    tokenizer = FullTokenizer(results["vocab_file"], do_lower_case=True)
    features, plan, _ = task.featurize(examples, tokenizer, results["settings"]["max_seq_length"],
                                       results["labels"])
    arrays = {name: np.array([f[name] for f in features]) for name in features[0]}
    return examples, plan, arrays


def replay_training_batches(task, results, seed):
    """The training batches our input pipeline drew, in order: {name: [steps, B, ...]}."""
    settings = results["settings"]
    pattern = os.path.join(settings["cache_dir"], "train.*.tfrecord")
    path, = glob.glob(pattern)
    spec = records.record_spec(task.record_kind, settings["max_seq_length"])
    # the run's order (grouped by length or not), every batch padded to max_seq_length to stack
    batching = records.Batching(pad_to_max_length=True, group_by_length=results.get(
        "batching", {}).get("group_by_length", False))
    steps = results["num_train_steps"]
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)  # the Estimator's graph seed (RunConfig tf_random_seed)
        input_fn = records.input_fn_builder(path, spec, settings["train_batch_size"],
                                            is_training=True, seed=seed, batching=batching)
        batch = tf.data.make_one_shot_iterator(input_fn()).get_next()
        with tf.Session() as session:
            drawn = [session.run(batch) for _ in range(steps)]
    arrays = {name: np.stack([features[name] for features, _ in drawn])
              for name in drawn[0][0]}
    labels = np.stack([labels for _, labels in drawn])
    if task.metric_kind == "ner":
        labels = np.where(arrays["label_weights"] > 0, labels, -100)
    arrays["labels"] = labels
    return arrays


def run_theirs(args, task, results, hf_dir, seed, bias_correction, dropout, ours_dir):
    """transformers' run: {"losses", "dev_curve", "best_step", "test": collected}."""
    out = os.path.join(ours_dir, "theirs.npz")
    if not os.path.exists(out):
        inputs = {"train_" + k: v for k, v in replay_training_batches(task, results, seed).items()}
        for split in ("dev", "test"):
            _, _, arrays = _task_examples(task, results, split)
            inputs.update({f"{split}_{k}": v for k, v in arrays.items()})
        batches = os.path.join(ours_dir, "theirs_inputs.npz")
        np.savez(batches, **inputs)
        subprocess.run([args.hf_python, os.path.join(REPO, "bench", "hf_finetune_reference.py"),
                        f"--model_dir={hf_dir}", f"--batches={batches}", f"--output={out}",
                        f"--token_task={int(task.metric_kind == 'ner')}",
                        f"--learning_rate={args.learning_rate}",
                        f"--num_train_steps={results['num_train_steps']}",
                        f"--num_warmup_steps={results['num_warmup_steps']}",
                        f"--bias_correction={int(bias_correction)}", f"--dropout={dropout}",
                        f"--eval_every_steps={args.eval_every_steps}", f"--seed={seed}"],
                       check=True, env=dict(os.environ, USE_TF="0"), capture_output=True)
        os.remove(batches)
    made = np.load(out)
    labels = results["labels"]
    metric = results["selection_metric"]
    scored = {}
    for split in ("dev", "test"):
        examples, plan, _ = _task_examples(task, results, split)
        scored[split] = examples, plan
    curve, best = [], None
    for step in made["eval_steps"]:
        collected = _collect(task, scored["dev"], made[f"dev_probabilities_{step}"], labels)
        value = task.score(scored["dev"][0], collected, labels)[metric]
        curve.append({"step": int(step), metric: value})
        if step > 0 and (best is None or value > best[1]):
            best = (int(step), value)
    test = _collect(task, scored["test"], made[f"test_probabilities_{best[0]}"], labels)
    return {"losses": made["losses"].tolist(), "dev_curve": curve, "best_step": best[0],
            "test": test, "test_examples": scored["test"][0]}


def _collect(task, examples_plan, probabilities, labels):
    examples, plan = examples_plan
    key = "tag_probabilities" if task.metric_kind == "ner" else "probabilities"
    return task.collect(examples, plan, [{key: row} for row in probabilities], labels)


def _our_test_collected(task, results, ours_dir):
    """Our test predictions as the task's collected dict (from test_predictions.jsonl)."""
    with open(os.path.join(ours_dir, "test_predictions.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if task.metric_kind == "ner":
        return {"predicted": [row["tags"] for row in rows]}
    return {"predicted": [row["label"] for row in rows]}


def per_example_statistics(task, metric, examples, predicted, labels, scheme):
    """[N, K] statistics of one run's test predictions (finetune.statistics)."""
    if task.metric_kind == "ner":
        counts = metrics.entity_counts([e.tags for e in examples], predicted, scheme)
        return statistics.statistics_for(metric, None, counts)
    index = {label: i for i, label in enumerate(labels)}
    gold = np.array([index[e.label] for e in examples])
    return statistics.statistics_for(metric, gold, np.array([index[p] for p in predicted]),
                                     num_labels=len(labels))




# ---- the two comparisons --------------------------------------------------------------------
def compare_losses(args, task_name, data_dir, init, bias_correction):
    task = tasks.get_task(task_name)
    seed = args.seeds[0]
    start, hf_dir = make_start(args, task_name, data_dir, init, seed)
    results, ours, out = run_ours(args, task_name, data_dir, init, start, seed, bias_correction,
                                  0.0)
    theirs = run_theirs(args, task, results, hf_dir, seed, bias_correction, 0.0, out)["losses"]
    steps = min(args.loss_steps, len(ours), len(theirs))
    relative = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(ours[:steps], theirs[:steps])]
    worst = int(np.argmax(relative))
    return {"kind": "losses", "task": task_name, "init": init,
            "bias_correction": bias_correction, "seed": seed, "steps_compared": steps,
            "max_relative_difference": round(max(relative), 6), "at_step": worst + 1,
            "parity": max(relative) < 1e-3,
            "ours": [round(v, 5) for v in ours[:steps]],
            "theirs": [round(v, 5) for v in theirs[:steps]]}


def _divergence(losses, reference, steps):
    """(largest relative difference over `steps`, its step, first step above 1e-5 or None)."""
    relative = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses[:steps], reference)]
    above = [step for step, value in enumerate(relative, 1) if value > 1e-5]
    return max(relative), int(np.argmax(relative)) + 1, (above[0] if above else None)


def compare_noise_floor(args, task_name, data_dir, init, bias_correction):
    """How far our own dropout-off run drifts from itself when its start moves by one or
    ten float32 rounding steps (1e-7, 1e-6 relative), beside how far transformers' run is:
    where the training is chaotic, the two frameworks' rounding alone parts the curves."""
    task = tasks.get_task(task_name)
    seed = args.seeds[0]
    start, hf_dir = make_start(args, task_name, data_dir, init, seed)
    results, ours, out = run_ours(args, task_name, data_dir, init, start, seed,
                                  bias_correction, 0.0)
    theirs = run_theirs(args, task, results, hf_dir, seed, bias_correction, 0.0, out)["losses"]
    steps = min(args.loss_steps, len(ours))
    line = {"kind": "noise_floor", "task": task_name, "init": init,
            "bias_correction": bias_correction, "seed": seed, "steps_compared": steps}
    for name, losses in [("transformers", list(theirs))] + [
            (f"ours_perturbed_{scale:g}", run_ours(
                args, task_name, data_dir, init, perturbed_start(start, scale), seed,
                bias_correction, 0.0, tag=f"_perturbed{scale:g}")[1])
            for scale in (1e-7, 1e-6)]:
        largest, at_step, first = _divergence(losses, ours[:steps], steps)
        line[name] = {"max_relative_difference": round(largest, 6), "at_step": at_step,
                      "first_step_above_1e-5": first,
                      "mean_loss_last_50": round(float(np.mean(losses[-50:])), 4)}
    line["ours_mean_loss_last_50"] = round(float(np.mean(ours[-50:])), 4)
    return line


def compare_metrics(args, task_name, data_dir, init, bias_correction):
    task = tasks.get_task(task_name)
    rows = {"ours": [], "theirs": []}
    flags = {"ours": [], "theirs": []}
    stats = {"ours": [], "theirs": []}
    metric = None
    for seed in args.seeds:
        start, hf_dir = make_start(args, task_name, data_dir, init, seed)
        results, _, out = run_ours(args, task_name, data_dir, init, start, seed, bias_correction,
                                   0.1)
        metric = results["selection_metric"]
        theirs = run_theirs(args, task, results, hf_dir, seed, bias_correction, 0.1, out)
        examples = theirs["test_examples"]
        ours_predicted = _our_test_collected(task, results, out)["predicted"]
        for side, predicted in (("ours", ours_predicted), ("theirs", theirs["test"]["predicted"])):
            values = per_example_statistics(task, metric, examples, predicted, results["labels"],
                                            results.get("tag_scheme"))
            stats[side].append(values)
            rows[side].append(statistics.metric_value(metric, values))
            flags[side].append(task.collapse(examples, {"predicted": predicted})["collapsed"])
    interval = statistics.paired_bootstrap(np.stack(stats["theirs"]), np.stack(stats["ours"]),
                                           metric)
    summary = {side: dict(zip(("mean", "std"), statistics.mean_std(values)))
               for side, values in rows.items()}
    return {"kind": "metrics", "task": task_name, "init": init,
            "bias_correction": bias_correction, "metric": metric, "seeds": args.seeds,
            "ours": [round(v, 4) for v in rows["ours"]],
            "theirs": [round(v, 4) for v in rows["theirs"]],
            "ours_mean_std": summary["ours"], "theirs_mean_std": summary["theirs"],
            "ours_collapsed": flags["ours"], "theirs_collapsed": flags["theirs"],
            "difference": round(interval["difference"], 4),
            "interval": [round(interval["low"], 4), round(interval["high"], 4)],
            # null when every seed collapsed on both sides: two runs that learned nothing agree
            # without showing that they train alike.
            "parity": (None if all(flags["ours"]) and all(flags["theirs"])
                       else interval["low"] <= 0 <= interval["high"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hf_python", required=True,
                        help="A Python with torch and transformers (outside the project).")
    parser.add_argument("--pretrained_checkpoint", default="",
                        help="A pretraining output that passes learning_check (for "
                             "init=pretrained); default: made under --work_dir (see "
                             "make_pretrained_start).")
    parser.add_argument("--pretrain_corpus",
                        default=os.path.join(SHARED, "corpus", "clue_small_sample.txt"),
                        help="General text the made pretrained start learns from.")
    parser.add_argument("--pretrain_steps", type=int, default=2000,
                        help="Pretraining updates of the made pretrained start (batch 64).")
    parser.add_argument("--work_dir", default=os.path.join(REPO, "runs", "finetune_parity"))
    parser.add_argument("--data_root", default=SHARED)
    parser.add_argument("--vocab_file", default=os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt"))
    parser.add_argument("--tasks", default="classification,pair,ner")
    parser.add_argument("--inits", default="random,pretrained")
    parser.add_argument("--bias_correction", default="off,on")
    parser.add_argument("--comparisons", default="losses,metrics",
                        help="Of losses, metrics, noise_floor (our run against itself from "
                             "a start moved by 1e-7 and 1e-6).")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--loss_steps", type=int, default=50)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--warmup_proportion", type=float, default=0.1)
    parser.add_argument("--eval_every_steps", type=int, default=50)
    args = parser.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    if not os.path.isdir(args.data_root):
        print(json.dumps({"skipped": f"{args.data_root} not present: the tasks' data is needed"}))
        return
    data = make_task_data(os.path.join(args.work_dir, "data"), args.data_root)
    tf.logging.set_verbosity(tf.logging.ERROR)
    for task_name in args.tasks.split(","):
        for init in args.inits.split(","):
            if init == "pretrained" and not args.pretrained_checkpoint:
                if not os.path.isfile(args.pretrain_corpus):
                    print(json.dumps({"skipped": f"init=pretrained: no --pretrained_checkpoint "
                                                 f"and no {args.pretrain_corpus} to make one"}))
                    continue
                args.pretrained_checkpoint = make_pretrained_start(args)
            for bias_correction in (value == "on" for value in args.bias_correction.split(",")):
                for kind in args.comparisons.split(","):
                    compare = {"losses": compare_losses, "metrics": compare_metrics,
                               "noise_floor": compare_noise_floor}[kind]
                    print(json.dumps(compare(args, task_name, data[task_name], init,
                                             bias_correction)), flush=True)


if __name__ == "__main__":
    main()
