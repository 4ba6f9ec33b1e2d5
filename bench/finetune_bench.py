"""Fine-tuning throughput benchmark: JSON lines with training and prediction examples/s.

    python bench/finetune_bench.py            # classification + NER, tiny + BERT-base shape
    python bench/finetune_bench.py --quick    # the tiny shape only, fewer steps (under a minute)
    python bench/finetune_bench.py --quick --shapes tiny,base --tasks ner
    python bench/finetune_bench.py --training_loops session    # one loop only

Each (training loop, task, shape, phase) is one line; by default every training loop this
TensorFlow has (pretrain.training.strategy.build_trainer: the Estimator and the session
loop on 2.15, the session loop on 2.21), side by side in one run. The model is the task
layer's own: the model function of `finetune.model_fn.model_fn_builder` (encoder + the task's
head, AdamW with warmup and decay; `finetune.tasks.get_task("classification")`
or `get_task("ner")`), fed by `finetune.features.input_fn_builder` from a
TFRecord file of synthetic random records written with
`finetune.features.serialize`, exactly as finetune.run_finetune feeds it. The
model starts from random initialisation (the step costs the same as from a
checkpoint).

Timing: `train` runs warm-up steps then timed steps in one `train` call, and a hook
stamps the end of every step, so the graph build, the variable initialisation and the
warm-up stay out of the timed interval; `predict` does the same per batch of `predict`
(yield_single_examples=False).
Checkpoints and summaries are off, so no step pays for writing them (prediction
therefore runs on freshly initialised weights, which costs the same).

CPU kernels: importing `pretrain` defaults TensorFlow to its oneDNN kernels
(pretrain/cpu_kernels.py); every line says which ran (`onednn`).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# `pretrain` before TensorFlow: its CPU kernel default must apply before TF loads.
from pretrain import cpu_kernels  # noqa: E402
from pretrain.models.bert import modeling  # noqa: E402

import tensorflow.compat.v1 as tf  # noqa: E402
from finetune import features as records  # noqa: E402
from finetune import tasks  # noqa: E402
from finetune.model_fn import model_fn_builder  # noqa: E402
from pretrain.training import strategy as strategy_lib  # noqa: E402

SHAPES = {  # name -> (encoder, max_seq_length, batch)
    "tiny": (dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=512), 64, 32),
    "base": (dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                  intermediate_size=3072), 128, 8),
}
NUM_LABELS = {"classification": 2, "ner": 9}  # NER: BIO tags of 4 entity types + O
# (warm-up steps, timed steps) per shape and phase; --quick takes the second table.
# The default run takes about 3 minutes on 2 quiet cores (the base shape: ~1 minute a phase,
# most of it building the graph and the warm-up step).
STEPS = {"tiny": {"train": (5, 40), "predict": (3, 30)},
         "base": {"train": (1, 2), "predict": (1, 3)}}
QUICK_STEPS = {"tiny": {"train": (2, 8), "predict": (2, 6)},
               "base": {"train": (1, 1), "predict": (1, 1)}}
VOCAB_SIZE = 21128  # Google's Chinese vocab
FIRST_WORD_ID = 106  # past [PAD], [unused*], [UNK], [CLS], [SEP], [MASK] of that vocab


def make_config(shape):
    config = dict(vocab_size=VOCAB_SIZE, hidden_act="gelu", hidden_dropout_prob=0.1,
                  attention_probs_dropout_prob=0.1, max_position_embeddings=512,
                  type_vocab_size=2, initializer_range=0.02, model_type="bert")
    config.update(SHAPES[shape][0])
    return modeling.BertConfig.from_dict(config)


def synthetic_record(task, seq, rng):
    """One record of the task's schema: random tokens filling [CLS] ... [SEP] to a random
    length, the rest padding; a random label (classification) or random tags (NER)."""
    length = int(rng.randint(seq // 2, seq + 1))
    ids = [101] + list(rng.randint(FIRST_WORD_ID, VOCAB_SIZE, size=length - 2)) + [102]
    pad = [0] * (seq - length)
    record = {"input_ids": ids + pad, "input_mask": [1] * length + pad}
    num_labels = NUM_LABELS[task.name]
    if task.record_kind == "token":
        record["segment_ids"] = [0] * seq
        tags = list(rng.randint(0, num_labels, size=seq))
        weights = [0.0] + [1.0] * (length - 2) + [0.0] * (seq - length + 1)
        record.update(label_ids=[int(tag) if w else 0 for tag, w in zip(tags, weights)],
                      label_weights=weights)
    else:  # a pair: [CLS] a [SEP] b [SEP]
        middle = length // 2
        record["segment_ids"] = [0] * middle + [1] * (length - middle) + pad
        record["label_ids"] = [int(rng.randint(0, num_labels))]
    return record


# Every batch padded to the shape's length: the lines are the step cost of that shape
# (bench/finetune_vs_trainer.py measures batches padded to what they hold).
AT_SHAPE = records.Batching(pad_to_max_length=True)


def write_records(path, task, seq, count, seed=1):
    spec = records.record_spec(task.record_kind, seq)
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(count):
            writer.write(records.serialize(synthetic_record(task, seq, rng), spec))
    return spec


class StepClock(tf.train.SessionRunHook):
    """Stamps the end of every training step."""

    def __init__(self):
        self.stamps = []

    def after_run(self, run_context, run_values):
        self.stamps.append(time.perf_counter())


def seconds_per_step(stamps, warmup):
    """Mean seconds of the steps after the warm-up, from their end stamps."""
    timed = len(stamps) - warmup
    if timed < 1 or warmup < 1:
        raise ValueError(f"need at least one warm-up and one timed step, got {len(stamps)}")
    return (stamps[-1] - stamps[warmup - 1]) / timed


def make_trainer(task, config, model_dir, num_train_steps, training_loop):
    model_fn = model_fn_builder(task, config, NUM_LABELS[task.name], init_checkpoint=None,
                                learning_rate=5e-5, num_train_steps=num_train_steps,
                                num_warmup_steps=max(1, num_train_steps // 10))
    settings = strategy_lib.make_run_config(
        "cpu", model_dir, save_checkpoints_steps=None, save_summary_steps=None,
        log_step_count_steps=None, tf_random_seed=1)
    return strategy_lib.build_trainer("cpu", model_fn, settings, training_loop=training_loop)


def measure(task_name, shape, phase, warmup, steps, work_dir, training_loop):
    """One JSON-able line: examples/s of `phase` ("train" or "predict")."""
    task = tasks.get_task(task_name)
    config = make_config(shape)
    _, seq, batch = SHAPES[shape]
    total = warmup + steps
    record_path = os.path.join(work_dir, f"{task_name}-{shape}-{phase}.tfrecord")
    # Training repeats the file; prediction reads it once, batch by batch.
    spec = write_records(record_path, task, seq, batch * (total if phase == "predict" else 4))
    model_dir = os.path.join(work_dir, f"model-{training_loop}-{task_name}-{shape}-{phase}")
    estimator = make_trainer(task, config, model_dir, total, training_loop)
    started = time.perf_counter()
    if phase == "train":
        clock = StepClock()
        input_fn = records.input_fn_builder(record_path, spec, batch, is_training=True, seed=1,
                                            batching=AT_SHAPE)
        estimator.train(input_fn, max_steps=total, hooks=[clock])
        stamps = clock.stamps
    else:
        input_fn = records.input_fn_builder(record_path, spec, batch, is_training=False,
                                            batching=AT_SHAPE)
        stamps = []
        for _ in estimator.predict(input_fn, yield_single_examples=False):
            stamps.append(time.perf_counter())
    seconds = seconds_per_step(stamps, warmup)
    if len(stamps) != total:
        raise RuntimeError(f"{task_name} {shape} {phase}: {len(stamps)} steps ran, not {total}")
    return {"bench": "finetune", "training_loop": training_loop, "tensorflow": tf.__version__,
            "task": task_name, "shape": shape, "phase": phase,
            "model": f"bert L{config.num_hidden_layers} H{config.hidden_size}",
            "batch": batch, "seq": seq, "steps": steps, "warmup_steps": warmup,
            "examples_per_second": round(batch / seconds, 2),
            "tokens_per_second": round(batch * seq / seconds, 1),
            "seconds_per_step": round(seconds, 4),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "cpu_count": os.cpu_count(), "cores_available": len(os.sched_getaffinity(0)),
            "onednn": cpu_kernels.onednn_enabled()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="classification,ner")
    parser.add_argument("--shapes", default=None,
                        help="comma-separated: tiny, base (default: both; with --quick: tiny)")
    parser.add_argument("--phases", default="train,predict")
    loops = ",".join(strategy_lib.available_training_loops())
    parser.add_argument("--training_loops", default=loops,
                        help="comma-separated: estimator (TensorFlow <= 2.15), session")
    parser.add_argument("--quick", action="store_true",
                        help="far fewer steps, and the tiny shape only unless --shapes says")
    args = parser.parse_args(argv)
    if args.shapes is None:
        args.shapes = "tiny" if args.quick else "tiny,base"
    tf.get_logger().setLevel("ERROR")
    table = QUICK_STEPS if args.quick else STEPS
    choices = {"tasks": NUM_LABELS, "shapes": SHAPES, "phases": ("train", "predict"),
               "training_loops": strategy_lib.available_training_loops()}
    for name, known in choices.items():
        unknown = set(getattr(args, name).split(",")) - set(known)
        if unknown:
            parser.error(f"--{name}: unknown {sorted(unknown)}; choose from {', '.join(known)}")
    with tempfile.TemporaryDirectory(prefix="finetune_bench_") as work_dir:
        for shape in args.shapes.split(","):
            for task_name in args.tasks.split(","):
                for phase in args.phases.split(","):
                    for loop in args.training_loops.split(","):  # side by side
                        warmup, steps = table[shape][phase]
                        line = measure(task_name, shape, phase, warmup, steps, work_dir, loop)
                        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
