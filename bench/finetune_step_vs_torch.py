"""One fine-tuning step of ours beside torch's, fed directly at a fixed length: where the time goes.

    python bench/finetune_step_vs_torch.py --hf_python=/path/to/hfenv/bin/python \
        [--seq_lengths=32,128] [--precisions=fp32,bf16] [--steps=30]

The L4 H256 BERT classifier of bench/finetune_vs_trainer.py (vocab 21128, 512 positions,
dropout 0.1), batch --batch_size, every sequence --seq tokens of random ids, no input
pipeline. Ours: finetune's classifier and the fine-tuning AdamW step
(pretrain.training.optimization) in one session fed numpy arrays; torch's, run under
--hf_python: transformers' BertForSequenceClassification with the Trainer's step at its
defaults: gradients clipped to norm 1, torch.optim.AdamW fused (the Trainer's default optimizer
on torch >= 2.8, `adamw_torch_fused`; the unfused one with --torch_optimizer=adamw_torch), bf16
through torch's CPU autocast. Each is timed over --steps steps after 5 warm-up steps:
the forward pass (`forward_ms`), forward and backward (`gradients_ms`), the whole training
step (`train_ms`); then one training step is traced and its op time summed by op type
(`op_ms`, the largest 12: TensorFlow's step stats, torch profiler's self CPU time; ops on
two threads overlap, so these sum past the step's wall time). One JSON line per
framework, precision and length; precisions and frameworks alternate.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

from finetune_vs_trainer import BERT_L4_H256  # this folder: the end-to-end benchmark's model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = {key: value for key, value in BERT_L4_H256.items() if key != "model_type"}
WARMUP = 5


def timed(run, steps):
    """Milliseconds per call of run() over `steps` calls, after WARMUP untimed ones."""
    for _ in range(WARMUP):
        run()
    started = time.perf_counter()
    for _ in range(steps):
        run()
    return round((time.perf_counter() - started) / steps * 1000, 1)


def largest(totals, count=12):
    return [[name, round(micros / 1000, 1)] for name, micros in totals.most_common(count)]


def ours(precision, seq, batch, steps):
    """The line of ours (this interpreter's TensorFlow)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, REPO)
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from finetune.tasks.classification import create_classifier  # pylint: disable=import-outside-toplevel
    from pretrain.models.bert.config import BertConfig  # pylint: disable=import-outside-toplevel
    from pretrain.training import mixed_precision, optimization  # pylint: disable=import-outside-toplevel
    tf.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        shape = [None, None]
        ids, mask, segments = (tf.placeholder(tf.int32, shape) for _ in range(3))
        labels = tf.placeholder(tf.int32, [None])
        loss, *_ = create_classifier(BertConfig(**SHAPE), True, ids, mask, segments, labels, 2,
                                     compute_type=mixed_precision.compute_dtype(precision))
        gradients = tf.gradients(loss, tf.trainable_variables())
        gradient_sum = tf.add_n([tf.reduce_sum(tf.cast(tf.convert_to_tensor(g), tf.float32))
                                 for g in gradients])
        train_op = optimization.create_optimizer(loss, 1e-4, 1000, 100)
        init = tf.global_variables_initializer()
    rng = np.random.RandomState(0)
    feed = {ids: rng.randint(100, 21000, (batch, seq)), mask: np.ones((batch, seq)),
            segments: np.zeros((batch, seq)), labels: rng.randint(0, 2, batch)}
    with tf.Session(graph=graph) as session:
        session.run(init)
        line = {name + "_ms": timed(lambda fetch=fetch: session.run(fetch, feed), steps)
                for name, fetch in (("forward", loss), ("gradients", gradient_sum),
                                    ("train", train_op))}
        metadata = tf.RunMetadata()
        session.run(train_op, feed, run_metadata=metadata,
                    options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    totals = collections.Counter()
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label
            op = label.split("=", 1)[1].strip().split("(")[0] if "=" in label else node.node_name
            totals[op] += node.op_end_rel_micros - node.op_start_rel_micros
    return dict(line, tensorflow=tf.__version__, op_ms=largest(totals))


def torch_side(precision, seq, batch, steps, torch_optimizer):
    """The line of torch (run under --hf_python)."""
    import torch  # pylint: disable=import-outside-toplevel,import-error
    import transformers  # pylint: disable=import-outside-toplevel,import-error
    from torch.profiler import ProfilerActivity, profile  # pylint: disable=import-outside-toplevel,import-error
    config = transformers.BertConfig(num_labels=2, **SHAPE)
    torch.manual_seed(1)
    model = transformers.BertForSequenceClassification(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01,
                                  fused=torch_optimizer == "adamw_torch_fused")
    ids = torch.randint(100, 21000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.long)
    labels = torch.randint(0, 2, (batch,))

    def loss():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            return model(input_ids=ids, attention_mask=mask, labels=labels).loss

    def gradients():
        loss().backward()
        model.zero_grad(set_to_none=True)

    def train():
        loss().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    line = {"forward_ms": timed(lambda: loss().item(), steps),
            "gradients_ms": timed(gradients, steps), "train_ms": timed(train, steps)}
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        train()
    totals = collections.Counter()
    for event in profiler.key_averages():
        if event.key.startswith("aten::"):
            totals[event.key] += event.self_cpu_time_total
    return dict(line, torch=torch.__version__, transformers=transformers.__version__,
                threads=torch.get_num_threads(), optimizer=torch_optimizer,
                op_ms=largest(totals))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hf_python", help="A Python with torch and transformers (outside "
                                            "the project); without it only ours is measured.")
    parser.add_argument("--seq_lengths", default="32,128")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--torch_optimizer", default="adamw_torch_fused",
                        choices=("adamw_torch_fused", "adamw_torch"))
    parser.add_argument("--side", choices=("ours", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "ours":  # one line of one framework, in a process of its own (see below)
        print(json.dumps(ours(args.precisions, int(args.seq_lengths), args.batch_size,
                              args.steps)))
        return
    if args.side == "torch":
        print(json.dumps(torch_side(args.precisions, int(args.seq_lengths), args.batch_size,
                                    args.steps, args.torch_optimizer)))
        return
    for seq in [int(value) for value in args.seq_lengths.split(",")]:
        for precision in args.precisions.split(","):
            common = {"seq": seq, "batch": args.batch_size, "precision": precision}
            sides = [("ours", sys.executable)] + ([("torch", args.hf_python)]
                                                  if args.hf_python else [])
            for framework, python in sides:
                command = [python, os.path.abspath(__file__), f"--side={framework}",
                           f"--precisions={precision}", f"--seq_lengths={seq}",
                           f"--batch_size={args.batch_size}", f"--steps={args.steps}",
                           f"--torch_optimizer={args.torch_optimizer}"]
                output = subprocess.run(command, cwd=REPO, check=True, capture_output=True,
                                        text=True).stdout
                print(json.dumps({"framework": framework, **common,
                                  **json.loads(output.strip().splitlines()[-1])}), flush=True)


if __name__ == "__main__":
    main()
