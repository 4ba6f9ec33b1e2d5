"""Forward-pass time of a BERT-base-sized encoder in float32 vs bfloat16 (and a bare matmul).

    python bench/modeling_precision_bench.py [--batch 8 --seq 128 --steps 5]

Prints one JSON line per measurement. bf16 only pays off on CPUs with native
bf16 matmul (AVX512_BF16 / AMX); the `cpu_flags` field records what this
machine has.
"""
import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from pretrain.models.bert import modeling  # noqa: E402

BASE = dict(vocab_size=21128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next(l for l in f if l.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return []
    return sorted(flags & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})


def time_fn(session, fetch, steps):
    session.run(fetch)  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        session.run(fetch)
    return (time.perf_counter() - start) / steps


def bench_encoder(dtype, args):
    with tf.Graph().as_default():
        ids = tf.constant(np.random.RandomState(0).randint(0, 21128, (args.batch, args.seq)),
                          tf.int32)
        config = modeling.BertConfig.from_dict(dict(BASE, num_hidden_layers=args.layers))
        model = modeling.BertModel(config, False, ids, compute_type=dtype)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            return time_fn(session, model.get_sequence_output().op, args.steps)


def bench_matmul(dtype, args):
    with tf.Graph().as_default():
        a = tf.Variable(tf.random.normal([args.batch * args.seq, 768]))
        b = tf.Variable(tf.random.normal([768, 3072]))
        product = tf.matmul(tf.cast(a, dtype), tf.cast(b, dtype))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            return time_fn(session, product.op, args.steps * 4)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    for kind, fn in (("matmul_4096x768x3072", bench_matmul), ("bert_base_forward", bench_encoder)):
        results = {name: fn(dtype, args) for name, dtype in
                   (("float32", tf.float32), ("bfloat16", tf.bfloat16))}
        print(json.dumps({"bench": kind, "batch": args.batch, "seq": args.seq,
                          "layers": args.layers, "seconds_float32": round(results["float32"], 4),
                          "seconds_bfloat16": round(results["bfloat16"], 4),
                          "bf16_speedup": round(results["float32"] / results["bfloat16"], 3),
                          "cpu_flags": cpu_flags(), "tf": tf.__version__}), flush=True)


if __name__ == "__main__":
    main()
