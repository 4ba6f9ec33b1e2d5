"""transformers' side of bench/finetune_vs_trainer.py: the same fine-tuning with `Trainer`.

Runs under a Python with torch, transformers and accelerate (never the project's .venv):

    /path/to/hfenv/bin/python bench/hf_trainer_reference.py --model_dir=HF --data_dir=DATA \
        --task=pair --max_seq_length=128 --output=out.json [--group_by_length] ...

The model and tokenizer are an `export_hf` directory (the toolkit's random start, so both
sides begin from the same tensors). Examples are tokenised with the fast tokenizer at its
defaults but for truncation at --max_seq_length, then `Trainer` runs at its defaults
(AdamW, linear schedule, `DataCollatorWithPadding`: each batch padded to its longest) with
the toolkit's recipe where a default differs (warmup ratio, weight decay 0.01, epsilon 1e-6,
the same batch sizes) and, as the toolkit does, scores dev every --eval_every_steps, keeps
the best by accuracy (`load_best_model_at_end`) and scores test with it.

out.json: seconds per phase (tokenising, training steps, dev scoring, checkpoints, test
scoring, total), train examples/s over the training steps alone, dev and test accuracy,
the dev curve.
"""
import argparse
import csv
import json
import os
import time

import numpy as np
import torch
import transformers


def read_task(path, task):
    """[(texts, label)] of an LCQMC line file (pair) or a ChnSentiCorp TSV (classification)."""
    with open(path, encoding="utf-8") as f:
        if task == "pair":
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
            return [((a, b), int(label)) for a, b, label in rows]
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [((row["text_a"],), int(row["label"])) for row in reader]


class Examples(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings, self.labels = encodings, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        item = {name: values[index] for name, values in self.encodings.items()}
        item["labels"] = self.labels[index]
        return item


class TimedTrainer(transformers.Trainer):
    """A Trainer that adds up the seconds of its evaluations and checkpoint saves."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.phase_seconds = {"dev_scoring": 0.0, "checkpoints": 0.0}

    def evaluate(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return super().evaluate(*args, **kwargs)
        finally:
            self.phase_seconds["dev_scoring"] += time.perf_counter() - started

    def _save_checkpoint(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return super()._save_checkpoint(*args, **kwargs)
        finally:
            self.phase_seconds["checkpoints"] += time.perf_counter() - started


def version_arguments(args):
    """The warmup ratio and length grouping as this transformers names them: 4.x
    `warmup_ratio`, `group_by_length=True`; 5.x a float `warmup_steps`,
    `train_sampling_strategy="group_by_length"`."""
    names = transformers.TrainingArguments.__dataclass_fields__
    made = ({"warmup_ratio": args.warmup_ratio} if "warmup_ratio" in names
            else {"warmup_steps": args.warmup_ratio})
    if args.group_by_length:
        made.update({"group_by_length": True} if "group_by_length" in names
                    else {"train_sampling_strategy": "group_by_length"})
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--data_dir", required=True, help="train/dev/test files of the task")
    parser.add_argument("--task", choices=("pair", "classification"), required=True)
    parser.add_argument("--max_seq_length", type=int, required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--work_dir", required=True, help="the Trainer's output_dir")
    parser.add_argument("--group_by_length", action="store_true")
    parser.add_argument("--bf16", action="store_true",
                        help="TrainingArguments(bf16=True): torch's CPU autocast to bfloat16.")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=128)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--warmup_ratio", type=float, default=0.1)
    parser.add_argument("--eval_every_steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    seconds = {}
    extension = ".txt" if args.task == "pair" else ".tsv"
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(args.model_dir)
    seconds["setup"] = time.perf_counter() - started

    phase = time.perf_counter()
    datasets = {}
    for split in ("train", "dev", "test"):
        rows = read_task(os.path.join(args.data_dir, split + extension), args.task)
        texts = list(zip(*[texts for texts, _ in rows]))
        encodings = tokenizer(*[list(column) for column in texts], truncation=True,
                              max_length=args.max_seq_length)
        datasets[split] = Examples(encodings, [label for _, label in rows])
    seconds["tokenising"] = time.perf_counter() - phase

    def accuracy(prediction):
        return {"accuracy": float((np.argmax(prediction.predictions, axis=-1)
                                   == prediction.label_ids).mean())}

    training = transformers.TrainingArguments(
        output_dir=args.work_dir, per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size, learning_rate=args.learning_rate,
        num_train_epochs=args.epochs, weight_decay=0.01,
        adam_epsilon=1e-6, eval_strategy="steps", eval_steps=args.eval_every_steps,
        save_strategy="steps", save_steps=args.eval_every_steps, save_total_limit=2,
        load_best_model_at_end=True, metric_for_best_model="accuracy",
        seed=args.seed, report_to=[], use_cpu=True, logging_strategy="no", disable_tqdm=True,
        bf16=args.bf16,
        **version_arguments(args))
    trainer = TimedTrainer(model=model, args=training, train_dataset=datasets["train"],
                           eval_dataset=datasets["dev"], processing_class=tokenizer,
                           data_collator=transformers.DataCollatorWithPadding(tokenizer),
                           compute_metrics=accuracy)
    phase = time.perf_counter()
    output = trainer.train()
    train_call = time.perf_counter() - phase
    seconds.update(trainer.phase_seconds)
    seconds["training_steps"] = train_call - sum(trainer.phase_seconds.values())
    curve = [{"step": entry["step"], "accuracy": entry["eval_accuracy"]}
             for entry in trainer.state.log_history if "eval_accuracy" in entry]
    best = max(curve, key=lambda point: (point["accuracy"], -point["step"]))
    phase = time.perf_counter()
    test = trainer.predict(datasets["test"])
    seconds["test_scoring"] = time.perf_counter() - phase
    seconds["total"] = time.perf_counter() - started
    steps = output.global_step
    result = {"seconds": {name: round(value, 2) for name, value in seconds.items()},
              "train_steps": steps,
              "train_examples_per_second": round(steps * args.batch_size
                                                 / seconds["training_steps"], 1),
              "dev_accuracy": best["accuracy"], "best_step": best["step"],
              "test_accuracy": test.metrics["test_accuracy"], "dev_curve": curve,
              "torch": torch.__version__, "transformers": transformers.__version__,
              "threads": torch.get_num_threads()}
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
