"""The training loops side by side: JSON lines with the pretraining step time of each.

    python bench/training_loop_bench.py               # every loop this TensorFlow has
    python bench/training_loop_bench.py --quick       # fewer steps
    python bench/training_loop_bench.py --models tiny,base --training_loops session

The step is pretraining's whole step as `pretrain.run_pretraining` builds it (the model
function of pretrain.training.pretraining_model_fn: encoder, masked LM over 21128 words,
sentence head, gradients, clipping, AdamW), run by `pretrain.training.strategy.
build_trainer` with each --training_loop: the Estimator and the session loop on TensorFlow
2.15, the session loop on 2.21. The input is one synthetic batch repeated (bench/
pretrain_bench.py's), so no step waits for data; checkpoints and summaries are off. A hook
stamps the end of every step: the graph build, initialisation and warm-up steps stay out
of the timed interval. Runs alternate between the loops `--repeats` times and each line
gives the median and the spread, so a busy moment of the machine shows instead of
deciding the comparison. Fine-tuning examples/s per loop: bench/finetune_bench.py.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pretrain import cpu_kernels  # noqa: E402
from pretrain.training import pretraining_model_fn  # noqa: E402
from pretrain.training import strategy as strategy_lib  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from finetune_bench import StepClock, seconds_per_step  # noqa: E402
from pretrain_bench import make_config, synthetic_batch  # noqa: E402

SEQ, PREDS, BATCH = 128, 20, 32
STEPS = {"tiny": (5, 40), "base": (1, 4)}
QUICK_STEPS = {"tiny": (3, 15), "base": (1, 2)}


def run_once(model, loop, warmup, steps, work_dir, seed=1):
    """Seconds per step of one fresh run of `loop`."""
    config = make_config(model)
    batch = synthetic_batch(BATCH, SEQ, PREDS, config.vocab_size, seed)
    total = warmup + steps
    model_fn = pretraining_model_fn.model_fn_builder(
        config, learning_rate=1e-4, num_train_steps=total, num_warmup_steps=1)

    def input_fn(params):
        del params
        return tf.data.Dataset.from_tensors(batch).repeat()

    settings = strategy_lib.make_run_config(
        "cpu", tempfile.mkdtemp(dir=work_dir), save_checkpoints_steps=None,
        save_summary_steps=None, log_step_count_steps=None, tf_random_seed=seed)
    trainer = strategy_lib.build_trainer("cpu", model_fn, settings, train_batch_size=BATCH,
                                         training_loop=loop)
    clock = StepClock()
    trainer.train(input_fn, max_steps=total, hooks=[clock])
    if len(clock.stamps) != total:
        raise RuntimeError(f"{loop}: {len(clock.stamps)} steps ran, not {total}")
    return seconds_per_step(clock.stamps, warmup)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tiny")
    loops = ",".join(strategy_lib.available_training_loops())
    parser.add_argument("--training_loops", default=loops)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    tf.get_logger().setLevel("ERROR")
    loops = args.training_loops.split(",")
    unknown = set(loops) - set(strategy_lib.available_training_loops())
    if unknown:
        parser.error(f"--training_loops: {sorted(unknown)} not available here; choose from "
                     f"{', '.join(strategy_lib.available_training_loops())}")
    table = QUICK_STEPS if args.quick else STEPS
    with tempfile.TemporaryDirectory(prefix="training_loop_bench_") as work_dir:
        for model in args.models.split(","):
            warmup, steps = table[model]
            seconds = {loop: [] for loop in loops}
            for _ in range(args.repeats):  # alternate: both loops see the same machine
                for loop in loops:
                    seconds[loop].append(run_once(model, loop, warmup, steps, work_dir))
            for loop in loops:
                median = statistics.median(seconds[loop])
                print(json.dumps({
                    "bench": "training_loop", "training_loop": loop,
                    "tensorflow": tf.__version__, "python": sys.version.split()[0],
                    "model": model, "batch": BATCH, "seq": SEQ, "steps": steps,
                    "repeats": args.repeats, "seconds_per_step": round(median, 4),
                    "min_seconds_per_step": round(min(seconds[loop]), 4),
                    "max_seconds_per_step": round(max(seconds[loop]), 4),
                    "examples_per_second": round(BATCH / median, 2),
                    "onednn": cpu_kernels.onednn_enabled(), "cpu_count": os.cpu_count(),
                    "at": time.strftime("%Y-%m-%dT%H:%M:%S")}), flush=True)
            if "estimator" in seconds and "session" in seconds:
                ratio = (statistics.median(seconds["session"])
                         / statistics.median(seconds["estimator"]))
                print(json.dumps({"bench": "training_loop", "model": model,
                                  "session_over_estimator_step_time": round(ratio, 3)}),
                      flush=True)


if __name__ == "__main__":
    main()
