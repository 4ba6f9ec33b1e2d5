"""Training dynamics: Google's own pretraining code against ours, step by step.

    python bench/google_training_curves.py --family=albert --google_source=PATH \
        --input_file='runs/lcqmc_experiment/albert/data/lcqmc-*' \
        [--config_file=common/model_configs/lcqmc_small_albert.json --steps=300 --batch_size=64
         --optimizer=lamb --learning_rate=0.00176 --warmup_steps=100
         --num_train_steps=1000 --dropout=off --log_every=25]
    python bench/google_training_curves.py --family=bert --input_file=BERT_RECORDS \
        --config_file=common/model_configs/lcqmc_small_bert.json --optimizer=adamw \
        --learning_rate=5e-4

Both sides train from the same initial weights on the same batches, with the
same optimizer, schedule and clipping, and print their losses as JSON lines:

* Google's side is `run_pretraining.model_fn_builder(...)` of
  google-research/albert (at commit `ALBERT_COMMIT`) or google-research/bert
  (the PyPI wheel bench/google_baseline.py fetches), called in TRAIN mode as
  TPUEstimator(use_tpu=False) would: their model, MLM + SOP/NSP heads and
  `optimization.create_optimizer` (warmup and polynomial decay, LAMB or AdamW,
  clipping at global norm 1.0). Its batches come from their own
  `input_fn_builder(is_training=False)` (records in file order, no shuffling),
  and its initial weights are saved.
* Our side is `pretrain.training.pretraining_model_fn.model_fn_builder` with
  `init_checkpoint` = those saved weights, fed by the same input_fn, in its
  own graph and session.

With `--dropout=off` (both dropout rates 0) the two computations are the same
arithmetic up to the order of float operations, so the curves must agree to
float32 rounding for the first steps, then drift apart only slowly (a chaotic
system amplifies rounding). With `--dropout=on` the masks come from the graph
seed `--seed` and each dropout op's place in its graph: they coincide only if
both graphs create their ops alike (for BERT they did: the curves matched as
closely as without dropout); where they do not, compare several `--seed`s'
spread, not single curves.

`--sides=google,ours,google_rerun` also runs Google's side a second time from
the same weights, each multiplied by (1 + 1e-7 * N(0, 1)), a change of the size
of float32 rounding made once: the gap between Google and Google shows how
fast training amplifies such a difference. It is a lower bound, not the floor
for ours, which differs in the order of float operations at every step (ALBERT,
LAMB, 20 steps: Google-Google 9.5e-7, Google-ours 4.7e-5 in total loss).

Lines: {"bench": "training_curve", "family", "side", "step", "loss",
"masked_lm_loss", "sentence_loss"}, means over the last `--log_every` steps,
and per side after Google one {"bench": "training_curve_diff", "sides", ...}
with the largest per-step gap of each loss to Google's over the first 10, 50
and all steps, and the mean gap over the last 50.

Google's code is never copied into this repo. For BERT, the wheel is fetched
from PyPI as in bench/google_baseline.py. ALBERT has no official wheel and this
network reaches PyPI but not GitHub, so `--google_source` names a clone you
made (`git clone https://github.com/google-research/albert`) or its bare git
directory: the four files used are read at ALBERT_COMMIT (a plain folder's
files are checked against the same sha256 values) and written to
`.cache/google_albert/albert/` (git-ignored). Both run under
bench/google_baseline.py's shim, plus, for ALBERT, stand-ins for the two
contrib modules its run_pretraining imports (contrib_tpu.TPUEstimatorSpec is
tf.estimator.tpu.TPUEstimatorSpec; the cluster resolver is unused off TPU).
"""
import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import google_baseline  # noqa: E402  (shim for tf.contrib.layers.layer_norm)

ALBERT_COMMIT = "b772393d3dae115b493258ce8e37c17b2cc62100"
ALBERT_FILES = {  # sha256 of each file at ALBERT_COMMIT
    "modeling.py": "816c6f709b197f70f7f49f741bc682224ee611f981e0b2cae62143c1155db5c7",
    "run_pretraining.py": "ed8a39121fbe4232b07b77e7e88c24e666bd9269f751f880fd668c512bfa55d8",
    "optimization.py": "f3f3f77ff682d31f3c88b0a09deadcd7e21059cefb8cf1fa5de894c0cd844122",
    "lamb_optimizer.py": "a2d63dc6fd8633397e59a201ea07e72a84d8da2423a744cd0f5c0f3ceac3afc8",
}
CACHE = os.path.join(REPO, ".cache", "google_albert")
LOSSES = ("loss", "masked_lm_loss", "sentence_loss")
# Per family: Google's package, its sentence head's function in run_pretraining.
SENTENCE_HEADS = {"albert": "get_sentence_order_output", "bert": "get_next_sentence_output"}


def _read_source(source, name):
    """The bytes of `name` at ALBERT_COMMIT from a clone, a bare git dir or a plain folder."""
    git_dir = None
    for candidate in (os.path.join(source, ".git"), source):
        if os.path.isfile(os.path.join(candidate, "HEAD")):
            git_dir = candidate
            break
    if git_dir is not None:
        shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{ALBERT_COMMIT}:{name}"],
                               capture_output=True)
        if shown.returncode != 0:
            raise SystemExit(f"--google_source={source}: no {name} at commit {ALBERT_COMMIT} "
                             f"({shown.stderr.decode(errors='replace').strip()}); fetch it with "
                             "git -C SOURCE fetch origin")
        return shown.stdout
    try:
        with open(os.path.join(source, name), "rb") as handle:
            return handle.read()
    except OSError as error:
        raise SystemExit(f"--google_source={source}: cannot read {name} ({error.strerror}); give "
                         "a clone of https://github.com/google-research/albert") from None


def prepare_google_albert(source):
    """Writes Google's four files to CACHE/albert/ after checking them; returns CACHE."""
    package = os.path.join(CACHE, "albert")
    os.makedirs(package, exist_ok=True)
    for name, expected in ALBERT_FILES.items():
        data = _read_source(source, name)
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise SystemExit(f"{source}: {name} has sha256 {digest}, not the {expected} of "
                             f"google-research/albert at {ALBERT_COMMIT}")
        with open(os.path.join(package, name), "wb") as handle:
            handle.write(data)
    open(os.path.join(package, "__init__.py"), "w").close()
    return CACHE


def load_google(family, source):
    """Installs the shim and imports Google's package; returns (modeling, run_pretraining)."""
    import importlib
    import tensorflow.compat.v1 as tf
    google_baseline.install_shim()
    if family == "bert":
        message = google_baseline.fetch_google_bert()
        if message:
            raise SystemExit(f"google-research/bert: {message}")
    else:
        if not source:
            raise SystemExit("--family=albert needs --google_source (a clone of "
                             "https://github.com/google-research/albert)")
        cache = prepare_google_albert(source)
        contrib = sys.modules["tensorflow.contrib"]
        contrib.tpu = types.ModuleType("tensorflow.contrib.tpu")
        contrib.tpu.TPUEstimatorSpec = tf.estimator.tpu.TPUEstimatorSpec
        contrib.tpu.CrossShardOptimizer = tf.tpu.CrossShardOptimizer
        contrib.cluster_resolver = types.ModuleType("tensorflow.contrib.cluster_resolver")
        sys.modules["tensorflow.contrib.tpu"] = contrib.tpu
        sys.modules["tensorflow.contrib.cluster_resolver"] = contrib.cluster_resolver
        if cache not in sys.path:
            sys.path.insert(0, cache)
    modeling = importlib.import_module(f"{family}.modeling")
    run_pretraining = importlib.import_module(f"{family}.run_pretraining")
    run_pretraining.FLAGS([f"google_{family}"])  # their defaults (ALBERT: offline masking)
    return modeling, run_pretraining


def _config_dict(path, dropout):
    with open(path) as handle:
        values = json.load(handle)
    if not dropout:
        values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return values


def _features(google_run, input_files, args):
    """One batch of Google's eval input_fn (file order, repeating), as graph tensors."""
    input_fn = google_run.input_fn_builder(
        input_files, args.max_seq_length, args.max_predictions, is_training=False,
        num_cpu_threads=1)
    dataset = input_fn({"batch_size": args.batch_size})
    return dataset.make_one_shot_iterator().get_next()


def _capture(module, name, sink, keys):
    """Wraps module.name so that its returned tensors land in sink under keys."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        out = original(*args, **kwargs)
        if isinstance(out, dict):
            sink.update({k: out[k] for k in keys if k in out})
        else:
            sink[keys[0]] = out[0]
        return out

    setattr(module, name, wrapper)
    return original


def _google_spec(family, google_modeling, google_run, values, args, features, tensors):
    """Google's model_fn in TRAIN mode; its two losses are caught into `tensors`."""
    head = SENTENCE_HEADS[family]
    restore = [_capture(google_run, "get_masked_lm_output", tensors, ["masked_lm_loss"]),
               _capture(google_run, head, tensors, ["sentence_loss"])]
    common = dict(init_checkpoint=None, learning_rate=args.learning_rate,
                  num_train_steps=args.num_train_steps, num_warmup_steps=args.warmup_steps,
                  use_tpu=False, use_one_hot_embeddings=False)
    try:
        if family == "albert":
            model_fn = google_run.model_fn_builder(
                albert_config=google_modeling.AlbertConfig.from_dict(values),
                optimizer=args.optimizer, poly_power=1.0, start_warmup_step=0, **common)
        else:
            model_fn = google_run.model_fn_builder(
                bert_config=google_modeling.BertConfig.from_dict(values), **common)
        return model_fn(features, None, tf_train_mode(), {})
    finally:
        google_run.get_masked_lm_output = restore[0]
        setattr(google_run, head, restore[1])


def _our_spec(values, args, features, tensors, init_checkpoint):
    """Our model_fn in TRAIN mode from Google's initial weights; losses into `tensors`."""
    from pretrain.models.bert import config as our_config
    from pretrain.training import pretraining_model_fn as ours
    original = _capture(ours, "pretraining_losses", tensors,
                        ["masked_lm_loss", "sentence_loss"])
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the loader's table
            return ours.model_fn_builder(
                our_config.BertConfig.from_dict(values), init_checkpoint=init_checkpoint,
                learning_rate=args.learning_rate, num_train_steps=args.num_train_steps,
                num_warmup_steps=args.warmup_steps, optimizer=args.optimizer,
                bias_correction=args.bias_correction)(features, None, tf_train_mode(), {})
    finally:
        ours.pretraining_losses = original


def tf_train_mode():
    import tensorflow.compat.v1 as tf
    return tf.estimator.ModeKeys.TRAIN


def _nudge(session, variables, seed, relative=1e-7):
    """Multiplies every weight by (1 + relative * N(0, 1)): float32 rounding's size."""
    rng = np.random.default_rng(seed)
    for var in variables:
        value = session.run(var)
        var.load(value * (1.0 + relative * rng.standard_normal(value.shape)).astype(value.dtype),
                 session)


def run_side(side, google, args, input_files, init_dir):
    """Trains one side for args.steps; returns {loss name: per-step list}."""
    import tensorflow.compat.v1 as tf
    google_modeling, google_run = google
    values = _config_dict(args.config_file, args.dropout == "on")
    init_checkpoint = os.path.join(init_dir, "init.ckpt")
    graph = tf.Graph()
    tensors = {}
    with graph.as_default():
        tf.set_random_seed(args.seed)
        features = _features(google_run, input_files, args)
        if side.startswith("google"):
            spec = _google_spec(args.family, google_modeling, google_run, values, args,
                                features, tensors)
        else:
            spec = _our_spec(values, args, features, tensors, init_checkpoint)
        tensors["loss"] = spec.loss
        session = tf.Session(graph=graph, config=tf.ConfigProto(
            intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=1))
        session.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        saver = tf.train.Saver(tf.trainable_variables())
        if side == "google":  # the initial weights every other side starts from
            saver.save(session, init_checkpoint, write_meta_graph=False)
        elif side == "google_rerun":
            saver.restore(session, init_checkpoint)
            _nudge(session, tf.trainable_variables(), args.seed)
        fetches = [tensors[name] for name in LOSSES]
        curves = {name: [] for name in LOSSES}
        for step in range(1, args.steps + 1):
            values_now = session.run(fetches + [spec.train_op])[:len(LOSSES)]
            for name, value in zip(LOSSES, values_now):
                curves[name].append(float(value))
            if step % args.log_every == 0:
                window = slice(step - args.log_every, step)
                means = {name: round(float(np.mean(curves[name][window])), 5)
                         for name in LOSSES}
                google_baseline.emit(dict(bench="training_curve", family=args.family,
                                          side=side, step=step, **means))
        session.close()
    return curves


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", choices=sorted(SENTENCE_HEADS), default="albert")
    parser.add_argument("--google_source",
                        help="albert: a clone of google-research/albert, its .git folder, or "
                             "a folder holding its four files")
    parser.add_argument("--input_file", required=True, help="pretraining records (glob)")
    parser.add_argument("--config_file",
                        default=os.path.join(REPO, "common", "model_configs",
                                             "lcqmc_small_albert.json"))
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--max_predictions", type=int, default=10)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--optimizer", choices=("lamb", "adamw"), default="lamb")
    parser.add_argument("--learning_rate", type=float, default=0.00176)
    parser.add_argument("--warmup_steps", type=int, default=100)
    parser.add_argument("--num_train_steps", type=int, default=1000,
                        help="length of the decay schedule (the run stops after --steps)")
    parser.add_argument("--dropout", choices=("on", "off"), default="off")
    parser.add_argument("--bias_correction", action="store_true",
                        help="ours only (Google has none): shows its effect beside Google")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log_every", type=int, default=25)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sides", default="google,ours",
                        help="google, ours, google_rerun (Google's side again from weights "
                             "nudged by float32 rounding's size: the noise floor)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import tensorflow.compat.v1 as tf
    # Records only: data_gen's sidecars (NAME.meta.json) match the same glob.
    input_files = sorted(f for f in tf.io.gfile.glob(args.input_file)
                         if not f.endswith(".meta.json"))
    if not input_files:
        raise SystemExit(f"--input_file={args.input_file}: no files match")
    if args.family == "bert" and args.optimizer != "adamw":
        raise SystemExit("--family=bert: Google's BERT trains with AdamW only (--optimizer=adamw)")
    google = load_google(args.family, args.google_source)
    tf.logging.set_verbosity(tf.logging.ERROR)
    google_baseline.emit(dict(bench="training_curve_setup",
              google=ALBERT_COMMIT if args.family == "albert" else google_baseline.WHEEL_SPEC,
              input_files=len(input_files),
              **{k: v for k, v in vars(args).items() if k != "google_source"}))
    sides = args.sides.split(",")
    unknown = set(sides) - {"google", "ours", "google_rerun"}
    if unknown or not sides or sides[0] != "google":
        raise SystemExit(f"--sides={args.sides}: google first (the others start from its "
                         "initial weights), then any of ours, google_rerun")
    curves = {}
    with tempfile.TemporaryDirectory() as init_dir:
        for side in sides:
            curves[side] = run_side(side, google, args, input_files, init_dir)
    for other in ("ours", "google_rerun"):
        if "google" not in curves or other not in curves:
            continue
        record = dict(bench="training_curve_diff", family=args.family, steps=args.steps,
                      sides=f"google-{other}")
        for name in LOSSES:
            gap = np.abs(np.subtract(curves["google"][name], curves[other][name]))
            for first in (10, 50, args.steps):
                record[f"{name}_max_gap_first_{first}"] = float(np.max(gap[:first]))
            record[f"{name}_mean_gap_last_50"] = float(np.mean(gap[-50:]))
        google_baseline.emit(record)


if __name__ == "__main__":
    main()
