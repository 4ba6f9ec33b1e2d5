"""Same-machine baseline: google-research/bert's own scripts, as JSON lines.

    python bench/google_baseline.py                          # data_gen + pretrain
    python bench/google_baseline.py --bench=data_gen [EXTRA_CORPUS.txt ...] [--max_mb=0.2]
        [--paired --rounds=3]
    python bench/google_baseline.py --bench=pretrain --models tiny,base [--quick]
        [--steps N --warmup N] [--onednn=tf_default|on|off] [--paired]

Google's code is never copied into this repo: at run time the official PyPI
wheel `bert-tensorflow==1.0.4` is fetched with `pip download` into
`.cache/google_bert/` (git-ignored), its sha256 checked and unzipped there, and
its modules are run unmodified through the shim below.

* google_data_gen: `bert/create_pretraining_data.py` as a script in a
  subprocess on ../shared/data/corpus/clue_small_sample.txt (then any corpus
  given) with Google's Chinese vocab, seq 128, 20 predictions, dupe_factor 5,
  masked_lm_prob 0.15, seed 12345 (Google's default per-character masking).
  Records wall seconds of the whole subprocess (TF import included), input MB
  and MB/s, instances (counted from the TFRecord framing), peak RSS (ru_maxrss
  from wait4 on the child) and CPU seconds, with bench/data_gen_bench.py's
  field names; record 0 is parsed with tf.io.parse_single_example.
* google_pretrain: Google's `run_pretraining.model_fn_builder(...)` model_fn
  called in TRAIN mode as TPUEstimator(use_tpu=False) would (their BertModel,
  MLM + NSP losses, create_optimizer: warmup/decay, AdamWeightDecayOptimizer,
  clipping at global norm 1.0); its train_op runs in a tf.compat.v1 session fed
  by a constant in-memory tf.data batch, as in bench/pretrain_bench.py (same
  batch, seeds, learning-rate schedule, session config, untimed warmup steps,
  FLOP formula and measured fp32 peak matmul, re-measured after each run, best
  kept). fp32 only.
  - CPU kernels (`--onednn`): `tf_default` (the default) runs Google's step as
    its users get it, with TensorFlow's own choice (on AVX2-only CPUs: Eigen,
    not oneDNN; TensorFlow loads here before our `pretrain` helpers, whose
    oneDNN default therefore does not apply); `on` / `off` force one of them.
    Each line says which ran.
  - `--paired` with data_gen (bench `paired_data_gen`): Google's script and
    ours (bench/data_gen_bench.py: bert mode, 2 workers, each recipe of
    `--maskings=wwm,span,...`; macbert needs `--similar_words_file`) run in
    turn `--rounds` times on the same corpus; prints each run and the ratios.
  - `--paired` (bench `paired_pretrain`): ours (bench/pretrain_bench.py's
    graph) and Google's are built in this one process, with the same kernels,
    and their steps alternate one by one, so a drift in machine speed hits
    both alike; prints both rates and ours / Google.

Shim: wheel 1.0.4 is Google's TF-1.15 edition; it already imports
`tensorflow.compat.v1 as tf` and uses tf.estimator.tpu, tf.tpu,
tf.distribute.cluster_resolver and tf.data.experimental, all in TF 2.15's
compat.v1, so `sys.modules["tensorflow"]` is not replaced (that would give TF's
own lazily imported modules the v1 API). The one contrib use left is
modeling.py's `from tensorflow.contrib import layers` (layer_norm): the shim
registers `tensorflow.contrib[.layers]` with a re-implementation of
tf.contrib.layers.layer_norm (beta=0 and gamma=1 under scope `LayerNorm`,
moments from begin_norm_axis on, variance epsilon 1e-12; 1e-3 in fp16). Eager
execution is disabled as in TF 1.x; v2 behaviour (resource variables) is kept,
as in pretrain_bench.py. Offline, each bench prints {"bench", "skipped"}.
"""
import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import types
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
DEFAULT_CORPUS = os.path.join(SHARED, "corpus", "clue_small_sample.txt")
VOCAB = os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt")
CACHE = os.path.join(REPO, ".cache", "google_bert")
PKG_DIR = os.path.join(CACHE, "pkg")  # unzipped wheel: PKG_DIR/bert/*.py
WHEEL_SPEC = "bert-tensorflow==1.0.4"
WHEEL_NAME = "bert_tensorflow-1.0.4-py2.py3-none-any.whl"
WHEEL_SHA256 = "f880680a03fbf637c217443b7d3d8969d0b3aef4822b4ea13c2a124498dd21a0"
CHILD_FLAG = "--_run_google_module"
SEQ, PREDS = 128, 20
# (timed, warmup) steps of pretrain_bench.py: STEPS[is_base][quick]; --steps/--warmup override.
STEPS = {True: {True: (2, 1), False: (5, 2)}, False: {True: (10, 3), False: (40, 5)}}


def emit(record):
    print(json.dumps(record, sort_keys=True), flush=True)


def fetch_google_bert():
    """Returns None when Google's package is ready in PKG_DIR, else why not."""
    if os.path.exists(os.path.join(PKG_DIR, "bert", "run_pretraining.py")):
        return None
    wheel = os.path.join(CACHE, WHEEL_NAME)
    if not os.path.exists(wheel):
        os.makedirs(CACHE, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "1",
                   "--timeout", "30", "-d", CACHE, WHEEL_SPEC]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0 or not os.path.exists(wheel):
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
            return f"pip download {WHEEL_SPEC} failed (offline?): {tail[0][:300]}"
    with open(wheel, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    if digest != WHEEL_SHA256:
        raise RuntimeError(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(PKG_DIR)
    return None


def _layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None, reuse=None,
                trainable=True):
    """Stand-in for tf.contrib.layers.layer_norm (the arguments BERT uses)."""
    import tensorflow.compat.v1 as tf
    rank = inputs.shape.ndims
    norm_axes = list(range(begin_norm_axis % rank, rank))
    params_shape = inputs.shape[begin_params_axis % rank:]
    collections = [tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.MODEL_VARIABLES]
    with tf.variable_scope(scope, default_name="LayerNorm", values=[inputs], reuse=reuse):
        beta = tf.get_variable("beta", params_shape, inputs.dtype, tf.zeros_initializer(),
                               trainable=trainable, collections=collections)
        gamma = tf.get_variable("gamma", params_shape, inputs.dtype, tf.ones_initializer(),
                                trainable=trainable, collections=collections)
        mean, variance = tf.nn.moments(inputs, norm_axes, keep_dims=True)
        epsilon = 1e-3 if inputs.dtype == tf.float16 else 1e-12
        outputs = tf.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                            variance_epsilon=epsilon)
        outputs.set_shape(inputs.shape)
        return outputs


def install_shim():
    """Makes Google's unmodified TF-1 code importable and runnable on TF 2.15."""
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.ModuleType("tensorflow.contrib.layers")
    contrib.layers.layer_norm = _layer_norm
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.layers"] = contrib.layers
    if PKG_DIR not in sys.path:
        sys.path.insert(0, PKG_DIR)


def run_google_module(module, argv):
    """Child process: runs a Google script as __main__ under the shim."""
    import runpy
    install_shim()
    sys.argv = [module] + argv
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def count_tfrecords(path):
    """Number of records, read from the TFRecord framing (length, crc, data, crc)."""
    count, size = 0, os.path.getsize(path)
    with open(path, "rb") as handle:
        while handle.tell() < size:
            header = handle.read(12)
            if len(header) < 12:
                raise ValueError(f"{path}: truncated record header")
            (length,) = struct.unpack("<Q", header[:8])
            handle.seek(length + 4, os.SEEK_CUR)
            count += 1
        end = handle.tell()
    if end != size:
        raise ValueError(f"{path}: truncated last record")
    return count


def parse_first_record(path):
    """Parses record 0 with the feature spec run_pretraining reads; returns shapes."""
    import tensorflow.compat.v1 as tf
    ints = lambda n: tf.io.FixedLenFeature([n], tf.int64)  # noqa: E731
    spec = {"input_ids": ints(SEQ), "input_mask": ints(SEQ), "segment_ids": ints(SEQ),
            "masked_lm_positions": ints(PREDS), "masked_lm_ids": ints(PREDS),
            "masked_lm_weights": tf.io.FixedLenFeature([PREDS], tf.float32),
            "next_sentence_labels": ints(1)}
    with tf.Graph().as_default():
        record = tf.data.make_one_shot_iterator(tf.data.TFRecordDataset(path).take(1)).get_next()
        parsed = tf.io.parse_single_example(record, spec)
        with tf.Session() as sess:
            values = sess.run(parsed)
    shapes = {name: list(value.shape) for name, value in sorted(values.items())}
    return shapes, int(values["masked_lm_weights"].sum())


def truncate_corpus(corpus, max_mb, out_dir):
    """First max_mb MB of corpus, cut at a line end (for quick runs)."""
    with open(corpus, "rb") as handle:
        data = handle.read(int(max_mb * 1e6))
    path = os.path.join(out_dir, f"head_{max_mb}mb_" + os.path.basename(corpus))
    with open(path, "wb") as handle:
        handle.write(data[:data.rfind(b"\n") + 1] or data)
    return path


def google_data_gen(corpus, out_dir, max_mb=None):
    source = truncate_corpus(corpus, max_mb, out_dir) if max_mb else corpus
    output = os.path.join(out_dir, "google.tfrecord")
    command = [sys.executable, os.path.abspath(__file__), CHILD_FLAG,
               "bert.create_pretraining_data", f"--input_file={source}",
               f"--output_file={output}", f"--vocab_file={VOCAB}", "--max_seq_length=128",
               "--max_predictions_per_seq=20", "--dupe_factor=5", "--masked_lm_prob=0.15",
               "--random_seed=12345"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with tempfile.TemporaryFile(mode="w+") as log:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=out_dir, stdout=log, stderr=subprocess.STDOUT,
                                   env=env, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        if process.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed:\n{log.read()[-4000:]}")
    input_mb = os.path.getsize(source) / 1e6
    instances = count_tfrecords(output)
    shapes, masked_in_first = parse_first_record(output)
    os.remove(output)
    return {"bench": "google_data_gen", "corpus": corpus, "max_mb": max_mb,
            "input_mb": round(input_mb, 3), "seconds": round(seconds, 2),
            "input_mb_per_s": round(input_mb / seconds, 4), "instances": instances,
            "instances_per_s": round(instances / seconds, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "first_record_shapes": shapes, "first_record_masked": masked_in_first,
            "flags": "seq 128, 20 predictions, dupe_factor 5, masked_lm_prob 0.15, "
                     "seed 12345, Google default (per-character) masking"}


def bench_data_gen(args):
    if not os.path.exists(VOCAB):
        emit({"bench": "google_data_gen", "skipped": f"Google vocab {VOCAB} not present"})
        return
    corpora = list(args.corpora)
    if os.path.exists(DEFAULT_CORPUS):
        corpora.insert(0, DEFAULT_CORPUS)
    else:
        emit({"bench": "google_data_gen", "skipped": f"{DEFAULT_CORPUS} not present"})
    for corpus in corpora:
        if not os.path.exists(corpus):
            emit({"bench": "google_data_gen", "skipped": f"{corpus} not present"})
            continue
        with tempfile.TemporaryDirectory(prefix="google_data_gen_") as out_dir:
            if args.paired:
                for summary in paired_data_gen(corpus, out_dir, args.max_mb, args.rounds,
                                               args.maskings.split(","), args.similar_words_file):
                    emit(summary)
            else:
                emit(google_data_gen(corpus, out_dir, args.max_mb))


def paired_data_gen(corpus, out_dir, max_mb, rounds, maskings=("wwm",), similar_words=None):
    """Google's script, then ours (bert mode, 2 workers) with each --masking recipe, in turn
    `rounds` times; one summary line per recipe (its ratios to the Google run of its round)."""
    import data_gen_bench  # pylint: disable=import-outside-toplevel
    source = truncate_corpus(corpus, max_mb, out_dir) if max_mb else corpus
    google_rates = []
    ours = {masking: {"rates": [], "ratios": []} for masking in maskings}
    for _ in range(rounds):
        google = google_data_gen(source, out_dir)
        emit(google)
        google_rates.append(google["input_mb_per_s"])
        for masking in maskings:
            record = data_gen_bench.run_once(
                source, "bert", 2, out_dir,
                data_gen_bench.masking_flags(masking, similar_words))
            emit(record)
            ours[masking]["rates"].append(record["input_mb_per_s"])
            ours[masking]["ratios"].append(
                round(record["input_mb_per_s"] / google["input_mb_per_s"], 2))
    return [{"bench": "paired_data_gen", "corpus": corpus, "max_mb": max_mb, "rounds": rounds,
             "masking": masking, "google_mb_per_s": google_rates,
             "ours_mb_per_s": ours[masking]["rates"], "ours_over_google": ours[masking]["ratios"],
             "median_ratio": sorted(ours[masking]["ratios"])[rounds // 2],
             "ours": f"mode bert, --masking={masking} over jieba words, 2 workers",
             "google": "bert/create_pretraining_data.py, per-character masking, 1 process"}
            for masking in maskings]


def build_google_step(name, batch, seed=0):
    """Session and [loss, train_op] of Google's model_fn train_op; also its FLOPs/example."""
    import tensorflow.compat.v1 as tf
    import pretrain_bench as ours
    from bert import modeling, run_pretraining
    config = modeling.BertConfig.from_dict(dict(
        vocab_size=21128, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
        initializer_range=0.02, **ours.MODELS[name]))
    graph = tf.Graph()
    with graph.as_default():
        features = ours.repeated_batch_features(batch, SEQ, PREDS, config.vocab_size, seed)
        # Same learning-rate schedule as pretrain_bench's build_train_op(loss, 1e-4, 10000, 100).
        model_fn = run_pretraining.model_fn_builder(
            bert_config=config, init_checkpoint=None, learning_rate=1e-4,
            num_train_steps=10000, num_warmup_steps=100, use_tpu=False,
            use_one_hot_embeddings=False)
        spec = model_fn(features, None, tf.estimator.ModeKeys.TRAIN, {"batch_size": batch})
        session = ours.initialized_session(graph)
    return session, [spec.loss, spec.train_op], ours.train_flops_per_example(config, SEQ, PREDS)


def timed_steps(session, fetches, steps, warmup):
    """Runs warmup then `steps` timed steps; returns (seconds, last loss)."""
    for _ in range(warmup):
        session.run(fetches)
    loss, started = float("nan"), time.time()
    for _ in range(steps):
        loss = session.run(fetches)[0]
    return time.time() - started, float(loss)


def apply_onednn_choice(choice):
    """Sets TF_ENABLE_ONEDNN_OPTS for `on` / `off`; must run before TensorFlow loads.

    `tf_default` leaves the environment as the user has it. TensorFlow is then
    loaded by `install_shim`, before our `pretrain` package, whose oneDNN
    default therefore does not apply.
    """
    if "tensorflow" in sys.modules:
        raise RuntimeError("--onednn must be applied before TensorFlow is imported")
    if choice != "tf_default":
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if choice == "on" else "0"


def bench_pretrain(args):
    install_shim()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pretrain_bench as ours
    from pretrain import cpu_kernels
    peak = ours.measure_peak_matmul("fp32", seconds=1.5 if args.quick else 3.0)
    for name in args.models.split(","):
        steps, warmup = STEPS[name == "base"][args.quick]
        steps = steps if args.steps is None else args.steps
        warmup = warmup if args.warmup is None else args.warmup
        session, fetches, flops = build_google_step(name, args.batch_size)
        with session:
            seconds, loss = timed_steps(session, fetches, steps, warmup)
        peak = max(peak, ours.measure_peak_matmul("fp32", seconds=1.0))
        examples_per_s = args.batch_size * steps / seconds
        emit({"bench": "google_pretrain", "model": name, "precision": "fp32",
              "onednn": cpu_kernels.onednn_enabled(),
              "batch": args.batch_size, "seq": SEQ, "preds": PREDS, "steps": steps,
              "warmup": warmup, "seconds": round(seconds, 3),
              "examples_per_s": round(examples_per_s, 2),
              "tokens_per_s": round(examples_per_s * SEQ, 1),
              "mfu": round(examples_per_s * flops / peak, 3),
              "peak_gflops": round(peak / 1e9, 1), "final_loss": round(loss, 4)})
        if args.paired:
            emit(paired_run(name, args.batch_size, steps, warmup, cpu_kernels.onednn_enabled()))


def paired_run(name, batch, steps, warmup, onednn):
    """Google's and our step alternating in one process; returns the JSON record."""
    import pretrain_bench as ours
    runs = {"google": build_google_step(name, batch)[:2],
            "ours": ours.build_training(ours.make_config(name), "fp32", batch, SEQ, PREDS)[:2]}
    seconds = {who: 0.0 for who in runs}
    losses = {}
    for session, fetches in runs.values():
        timed_steps(session, fetches, 0, warmup)
    for _ in range(steps):
        for who, (session, fetches) in runs.items():
            started = time.time()
            losses[who] = float(session.run(fetches)[0])
            seconds[who] += time.time() - started
    for session, _ in runs.values():
        session.close()
    rate = {who: batch * steps / seconds[who] for who in runs}
    return {"bench": "paired_pretrain", "model": name, "precision": "fp32", "onednn": onednn,
            "batch": batch, "seq": SEQ, "preds": PREDS, "alternating_steps": steps,
            "google_examples_per_s": round(rate["google"], 2),
            "ours_examples_per_s": round(rate["ours"], 2),
            "ours_over_google": round(rate["ours"] / rate["google"], 3),
            "final_loss": {who: round(loss, 4) for who, loss in losses.items()}}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="*", help="extra corpora for data_gen")
    parser.add_argument("--bench", default="data_gen,pretrain")
    parser.add_argument("--max_mb", type=float, default=None,
                        help="data_gen: use only the first MB of each corpus")
    parser.add_argument("--models", default="tiny,base")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=None, help="timed steps per model")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps first")
    parser.add_argument("--quick", action="store_true", help="fewer steps, as pretrain_bench")
    parser.add_argument("--onednn", default="tf_default", choices=["tf_default", "on", "off"],
                        help="pretrain: CPU kernels of this process (see the docstring)")
    parser.add_argument("--maskings", default="wwm",
                        help="--paired data_gen: our --masking recipes, each against Google's "
                             "(wwm,ngram,span,macbert)")
    parser.add_argument("--similar_words_file", default=None,
                        help="macbert: the similar-words TSV (else macbert is skipped)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="data_gen --paired: Google/ours run pairs per corpus")
    parser.add_argument("--paired", action="store_true",
                        help="pretrain: also alternate Google's and our steps in this process")
    args = parser.parse_args(argv)
    benches = args.bench.split(",")
    models = set(args.models.split(","))
    if set(benches) - {"data_gen", "pretrain"} or models - {"tiny", "base"}:
        parser.error("--bench takes data_gen,pretrain and --models tiny,base")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    apply_onednn_choice(args.onednn)
    reason = fetch_google_bert()
    if reason:
        for bench in benches:
            emit({"bench": f"google_{bench}", "skipped": reason})
        return
    if "data_gen" in benches:
        bench_data_gen(args)
    if "pretrain" in benches:
        bench_pretrain(args)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD_FLAG:
        run_google_module(sys.argv[2], sys.argv[3:])
    else:
        main(sys.argv[1:])
