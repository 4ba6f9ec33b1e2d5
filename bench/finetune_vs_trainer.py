"""Fine-tuning speed side by side with transformers' Trainer, end to end, in one run.

    python bench/finetune_vs_trainer.py --hf_python=/path/to/hfenv/bin/python \
        [--workloads=lcqmc,chnsenticorp] [--seeds=1,2,3] [--tools=ours,ours_fixed,...]

Workloads (from ../shared/data, or --data_root): `lcqmc`, the first --lcqmc_train training
pairs of LCQMC and the first --dev / --test pairs of its dev and test files at
max_seq_length 128; `chnsenticorp`, the first --chnsenticorp_train reviews of ChnSentiCorp
and the first --dev / --test of its dev and test files at 256. The model is an L4 H256 BERT
with 512 positions and Google's Chinese vocab, from random initialisation, or with
--init_checkpoint a pretrained model (its config and vocab beside it; its position limit must
cover the workload's length): per seed one start is made by `finetune.run_finetune` (one
update at learning rate 0, so best/ holds the initial or pretrained weights and a seeded
classifier) and exported with `export_hf`, so every tool begins from the same tensors.
One epoch, batch 32, learning rate 1e-4, warmup 10%, dev scored every --eval_every_steps
and at the end, the best dev checkpoint scores test.

Tools, interleaved by seed so that the machine's drift falls on all alike:
- `ours`: `python -m finetune.run_finetune` with batches padded to their longest, in
  shuffled order; `ours_grouped`: --group_by_length; `ours_fixed`: --pad_to_max_length (as
  before batches held what they hold); `ours_grouped_m8`: --group_by_length with every batch
  padded to a multiple of 8 (fewer shapes); `ours_bf16` / `ours_fp16`: at its defaults in that
  --precision;
- `trainer`, `trainer_grouped`: bench/hf_trainer_reference.py under --hf_python:
  transformers' Trainer at its defaults, then with group_by_length.

One JSON line per run: the whole process's wall seconds (`end_to_end_seconds`: start-up,
tokenising, training, dev and test scoring, writing), its own account of seconds per
phase, training examples/s over the training steps alone (dev scoring and checkpoints
excluded on both sides), dev and test accuracy. Then one `summary` line per workload and
tool: the mean and standard deviation over seeds of each, and the ratios the targets
name (ours' training examples/s over `trainer_grouped`'s; ours' end-to-end over
`trainer`'s).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
BERT_L4_H256 = {"vocab_size": 21128, "hidden_size": 256, "num_hidden_layers": 4,
                "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                "max_position_embeddings": 512, "type_vocab_size": 2,
                "initializer_range": 0.02, "model_type": "bert"}
WORKLOADS = {"lcqmc": ("pair", 128), "chnsenticorp": ("classification", 256)}
OUR_FLAGS = {"ours": ["--nogroup_by_length"], "ours_grouped": ["--group_by_length"],
             "ours_fixed": ["--pad_to_max_length", "--nogroup_by_length"],
             "ours_bf16": ["--precision=bf16"], "ours_fp16": ["--precision=fp16"],
             "ours_grouped_m8": ["--group_by_length", "--pad_to_multiple_of=8"],
             "ours_grouped_bf16": ["--group_by_length", "--precision=bf16"]}
TRAINER_FLAGS = {"trainer": [], "trainer_grouped": ["--group_by_length"],
                 "trainer_bf16": ["--bf16"],
                 "trainer_grouped_bf16": ["--group_by_length", "--bf16"]}


def write_workload(args, name, folder):
    """train/dev/test files of the workload under folder (LCQMC lines or ChnSentiCorp TSV)."""
    os.makedirs(folder, exist_ok=True)
    sizes = {"train": args.lcqmc_train if name == "lcqmc" else args.chnsenticorp_train,
             "dev": args.dev, "test": args.test}
    for split, size in sizes.items():
        if name == "lcqmc":
            source, target = (os.path.join(args.data_root, "lcqmc", f"{split}.txt"),
                              os.path.join(folder, f"{split}.txt"))
            with open(source, encoding="utf-8") as f:
                lines = [line for line in f if line.strip()][:size]
        else:
            source, target = (os.path.join(args.data_root, "chnsenticorp", f"{split}.tsv"),
                              os.path.join(folder, f"{split}.tsv"))
            with open(source, encoding="utf-8") as f:
                header, *rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
            lines = ["\t".join(header) + "\n"] + ["\t".join(row) + "\n" for row in rows[:size]]
        with open(target, "w", encoding="utf-8") as out:
            out.writelines(lines)
    return folder


def our_flags(args, task, seq, data_dir, output_dir, seed):
    return [f"--task={task}", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
            f"--max_seq_length={seq}", f"--train_batch_size={args.batch_size}",
            f"--eval_batch_size={args.eval_batch_size}", f"--learning_rate={args.learning_rate}",
            f"--num_train_epochs={args.epochs}", "--warmup_proportion=0.1",
            f"--eval_every_steps={args.eval_every_steps}", f"--random_seed={seed}",
            "--overwrite_output_dir", "--log_every_n_steps=1000"]


def start_kind(args):
    return "pretrained" if args.init_checkpoint else "random"


def make_start(args, workload, task, seq, data_dir, seed):
    """(our start: a run's best/ holding the initial weights, its export_hf directory)."""
    folder = os.path.join(args.work_dir, "start", f"{workload}_{start_kind(args)}_seed{seed}")
    hf_dir = os.path.join(folder, "hf")
    if not os.path.isfile(os.path.join(hf_dir, "config.json")):
        run = os.path.join(folder, "run")
        flags = our_flags(args, task, seq, data_dir, run, seed) + [
            "--learning_rate=0", "--max_train_examples=32", "--max_dev_examples=32",
            "--num_train_epochs=1"]
        if args.init_checkpoint:
            flags.append(f"--init_checkpoint={args.init_checkpoint}")
        else:
            config = os.path.join(args.work_dir, "bert_config.json")
            with open(config, "w", encoding="utf-8") as f:
                json.dump(BERT_L4_H256, f, indent=1)
            flags += [f"--bert_config_file={config}", f"--vocab_file={args.vocab_file}"]
        for command in (["finetune.run_finetune", *flags],
                        ["pretrain.interop.export_hf", f"--init_checkpoint={run}",
                         f"--output_dir={hf_dir}", "--overwrite"]):
            subprocess.run([sys.executable, "-m", *command], cwd=REPO, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.join(folder, "run", "best"), hf_dir


def run_ours(args, tool, task, seq, data_dir, start, seed, out):
    """One line of ours: the process timed whole, its results.json's account."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "finetune.run_finetune",
                    *our_flags(args, task, seq, data_dir, out, seed),
                    f"--init_checkpoint={start}", *OUR_FLAGS[tool]],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    seconds = results["seconds"]
    return {"end_to_end_seconds": round(wall, 2), "seconds": seconds,
            "train_steps": results["num_train_steps"],
            "train_examples_per_second": round(results["num_train_steps"] * args.batch_size
                                               / seconds["training_steps"], 1),
            "dev_accuracy": results["dev_accuracy"], "test_accuracy": results["test_accuracy"],
            "best_step": results["best_step"]}


def run_trainer(args, tool, task, seq, data_dir, hf_dir, seed, out):
    os.makedirs(out, exist_ok=True)
    output = os.path.join(out, "result.json")
    started = time.perf_counter()
    subprocess.run([args.hf_python, os.path.join(REPO, "bench", "hf_trainer_reference.py"),
                    f"--model_dir={hf_dir}", f"--data_dir={data_dir}", f"--task={task}",
                    f"--max_seq_length={seq}", f"--output={output}",
                    f"--work_dir={os.path.join(out, 'trainer')}",
                    f"--batch_size={args.batch_size}", f"--eval_batch_size={args.eval_batch_size}",
                    f"--learning_rate={args.learning_rate}", f"--epochs={args.epochs}",
                    f"--eval_every_steps={args.eval_every_steps}", f"--seed={seed}",
                    *TRAINER_FLAGS[tool]],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    with open(output, encoding="utf-8") as f:
        result = json.load(f)
    del result["dev_curve"]
    return dict(result, end_to_end_seconds=round(wall, 2))


def summarise(workload, tool, lines):
    def spread(key):
        values = [line[key] for line in lines]
        return {"mean": round(statistics.mean(values), 4),
                "sd": round(statistics.stdev(values), 4) if len(values) > 1 else None,
                "values": values}
    return {"kind": "summary", "workload": workload, "tool": tool, "seeds": len(lines),
            **{key: spread(key) for key in ("train_examples_per_second", "end_to_end_seconds",
                                            "dev_accuracy", "test_accuracy")}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hf_python", required=True,
                        help="A Python with torch, transformers and accelerate (outside the "
                             "project).")
    parser.add_argument("--work_dir", default=os.path.join(REPO, "runs", "finetune_vs_trainer"))
    parser.add_argument("--data_root", default=SHARED)
    parser.add_argument("--vocab_file",
                        default=os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt"))
    parser.add_argument("--init_checkpoint", default=None,
                        help="A pretrained BERT to start from (its bert_config.json and "
                             "vocab.txt beside it); default: random initialisation.")
    parser.add_argument("--workloads", default="lcqmc,chnsenticorp")
    parser.add_argument("--tools", default="ours,ours_grouped,trainer,trainer_grouped")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--lcqmc_train", type=int, default=8000)
    parser.add_argument("--chnsenticorp_train", type=int, default=4800)
    parser.add_argument("--dev", type=int, default=1200)
    parser.add_argument("--test", type=int, default=1200)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=128)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--eval_every_steps", type=int, default=100)
    args = parser.parse_args()
    if not os.path.isdir(args.data_root) or not os.path.isfile(args.vocab_file):
        print(json.dumps({"skipped": f"{args.data_root} or {args.vocab_file} not present"}))
        return
    start = args.init_checkpoint
    if start and not (os.path.isdir(start) or os.path.isfile(start + ".index")):
        parser.error(f"--init_checkpoint={start}: neither a checkpoint directory nor a "
                     "checkpoint prefix (no .index file beside it)")
    tools = args.tools.split(",")
    for workload in args.workloads.split(","):
        task, seq = WORKLOADS[workload]
        data_dir = write_workload(args, workload, os.path.join(args.work_dir, "data", workload))
        lines = {tool: [] for tool in tools}
        for seed in [int(value) for value in args.seeds.split(",")]:
            start, hf_dir = make_start(args, workload, task, seq, data_dir, seed)
            for tool in tools:
                out = os.path.join(args.work_dir, "runs", f"{workload}_{tool}_seed{seed}")
                runner = run_ours if tool in OUR_FLAGS else run_trainer
                line = runner(args, tool, task, seq, data_dir,
                              start if tool in OUR_FLAGS else hf_dir, seed, out)
                lines[tool].append(line)
                print(json.dumps({"kind": "run", "workload": workload, "tool": tool,
                                  "seed": seed, "start": start_kind(args), **line}), flush=True)
        summaries = {tool: dict(summarise(workload, tool, runs), start=start_kind(args))
                     for tool, runs in lines.items()}
        for summary in summaries.values():
            for reference in ("trainer_grouped", "trainer_grouped_bf16"):
                if summary["tool"] in OUR_FLAGS and reference in summaries:
                    summary[f"train_speed_over_{reference}"] = round(
                        summary["train_examples_per_second"]["mean"]
                        / summaries[reference]["train_examples_per_second"]["mean"], 3)
            if summary["tool"] in OUR_FLAGS and "trainer" in summaries:
                summary["end_to_end_over_trainer"] = round(
                    summary["end_to_end_seconds"]["mean"]
                    / summaries["trainer"]["end_to_end_seconds"]["mean"], 3)
            print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
