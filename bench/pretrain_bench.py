"""Pretraining throughput benchmark: JSON lines with examples/s, tokens/s and MFU.

    python bench/pretrain_bench.py            # tiny + BERT-base + ELECTRA small/base, fp32 + bf16
    python bench/pretrain_bench.py --quick    # fewer steps
    python bench/pretrain_bench.py --models tiny,electra_small --precisions fp32

Each line measures the full training step of pretraining (encoder, MLM over
the 21128-word vocab, sentence head, gradients, clipping, AdamW update) as
`pretrain.run_pretraining` builds it, fed from an in-memory tf.data batch (batch
32, sequence 128, 20 predictions). ELECTRA's step (`electra_small`:
common/model_configs/electra_zh_small.json; `electra_base`: google-research/electra's base shape,
generator a third of its width) is the generator's MLM over the same predictions,
the sampling, and the discriminator over every token, both networks updated; its
FLOPs count both networks and both heads (pretrain.models.flops).
MFU = model FLOPs per second / peak matmul
FLOP/s, where the peak is MEASURED in this process on this device and
precision (large square matmuls), before the runs and again after each run;
the best value seen so far is used, so a busy machine during the peak
measurement cannot inflate MFU. A `loss_curve` line compares the bf16 and
fp32 losses of the same model, data and initial weights.

CPU kernels: importing `pretrain` defaults TensorFlow to its oneDNN kernels
(pretrain/cpu_kernels.py); every line says which ran (`onednn`). Run with
TF_ENABLE_ONEDNN_OPTS=0 to measure TensorFlow's Eigen kernels instead.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# `pretrain` before TensorFlow: its CPU kernel default must apply before TF loads.
from pretrain import cpu_kernels  # noqa: E402
from pretrain.models import registry  # noqa: E402
from pretrain.training import mixed_precision, optimization  # noqa: E402

import tensorflow.compat.v1 as tf  # noqa: E402
from pretrain.training.pretraining_model_fn import pretraining_losses  # noqa: E402

tf.disable_eager_execution()

MODELS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=512),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
}


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ELECTRA shapes: a config file, or the fields over make_config's common ones.
ELECTRA_MODELS = {
    "electra_small": os.path.join(REPO, "common", "model_configs", "electra_zh_small.json"),
    "electra_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, embedding_size=768,
                         generator_hidden_size=1.0 / 3, model_type="electra"),
}


def make_config(name, dropout=0.1):
    """The config of a MODELS or ELECTRA_MODELS name (BertConfig or ElectraConfig)."""
    cfg = dict(vocab_size=21128, hidden_act="gelu", hidden_dropout_prob=dropout,
               attention_probs_dropout_prob=dropout, max_position_embeddings=512,
               type_vocab_size=2, initializer_range=0.02, model_type="bert")
    shape = ELECTRA_MODELS.get(name) or MODELS[name]
    if isinstance(shape, str):
        with open(shape, encoding="utf-8") as f:
            shape = json.load(f)
    cfg.update(shape, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return registry.config_from_dict(cfg)


def train_flops_per_example(config, seq, preds):
    """Matmul FLOPs of forward + backward for one example, as the family counts them
    (pretrain.models.flops); BERT's with the sentence head the bench trains."""
    family = registry.family_of(config)
    return family.training_flops_per_example(config, seq, preds,
                                             sentence_head=family.sentence_and_span_heads)


def synthetic_batch(batch, seq, preds, vocab, seed):
    rng = np.random.RandomState(seed)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), preds, replace=False)
                                  for _ in range(batch)]), axis=1)
    return {
        "input_ids": rng.randint(106, vocab, size=(batch, seq)).astype(np.int32),
        "input_mask": np.ones((batch, seq), np.int32),
        "segment_ids": np.concatenate([np.zeros((batch, seq // 2), np.int32),
                                       np.ones((batch, seq - seq // 2), np.int32)], 1),
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": rng.randint(106, vocab, size=(batch, preds)).astype(np.int32),
        "masked_lm_weights": np.ones((batch, preds), np.float32),
        "next_sentence_labels": rng.randint(0, 2, size=(batch, 1)).astype(np.int32),
    }


def measure_peak_matmul(precision, n=2048, seconds=3.0):
    """Best FLOP/s of an n x n x n matmul chain in this process (fp32 or bf16)."""
    dtype = tf.bfloat16 if precision == "bf16" else tf.float32
    with tf.Graph().as_default():
        a = tf.Variable(tf.random.normal([n, n]), dtype=tf.float32)
        b = tf.Variable(tf.random.normal([n, n]), dtype=tf.float32)
        a_c, b_c = tf.cast(a, dtype), tf.cast(b, dtype)
        # 4 independent matmuls per run amortise the session overhead.
        outs = [tf.reduce_sum(tf.cast(tf.matmul(a_c + tf.cast(k, dtype), b_c), tf.float32))
                for k in range(4)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(outs)
            best, start = 0.0, time.time()
            while time.time() - start < seconds:
                t0 = time.time()
                sess.run(outs)
                best = max(best, 4 * 2 * n ** 3 / (time.time() - t0))
    return best


def build_training(config, precision, batch, seq, preds, seed=0, use_xla=False):
    """Graph and session of one training step; returns (session, [loss, train_op], tvars).

    The caller closes the session.
    """
    graph = tf.Graph()
    with graph.as_default():
        features = repeated_batch_features(batch, seq, preds, config.vocab_size, seed)
        sentence_head = registry.family_of(config).sentence_and_span_heads
        outputs = pretraining_losses(config, features, True, sentence_head,
                                     compute_type=mixed_precision.compute_dtype(precision))
        train = optimization.build_train_op(outputs["loss"], 1e-4, 10000, 100)
        tvars = tf.trainable_variables()
        session = initialized_session(graph, use_xla)
    return session, [outputs["loss"], train.train_op], tvars


def repeated_batch_features(batch, seq, preds, vocab, seed):
    """In the default graph: seeds it and returns the features of one synthetic batch, repeated."""
    tf.set_random_seed(seed)
    data = synthetic_batch(batch, seq, preds, vocab, seed)
    return tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(data).repeat()).get_next()


def initialized_session(graph, use_xla=False):
    """A session on `graph` (the bench's session config) with its variables initialized."""
    session = tf.Session(graph=graph, config=mixed_precision.session_config(use_xla))
    with graph.as_default():
        session.run(tf.global_variables_initializer())
    return session


def run_training(config, precision, batch, seq, preds, steps, warmup_steps, seed=0,
                 use_xla=False, init_values=None):
    """Trains `steps` timed steps; returns (seconds per step, losses, initial weights)."""
    sess, fetches, tvars = build_training(config, precision, batch, seq, preds, seed, use_xla)
    with sess, sess.graph.as_default():
        if init_values is not None:
            for var, value in zip(tvars, init_values):
                var.load(value, sess)
        initial = sess.run(tvars) if init_values is None else init_values
        losses = []
        for _ in range(warmup_steps):
            losses.append(float(sess.run(fetches)[0]))
        t0 = time.time()
        for _ in range(steps):
            losses.append(float(sess.run(fetches)[0]))
        elapsed = time.time() - t0
    return elapsed / max(steps, 1), losses, initial


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tiny,base,electra_small,electra_base",
                        help="of %s" % ", ".join(list(MODELS) + list(ELECTRA_MODELS)))
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--preds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="fewer timed steps")
    parser.add_argument("--use_xla", action="store_true")
    parser.add_argument("--curve_steps", type=int, default=30,
                        help="steps of the bf16-vs-fp32 loss comparison (0: skip)")
    parser.add_argument("--curve_model", default="tiny",
                        choices=sorted(MODELS) + sorted(ELECTRA_MODELS),
                        help="model of the loss comparison (base: slow, ~20 s/step fp32)")
    args = parser.parse_args(argv)
    precisions = args.precisions.split(",")
    peaks = {p: measure_peak_matmul(p, seconds=1.5 if args.quick else 3.0) for p in precisions}
    for p, peak in peaks.items():
        print(json.dumps({"bench": "peak_matmul", "precision": p, "gflops": round(peak / 1e9, 1),
                          "cpu_count": os.cpu_count(),
                          "onednn": cpu_kernels.onednn_enabled()}), flush=True)
    for name in args.models.split(","):
        config = make_config(name)
        flops = train_flops_per_example(config, args.seq, args.preds)
        for precision in precisions:
            if name in ("base", "electra_base"):
                steps, warm = (2, 1) if args.quick else (5, 2)
            elif name == "electra_small":
                steps, warm = (4, 2) if args.quick else (20, 3)
            else:
                steps, warm = (10, 3) if args.quick else (40, 5)
            sec, losses, _ = run_training(config, precision, args.batch_size, args.seq,
                                          args.preds, steps, warm, use_xla=args.use_xla)
            # Re-measure right after the run: other load on the machine changes the
            # attainable peak, and the best observed peak is the honest denominator.
            peaks[precision] = max(peaks[precision], measure_peak_matmul(precision, seconds=1.0))
            ex_s = args.batch_size / sec
            print(json.dumps({
                "bench": "pretrain_step", "model": name,
                "model_type": registry.family_of(config).model_type, "precision": precision,
                "batch": args.batch_size, "seq": args.seq, "preds": args.preds,
                "xla": args.use_xla, "onednn": cpu_kernels.onednn_enabled(),
                "timed_steps": steps,
                "examples_per_sec": round(ex_s, 2), "tokens_per_sec": round(ex_s * args.seq, 1),
                "train_gflops_per_example": round(flops / 1e9, 2),
                "model_tflops_per_sec": round(ex_s * flops / 1e12, 4),
                "mfu": round(ex_s * flops / peaks[precision], 3),
                "peak_gflops_measured": round(peaks[precision] / 1e9, 1),
                "final_loss": round(losses[-1], 4)}), flush=True)
    if args.curve_steps and set(precisions) >= {"fp32", "bf16"}:
        config = make_config(args.curve_model, dropout=0.0)  # same weights + data
        _, fp32_losses, init = run_training(config, "fp32", args.batch_size, args.seq,
                                            args.preds, args.curve_steps, 0, seed=1)
        _, bf16_losses, _ = run_training(config, "bf16", args.batch_size, args.seq, args.preds,
                                         args.curve_steps, 0, seed=1, init_values=init)
        diff = np.abs(np.array(fp32_losses) - np.array(bf16_losses))
        print(json.dumps({"bench": "loss_curve", "model": args.curve_model,
                          "steps": args.curve_steps,
                          "fp32_first_last": [round(fp32_losses[0], 4), round(fp32_losses[-1], 4)],
                          "bf16_first_last": [round(bf16_losses[0], 4), round(bf16_losses[-1], 4)],
                          "max_abs_diff": round(float(diff.max()), 4),
                          "mean_abs_diff": round(float(diff.mean()), 4)}), flush=True)


if __name__ == "__main__":
    main()
