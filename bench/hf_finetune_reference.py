"""transformers' side of bench/finetune_parity.py: the same fine-tuning in a plain torch loop.

Runs under a Python with torch and transformers (never the project's .venv):

    /path/to/hfenv/bin/python bench/hf_finetune_reference.py --model_dir=HF --batches=in.npz \
        --output=out.npz --learning_rate=5e-4 --num_warmup_steps=28 --bias_correction=1 ...

The model is transformers' own *ForSequenceClassification / *ForTokenClassification loaded
from an `export_hf` directory (AutoModelFor...; dropout from --dropout). The training
batches come in the order the toolkit's input pipeline drew them (in.npz: train_<name>
[steps, B, S]; dev_<name> / test_<name> [records, S]); labels of tagging records carry
-100 where the toolkit's label_weights are 0, transformers' ignore index.

The optimizer is the toolkit's recipe written against torch: AdamW with decoupled weight
decay 0.01 (not on LayerNorm weights or biases), epsilon 1e-6, the global gradient norm
clipped to 1, and Google's schedule (linear warmup from 0 over num_warmup_steps updates,
then lr * (1 - step / num_train_steps), counted from step 0). --bias_correction=1 uses
torch.optim.AdamW (bias-corrected, as transformers' Trainer); 0 the same update without
the correction (google-research/bert's AdamWeightDecayOptimizer).

out.npz: losses [steps] (each update's training loss), eval_steps [E], and for each
evaluated step k dev_probabilities_k / test_probabilities_k ([records, N] or
[records, S, N]).
"""
import argparse
import json

import numpy as np
import torch
import transformers


class GoogleAdamW(torch.optim.Optimizer):
    """google-research/bert's AdamWeightDecayOptimizer: Adam moments without bias
    correction, update m / (sqrt(v) + eps) plus weight_decay * param, times lr."""

    def __init__(self, groups, lr, betas=(0.9, 0.999), eps=1e-6):
        super().__init__(groups, dict(lr=lr, betas=betas, eps=eps, weight_decay=0.0))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta_1, beta_2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["m"] = torch.zeros_like(param)
                    state["v"] = torch.zeros_like(param)
                m, v = state["m"], state["v"]
                m.mul_(beta_1).add_(param.grad, alpha=1 - beta_1)
                v.mul_(beta_2).addcmul_(param.grad, param.grad, value=1 - beta_2)
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update = update + group["weight_decay"] * param
                param.add_(update, alpha=-group["lr"])


def parameter_groups(model, weight_decay):
    """Decay everything but LayerNorm weights and biases (the toolkit's exclusions)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if "LayerNorm" in name or name.endswith("bias") else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def google_schedule(num_train_steps, num_warmup_steps):
    def factor(step):
        if num_warmup_steps and step < num_warmup_steps:
            return step / num_warmup_steps
        return max(0.0, 1.0 - min(step, num_train_steps) / num_train_steps)
    return factor


def inputs(arrays, prefix, index=None):
    pick = (lambda a: a[index]) if index is not None else (lambda a: a)
    made = {"input_ids": torch.as_tensor(pick(arrays[prefix + "input_ids"]), dtype=torch.long),
            "attention_mask": torch.as_tensor(pick(arrays[prefix + "input_mask"]), dtype=torch.long),
            "token_type_ids": torch.as_tensor(pick(arrays[prefix + "segment_ids"]), dtype=torch.long)}
    return made


def predict(model, arrays, split, batch_size=128):
    model.eval()
    count = len(arrays[split + "_input_ids"])
    out = []
    with torch.no_grad():
        for start in range(0, count, batch_size):
            rows = slice(start, start + batch_size)
            logits = model(**inputs(arrays, split + "_", rows)).logits
            out.append(torch.softmax(logits.double(), dim=-1).numpy())
    model.train()
    return np.concatenate(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--batches", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--token_task", type=int, default=0)
    parser.add_argument("--learning_rate", type=float, required=True)
    parser.add_argument("--num_train_steps", type=int, required=True)
    parser.add_argument("--num_warmup_steps", type=int, required=True)
    parser.add_argument("--bias_correction", type=int, required=True)
    parser.add_argument("--dropout", type=float, required=True)
    parser.add_argument("--eval_every_steps", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--weight_decay", type=float, default=0.01)
    parser.add_argument("--epsilon", type=float, default=1e-6)
    parser.add_argument("--clip_norm", type=float, default=1.0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    auto = (transformers.AutoModelForTokenClassification if args.token_task
            else transformers.AutoModelForSequenceClassification)
    model = auto.from_pretrained(args.model_dir, hidden_dropout_prob=args.dropout,
                                 attention_probs_dropout_prob=args.dropout)
    model.train()
    groups = parameter_groups(model, args.weight_decay)
    if args.bias_correction:
        optimizer = torch.optim.AdamW(groups, lr=args.learning_rate, betas=(0.9, 0.999),
                                      eps=args.epsilon)
    else:
        optimizer = GoogleAdamW(groups, lr=args.learning_rate, eps=args.epsilon)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, google_schedule(args.num_train_steps, args.num_warmup_steps))
    arrays = dict(np.load(args.batches))
    losses, evaluated = [], {}

    def evaluate(step):
        evaluated[f"dev_probabilities_{step}"] = predict(model, arrays, "dev")
        evaluated[f"test_probabilities_{step}"] = predict(model, arrays, "test")

    evaluate(0)
    for step in range(args.num_train_steps):
        labels = torch.as_tensor(arrays["train_labels"][step], dtype=torch.long)
        loss = model(**inputs(arrays, "train_", step), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm)
        optimizer.step()
        schedule.step()
        losses.append(float(loss))
        done = step + 1
        if done % args.eval_every_steps == 0 or done == args.num_train_steps:
            evaluate(done)
    steps = sorted(int(key.rsplit("_", 1)[1]) for key in evaluated if key.startswith("dev_"))
    np.savez(args.output, losses=np.array(losses), eval_steps=np.array(steps), **evaluated)
    print(json.dumps({"steps": args.num_train_steps, "first_loss": losses[0],
                      "last_loss": losses[-1]}))


if __name__ == "__main__":
    main()
