"""Communication and equivalence of training under `mirrored` and `multi_worker`.

Three processes run concurrently: one with 2 logical CPUs (single-device
reference and MirroredStrategy) and two loopback workers
(MultiWorkerMirroredStrategy). Each trains the same small problem (a 8-256-1
tanh net, 2817 parameters, global batch 8) for AdamW and LAMB, fp32 and fp16,
k = 1 and k = 2, in the toolkit's own training loop (`TrainingLoop.train`: its
per-replica input, replica step, loss reduction and sessions; the workers' server
target and chief-only saving) with the real `optimization.build_train_op`, and
records the final weights. Selected steps run with a full trace: the elements that
went through collective all-reduces, collective broadcasts and cross-device
copies are summed per micro-step, relative to the parameter count. The mirrored
process also trains a tiny ELECTRA (generator, discriminator, the embeddings they
share) and XLNet with the pretraining model function in the same loop, traced, and on
one device.
"""
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.testutil.cli_runs import free_ports
from tests.testutil.float32_bounds import (ELEMENTWISE_ULPS, EPS16, assert_close, magnitude,
                            random_rounding_ulps, summation_ulps, tolerance)
from tests.testutil.pretrain_data import ARGMAX_ELECTRA, encoder_gradient_ulps, weight_drift
from conftest import REPO_ROOT

REPO = str(REPO_ROOT)
TESTS = os.path.join(REPO, "tests")
HERE = os.path.dirname(os.path.abspath(__file__))  # this module, imported by the workers

IN, HIDDEN, GLOBAL_BATCH = 8, 256, 8
NUM_PARAMS = IN * HIDDEN + 3 * HIDDEN + 1
LEARNING_RATE = 0.01
# (optimizer, precision, k, updates, poisoned (update, micro-step) or None)
# Every pair of optimizer, precision and k (checked below) in 5 cases rather than all 8
# combinations; the two traced ones (TRACED) among them.
CASES = [(opt, prec, k, 3, None) for opt, prec, k in (
    ("adamw", "fp32", 1), ("adamw", "fp32", 2), ("adamw", "fp16", 2), ("lamb", "fp16", 1),
    ("lamb", "fp32", 2))]
# A NaN example of replica 1 in the middle micro-step of update 1 (of 3 micro-steps).
POISONED = ("lamb", "fp16", 3, 3, (1, 1))
INITIAL_LOSS_SCALE = 2.0 ** 8
TRACED = {1: ("adamw", "fp32", 1, 3, None), 2: ("adamw", "fp32", 2, 3, None)}
# ELECTRA, 2 updates: discriminator width 32 over embeddings of 16, generator 16; its
# replacements are the generator's argmax (temperature 1e-7, pretrain_data.ARGMAX_ELECTRA)
# so that the replicas sample what one device samples.
ELECTRA_CONFIG = dict(vocab_size=40, hidden_size=32, num_hidden_layers=1,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=8,
                      type_vocab_size=2, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, **ARGMAX_ELECTRA)
ELECTRA_SEQ, ELECTRA_PREDS, ELECTRA_UPDATES = 8, 2, 2
# XLNet, 2 updates on the same batch shape: content and query streams, relative segments.
XLNET_CONFIG = dict(model_type="xlnet", n_token=40, d_model=32, n_layer=1, n_head=2, d_head=16,
                    d_inner=64, ff_activation="gelu", untie_r=True, dropout=0.0, dropatt=0.0)


def case_name(case):
    opt, prec, k, updates, poisoned = case
    return f"{opt}-{prec}-k{k}" + ("-poisoned" if poisoned else "")


# --------------------------------------------------------------------------- worker side
def _data(case):
    """x [steps, B, IN], y [steps, B], per-example loss factor [steps, B] (NaN = poisoned)."""
    _, _, k, updates, poisoned = case
    rng = np.random.RandomState(5)
    steps = updates * k
    x = rng.randn(steps, GLOBAL_BATCH, IN).astype(np.float32)
    y = rng.randn(steps, GLOBAL_BATCH).astype(np.float32)
    factor = np.ones([steps, GLOBAL_BATCH], np.float32)
    if poisoned:
        factor[poisoned[0] * k + poisoned[1], GLOBAL_BATCH - 1] = np.nan  # replica 1's half
    return x, y, factor


def _initial_weights():
    rng = np.random.RandomState(7)
    return {"dense/kernel": rng.randn(IN, HIDDEN).astype(np.float32) * 0.3,
            "dense/bias": rng.randn(HIDDEN).astype(np.float32) * 0.1,
            "LayerNorm/gamma": 1.0 + rng.randn(HIDDEN).astype(np.float32) * 0.1,
            "out/kernel": rng.randn(HIDDEN, 1).astype(np.float32) * 0.1,
            "out/bias": np.array([0.05], np.float32)}


def _replica_input_fn(arrays):
    """input_fn of a global batch per step ({name: [steps, B, ...]}): each input pipeline
    yields its replicas' rows of every step, in step order and, within a step, in replica
    order (each local replica takes the next element)."""

    def input_fn(params, input_context=None):
        del params
        import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
        pipelines = input_context.num_input_pipelines if input_context else 1
        replicas = input_context.num_replicas_in_sync if input_context else 1
        local = replicas // pipelines
        first = (input_context.input_pipeline_id if input_context else 0) * local
        per_replica = GLOBAL_BATCH // replicas
        rows = slice(first * per_replica, (first + local) * per_replica)

        def split(a):  # [steps, B, ...] -> [steps * local, per_replica, ...]
            a = a[:, rows]
            return a.reshape((a.shape[0] * local, per_replica) + a.shape[2:])
        return tf.data.Dataset.from_tensor_slices({n: split(a) for n, a in arrays.items()})
    return input_fn


def _toy_input_fn(case):
    x, y, factor = _data(case)
    return _replica_input_fn({"x": x, "y": y, "factor": factor})


def _toy_model_fn(tf, case, recorded):
    """The model function of the 8-256-1 net: its loss through the real build_train_op;
    appends (update applied, loss scale, logged loss) of each replica to `recorded`."""
    from pretrain.training import mixed_precision, optimization  # pylint: disable=import-outside-toplevel
    from pretrain.training.model_spec import ModelSpec  # pylint: disable=import-outside-toplevel
    _, prec, k, _, _ = case

    def model_fn(features, labels, mode, params, config=None):
        del labels, params, config
        dtype = mixed_precision.compute_dtype(prec)
        w = {}
        for name, value in _initial_weights().items():
            scope, short = name.split("/")
            with tf.variable_scope(scope, reuse=tf.AUTO_REUSE):
                w[name] = tf.get_variable(short, initializer=value)
        c = {name: tf.cast(v, dtype) for name, v in w.items()}
        hidden = tf.tanh(tf.matmul(tf.cast(features["x"], dtype), c["dense/kernel"])
                         + c["dense/bias"])
        pred = tf.matmul(hidden * c["LayerNorm/gamma"], c["out/kernel"])[:, 0] + c["out/bias"]
        squared = tf.square(tf.cast(pred, tf.float32) - features["y"])
        loss = tf.reduce_mean(features["factor"] * squared)
        scaler = None
        if mixed_precision.needs_loss_scaling(prec):
            scaler = mixed_precision.DynamicLossScale(initial_scale=INITIAL_LOSS_SCALE,
                                                      growth_interval=1000)
        out = optimization.build_train_op(loss, LEARNING_RATE, 100, 0, optimizer=case[0],
                                          gradient_accumulation_steps=k, loss_scaler=scaler,
                                          log_scalars={"loss": loss})
        recorded.append([out.update_applied, out.loss_scale, out.logged["loss"]])
        # The loop stops on a NaN in the loss it is given (NanTensorHook): it gets the loss
        # without the poison, the gradients come from the poisoned one.
        return ModelSpec(mode, loss=tf.reduce_mean(squared), train_op=out.train_op)
    return model_fn


def _traffic(tf, run_metadata):
    """{reduce, broadcast, copy}: elements moved by this step, max over the local devices.

    reduce: inputs of executed collective all-reduce ops; broadcast: executed
    collective broadcasts; copy: tensors sent from one device to another
    (partition-graph _Send nodes whose producer ran in this step).
    """
    executed, per_device = {}, {}
    for dev in run_metadata.step_stats.dev_stats:
        for node in dev.node_stats:
            sizes = {o.slot: int(np.prod([d.size for d in o.tensor_description.shape.dim]))
                     for o in node.output}
            executed[node.node_name] = sizes
            op = node.timeline_label.split(" = ")[-1].split("(")[0]
            kind = ("reduce" if "Reduce" in op or "AllReduce" in op else
                    "broadcast" if "Bcast" in op else None)
            if op.startswith(("Collective", "Nccl")) and kind:
                totals = per_device.setdefault(dev.device, {"reduce": 0, "broadcast": 0})
                totals[kind] += max(sizes.values(), default=0)
    copies = {}
    for graph in run_metadata.partition_graphs:
        for node in graph.node:
            if node.op != "_Send" or node.attr["send_device"].s == node.attr["recv_device"].s:
                continue
            src, _, slot = node.input[0].partition(":")
            if src in executed:
                device = node.attr["send_device"].s.decode()
                copies[device] = copies.get(device, 0) + executed[src].get(int(slot or 0), 0)
    return {"reduce": max([t["reduce"] for t in per_device.values()], default=0),
            "broadcast": max([t["broadcast"] for t in per_device.values()], default=0),
            "copy": max(copies.values(), default=0)}


def _recorder(tf, fetches, trace):
    """A SessionRunHook of the training loop's session: fetches `fetches()` (a list, made when
    the graph is) with each step and, when `trace`, traces the step (`_traffic`); keeps the
    trainable weights after the session is made (`initial`) and at its end (`final`)."""

    class Recorder(tf.train.SessionRunHook):
        def __init__(self):
            self.steps, self.traffic, self.initial, self.final = [], [], None, None

        def begin(self):
            self._weights = {v.op.name: v for v in tf.trainable_variables()}
            self._fetches = fetches()

        def after_create_session(self, session, coord):
            self.initial = session.run(self._weights)

        def before_run(self, run_context):
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                    output_partition_graphs=True) if trace else None
            return tf.train.SessionRunArgs(self._fetches, options=options)

        def after_run(self, run_context, run_values):
            self.steps.append(run_values.results)
            if trace:
                self.traffic.append(_traffic(tf, run_values.run_metadata))

        def end(self, session):
            self.final = session.run(self._weights)
    return Recorder()


def _loop(setup, model_fn, model_dir):
    """The toolkit's TrainingLoop of setup (strategy name, tf.distribute strategy or None,
    session config); no logging, no checkpoints (the recorder reads the weights)."""
    strategy_name, distribution, session_config = setup
    from pretrain.training import strategy as strategy_lib  # pylint: disable=import-outside-toplevel
    settings = strategy_lib.make_run_config(
        strategy_name, model_dir, save_checkpoints_steps=None, log_step_count_steps=0,
        save_summary_steps=0, distribution=distribution, session_config=session_config)
    return strategy_lib.build_trainer(strategy_name, model_fn, settings,
                                      train_batch_size=GLOBAL_BATCH, training_loop="session")


def _train(tf, setup, case, model_dir, trace=False):
    """Trains `case` in the training loop; returns final weights, per step [update applied,
    loss scale, logged loss] and, when traced, per step `_traffic`."""
    recorded = []
    loop = _loop(setup, _toy_model_fn(tf, case, recorded), model_dir)
    recorder = _recorder(tf, lambda: recorded[0], trace)
    loop.train(_toy_input_fn(case), max_steps=case[2] * case[3], hooks=[recorder])
    steps = [[bool(a), float(s), float(l)] for a, s, l in recorder.steps]
    assert len(steps) == case[2] * case[3]
    return recorder.final, steps, recorder.traffic


def _family_batch(family):
    """(config dict, fixed global batch {name: array}) of `family` ("electra", "xlnet").

    Every token real and as many predictions in every example: each replica's loss (a
    mean over its tokens or predictions, as upstream's per-core loss is) then averages
    to the global batch's."""
    rng = np.random.RandomState(3)
    seq, preds = ELECTRA_SEQ, ELECTRA_PREDS
    data = {"input_ids": rng.randint(5, 40, size=(GLOBAL_BATCH, seq)),
            "input_mask": np.ones((GLOBAL_BATCH, seq), np.int32),
            "segment_ids": np.zeros((GLOBAL_BATCH, seq), np.int32)}
    if family == "electra":
        data.update(masked_lm_positions=np.tile([2, 5], (GLOBAL_BATCH, 1)),
                    masked_lm_ids=rng.randint(5, 40, size=(GLOBAL_BATCH, preds)),
                    masked_lm_weights=np.ones((GLOBAL_BATCH, preds)))
        return ELECTRA_CONFIG, data
    # XLNet: a drawn order per example; positions 2 and 5 are predicted and cannot see
    # themselves or what comes after them in the order; two segments.
    data["segment_ids"][:, seq // 2:] = 1
    rank = np.argsort(rng.rand(GLOBAL_BATCH, seq), axis=1)
    perm_mask = (rank[:, None, :] > rank[:, :, None]).astype(np.float32)
    targets = np.zeros(seq, bool)
    targets[[2, 5]] = True
    perm_mask[:, :, ~targets] = 0.0  # the others are seen by all
    perm_mask[:, targets, targets] = 1.0
    data.update(perm_mask=perm_mask,
                target_mapping=np.tile(np.eye(seq, dtype=np.float32)[[2, 5]], (GLOBAL_BATCH, 1, 1)),
                target_ids=data["input_ids"][:, [2, 5]], target_weights=np.ones((GLOBAL_BATCH, 2)))
    return XLNET_CONFIG, data


def _family_start(tf, config, data, path):
    """Writes the trainable weights both setups start from to checkpoint `path` (drawn in
    name order: their own initialisers would draw differently); returns the parameter count."""
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    with tf.Graph().as_default():
        features = {name: tf.constant(value[:1], tf.int32 if value.dtype.kind == "i"
                                      else tf.float32) for name, value in data.items()}
        registry.family_of(config).pretraining_losses(config, features, True)
        weights = {v.op.name: v for v in tf.trainable_variables()}
        rng = np.random.RandomState(11)
        start = [weights[name].assign(
            (rng.normal(0.0, 0.05, weights[name].shape.as_list())
             + name.endswith("/gamma")).astype(np.float32)) for name in sorted(weights)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(start)
            tf.train.Saver(weights).save(sess, path, write_meta_graph=False)
    return int(sum(np.prod(v.shape.as_list()) for v in weights.values()))


def _train_family(tf, setup, family, model_dir, trace=False):
    """ELECTRA_UPDATES updates of `family` ("electra": ELECTRA_CONFIG, "xlnet": XLNET_CONFIG)
    on a fixed batch, by the pretraining model function in the training loop from the
    weights of `_family_start`; returns (weights {name, "initial/" + name}, {"num_params",
    "traffic": per update, when traced})."""
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    from pretrain.training import pretraining_model_fn  # pylint: disable=import-outside-toplevel
    config_dict, data = _family_batch(family)
    config = registry.config_from_dict(dict(config_dict))
    os.makedirs(os.path.join(model_dir, "start"))
    start = os.path.join(model_dir, "start", "start.ckpt")
    num_params = _family_start(tf, config, data, start)
    model_fn = pretraining_model_fn.model_fn_builder(
        config, init_checkpoint=start, learning_rate=LEARNING_RATE, num_train_steps=100,
        num_warmup_steps=0, use_sentence_head=False)
    recorder = _recorder(tf, list, trace)
    steps = {name: np.stack([value] * ELECTRA_UPDATES) for name, value in data.items()}
    _loop(setup, model_fn, model_dir).train(_replica_input_fn(steps), ELECTRA_UPDATES,
                                            hooks=[recorder])
    return ({**recorder.final, **{"initial/" + n: v for n, v in recorder.initial.items()}},
            {"num_params": num_params, "traffic": recorder.traffic})


def worker_main(mode, out_dir):
    """Entry of a test subprocess; mode is `mirrored` (also runs the single-device
    reference) or `multi_worker` (TF_CONFIG set by the test)."""
    import tensorflow as tf2  # pylint: disable=import-outside-toplevel
    if mode == "mirrored":
        cpu = tf2.config.list_physical_devices("CPU")[0]
        tf2.config.set_logical_device_configuration(
            cpu, [tf2.config.LogicalDeviceConfiguration(), tf2.config.LogicalDeviceConfiguration()])
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain.training import strategy as strategy_lib  # pylint: disable=import-outside-toplevel
    strategy = strategy_lib.make_distribution_strategy(mode)
    config = strategy_lib.make_session_config(distribution=strategy)
    tag = (f"multi_worker{json.loads(os.environ['TF_CONFIG'])['task']['index']}"
           if mode == "multi_worker" else "mirrored")
    # Workers of one cluster share their model_dir (the chief saves, the others restore).
    models = os.path.join(out_dir, "models-" + ("multi_worker" if mode == "multi_worker"
                                                 else tag))
    if mode == "mirrored":  # the counter itself: a parameter-sized copy between devices
        with tf.Graph().as_default():
            with tf.device("/cpu:0"):
                source = tf.random.normal([NUM_PARAMS])
            with tf.device("/cpu:1"):
                copied = tf.identity(source) * 2.0
            metadata = tf.RunMetadata()
            with tf.Session(config=config) as sess:
                sess.run(copied, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                                       output_partition_graphs=True),
                         run_metadata=metadata)
        with open(os.path.join(out_dir, "calibration.json"), "w") as f:
            json.dump(_traffic(tf, metadata), f)
    setups = [(tag, (mode, strategy, config))]
    if mode == "mirrored":
        setups.append(("single", ("cpu", None, config)))
        for family in ("electra", "xlnet"):
            for setup, loop_setup in setups:
                final, record = _train_family(
                    tf, loop_setup, family, os.path.join(models, setup, family),
                    trace=loop_setup[1] is not None)
                np.savez(os.path.join(out_dir, f"{setup}-{family}.npz"), **final)
                with open(os.path.join(out_dir, f"{setup}-{family}.json"), "w") as f:
                    json.dump(record, f)
    for setup, loop_setup in setups:
        for case in CASES + [POISONED]:
            traced = loop_setup[1] is not None and case in TRACED.values()
            final, steps, step_traffic = _train(
                tf, loop_setup, case, os.path.join(models, setup, case_name(case)), trace=traced)
            np.savez(os.path.join(out_dir, f"{setup}-{case_name(case)}.npz"), **final)
            with open(os.path.join(out_dir, f"{setup}-{case_name(case)}.json"), "w") as f:
                json.dump({"steps": steps, "traffic": step_traffic}, f)
    print("DONE", flush=True)


# --------------------------------------------------------------------------- test side
def _spawn(mode, out_dir, env_extra=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS, HERE]), TF_CPP_MIN_LOG_LEVEL="2",
               **(env_extra or {}))
    code = f"import test_collectives as t; t.worker_main({mode!r}, {str(out_dir)!r})"
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("collectives")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    procs = [_spawn("mirrored", out)] + [
        _spawn("multi_worker", out, {"TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": i}})}) for i in range(2)]
    try:
        for proc in procs:
            text, _ = proc.communicate(timeout=400)
            assert proc.returncode == 0 and "DONE" in text, text[-4000:]
    finally:  # a worker that failed or hung leaves its peers waiting: none outlives the test
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def load(setup, case=None):
        if case is None:
            with open(out / f"{setup}.json") as f:
                return json.load(f)
        name = f"{setup}-{case if isinstance(case, str) else case_name(case)}"
        with open(out / f"{name}.json") as f:
            record = json.load(f)
        return dict(np.load(out / f"{name}.npz")), record
    return load


STRATEGY_SETUPS = ["mirrored", "multi_worker0", "multi_worker1"]

# Strategy against one device, float32 (float32_bounds case 2): the replicas' halves of the
# batch, their mean and (k = 2) the micro-batches sum the batch of 8 in another order, and
# the matmuls of 4 rows may block otherwise than those of 8. A gradient passes x @ kernel
# (8 terms), the output's 256, the batch (8), the tanh and four elementwise products.
GRADIENT_ULPS = summation_ulps(IN, HIDDEN, GLOBAL_BATCH) + ELEMENTWISE_ULPS + 4
# fp16 (case 3): each run rounds a gradient to float16 about 30 times on its longest
# chain (15 ops: casts, two matmuls, bias, tanh, x gamma, and back; two roundings each:
# TensorFlow's CPU float16 matmul stays within 3.1 u of sum|x|, a few roundings, not one
# per term); the two runs' errors add, and Adam's step carries them twice (through m and
# sqrt(v), as the difference of two weighted means of the same errors); per update.
FP16_GRADIENT_ROUNDINGS = 30 * 2 * 2
# The logged loss (forward only: 8 ops, two roundings each, in both runs).
FP16_LOSS_ROUNDINGS = 8 * 2 * 2


def _learning_rates(updates):
    """build_train_op's schedule here: LEARNING_RATE * (1 - u / 100), no warmup."""
    return [LEARNING_RATE * (1 - u / 100) for u in range(updates)]


def _drift(case, initial, expected):
    """weight_drift of a fp32 case: AdamW or LAMB (adapting the two kernels, their norms
    grown by lr of themselves at most per update), the global norm of all NUM_PARAMS
    gradients clipped at 1.0, weight decay 0.01."""
    opt, _, _, updates, _ = case
    learning_rates = _learning_rates(updates)
    weight_scale = max(magnitude(w) for w in list(initial.values()) + list(expected.values()))
    lamb_norm = 0.0
    if opt == "lamb":
        lamb_norm = max(np.linalg.norm(initial[n]) for n in ("dense/kernel", "out/kernel")) \
            * np.prod([1 + lr for lr in learning_rates])
    return weight_scale, weight_drift(
        learning_rates, GRADIENT_ULPS, weight_scale, clip_width=NUM_PARAMS, lamb_norm=lamb_norm,
        lamb_width=IN * HIDDEN if lamb_norm else 0, weight_decay=0.01)


def _assert_same_weights(got, expected, case, context):
    """fp32: elementwise within weight_drift of float32 rounding. fp16: the two runs sum
    different fp16 partial gradients, so compare the weight changes (all tensors together,
    in float16 ulps of the largest change): an unsynchronised, missing or double-counted
    update is off by a whole step, a quarter of the change or more."""
    initial = _initial_weights()
    assert sorted(got) == sorted(expected) == sorted(initial), context
    if case[1] == "fp32":
        _, drift = _drift(case, initial, expected)
        for name in expected:
            assert_close(got[name], expected[name], drift / tolerance(1, magnitude(expected[name])),
                         err_msg=f"{name} ({context})")
        moved = max(np.abs(expected[n] - initial[n]).max() for n in expected)
        assert moved > 100 * drift, context  # the comparison is between trained weights
    else:
        names = sorted(expected)
        change = np.concatenate([(expected[n] - initial[n]).ravel() for n in names])
        got_change = np.concatenate([(got[n] - initial[n]).ravel() for n in names])
        # in ulps of the change itself: weights that did not move are off by all of it
        assert_close(got_change, change, random_rounding_ulps(case[3] * FP16_GRADIENT_ROUNDINGS),
                     eps=EPS16, err_msg=f"weight changes ({context})")
        assert np.abs(change).max() > 1e-3, context  # the compared weights trained


def _assert_same_loss(got, want, case, step, context):
    """The logged loss of an update step against one device's: the forward's own rounding
    (fp32: GRADIENT_ULPS covers its sums; fp16: FP16_LOSS_ROUNDINGS) and the drift of the
    weights it was taken at, after the earlier updates (fp32: a drift d moves the loss by
    about d / |w| relatively, the loss's curvature times |w| being of the order of its
    gradient; fp16: the earlier updates' roundings reach the loss as further roundings)."""
    opt, precision, k, _, _ = case
    earlier = step // k
    if precision == "fp32":
        initial = _initial_weights()
        weight_scale, drift = _drift((opt, precision, k, earlier, None), initial, initial)
        assert_close(got, want, GRADIENT_ULPS + drift / tolerance(1, weight_scale),
                     err_msg=f"logged loss, {context} step {step}")
    else:
        ulps = random_rounding_ulps(FP16_LOSS_ROUNDINGS + earlier * FP16_GRADIENT_ROUNDINGS)
        assert_close(got, want, ulps, eps=EPS16, err_msg=f"logged loss, {context} step {step}")


@pytest.mark.parametrize("setup", STRATEGY_SETUPS)
def test_strategy_reaches_the_single_device_weights(runs, setup):
    """AdamW and LAMB, fp32 and fp16, k = 1 and 2: same weights, same skipped steps.
    Kernel-path sensitive: the replicas' matmuls of 4 rows against one device's 8, and
    their sums in another order, hence the bounds of _assert_same_weights."""
    for case in CASES:
        got, record = runs(setup, case)
        expected, reference = runs("single", case)
        context = f"{setup} {case_name(case)}"
        _assert_same_weights(got, expected, case, context)
        k = case[2]
        applied = [step[0] for step in record["steps"]]
        assert applied == [i % k == k - 1 for i in range(k * case[3])], context
        assert applied == [step[0] for step in reference["steps"]], context
        # logged loss on update steps: the global (and cycle) mean, as on one device
        for i, (step, ref) in enumerate(zip(record["steps"], reference["steps"])):
            if i % k == k - 1:
                _assert_same_loss(step[2], ref[2], case, i, context)


@pytest.mark.parametrize("setup", STRATEGY_SETUPS)
def test_non_finite_micro_batch_on_one_replica_skips_the_whole_update(runs, setup):
    """A NaN example of replica 1 in micro-step 1 of 3 (update 1): that update is
    skipped everywhere, the loss scale halves exactly once, and the updates
    before and after match the single device."""
    got, record = runs(setup, POISONED)
    expected, reference = runs("single", POISONED)
    _assert_same_weights(got, expected, POISONED, setup)
    applied = [step[0] for step in record["steps"]]
    assert applied == [False, False, True, False, False, False, False, False, True]
    assert applied == [step[0] for step in reference["steps"]]
    scales = [step[1] for step in record["steps"]]
    # read in the same run as the update, so a step's change shows one step later
    assert scales[:6] == [INITIAL_LOSS_SCALE] * 6
    assert scales[6:] == [INITIAL_LOSS_SCALE / 2] * 3


def test_cases_cover_every_pair_of_optimizer_precision_and_k():
    """The cases stand for the full grid: each pair of settings occurs in one of them."""
    for (i, values_i), (j, values_j) in itertools.combinations(
            enumerate([("adamw", "lamb"), ("fp32", "fp16"), (1, 2)]), 2):
        assert {(case[i], case[j]) for case in CASES} == set(
            itertools.product(values_i, values_j)), (i, j)
    assert set(TRACED.values()) <= set(CASES)


def test_traffic_counter_sees_a_copy_between_devices(runs):
    """The counter below is not blind: a parameter-sized tensor sent from CPU:0 to
    CPU:1 counts as NUM_PARAMS copied elements, and nothing as reduced."""
    assert runs("calibration") == {"reduce": 0, "broadcast": 0, "copy": NUM_PARAMS}


@pytest.mark.parametrize("setup", STRATEGY_SETUPS)
@pytest.mark.parametrize("k", [1, 2])
def test_one_gradient_sized_reduce_per_update_and_no_broadcast(runs, setup, k):
    """Traced steps: per device, the update micro-step all-reduces the gradients
    once (with the logged loss in the same collective); other micro-steps reduce
    nothing; no step broadcasts or copies more than 1% of the parameters."""
    _, record = runs(setup, TRACED[k])
    traffic = record["traffic"]
    assert len(traffic) == k * TRACED[k][3]
    for i, step in enumerate(traffic):
        if i % k == k - 1:
            assert NUM_PARAMS <= step["reduce"] <= NUM_PARAMS + 4, (i, step)
        else:
            assert step["reduce"] < 0.01 * NUM_PARAMS, (i, step)
        assert step["broadcast"] + step["copy"] < 0.01 * NUM_PARAMS, (i, step)


# The families' gradients (encoder_gradient_ulps): ELECTRA's longest chain is the
# discriminator's (width 32, 1 layer, 8 tokens), with the embedding projection (16), the
# generator's MLM output over the vocab (40) and the two heads' dense layers (16, 32);
# XLNet's has the relative positions' projection (32) and the LM output (40) besides;
# both sum a weight's gradient over the batch's 64 tokens.
_FAMILY_GRADIENT_ULPS = {
    "electra": encoder_gradient_ulps(32, 64, ELECTRA_SEQ, 2, 1, GLOBAL_BATCH * ELECTRA_SEQ,
                                     [16, 40, 16, 32]),
    "xlnet": encoder_gradient_ulps(32, 64, ELECTRA_SEQ, 2, 1, GLOBAL_BATCH * ELECTRA_SEQ,
                                   [32, 40]),
}


@pytest.mark.parametrize("family, scopes", [
    ("electra", {"electra", "generator", "generator_predictions", "discriminator_predictions"}),
    ("xlnet", {"model"})])
def test_family_update_is_one_reduce_and_reaches_the_single_device_weights(runs, family,
                                                                           scopes):
    """ELECTRA and XLNet under mirrored: each update all-reduces every gradient once
    (ELECTRA: the shared embedding tables once, their two readers' gradients summed before
    it; XLNet: the embedding table read by the input and the tied LM head, the
    feed-forward and attention kernels read by both streams; the logged loss in the same
    collective), broadcasts and copies nothing, and ends at the single device's weights
    (kernel-path sensitive: to a bound, the replicas' batches being half the device's)."""
    got, record = runs("mirrored", family)
    expected, _ = runs("single", family)
    num_params = record["num_params"]
    # Reducing each reader's gradient apart would add the shared tables (40 x 16 or
    # 40 x 32 words alone) to the count.
    assert num_params > 10000
    assert len(record["traffic"]) == ELECTRA_UPDATES
    for step in record["traffic"]:
        assert num_params <= step["reduce"] <= num_params + 4, step
        assert step["broadcast"] + step["copy"] < 0.01 * num_params, step
    assert sorted(got) == sorted(expected)
    names = [n for n in expected if not n.startswith("initial/")]
    assert {n.split("/")[0] for n in names} == scopes
    # float32_bounds case 2: the replicas' halves of the batch and their mean against one
    # device's batch; AdamW, the global norm of all gradients clipped, 2 updates.
    drift = weight_drift(_learning_rates(ELECTRA_UPDATES), _FAMILY_GRADIENT_ULPS[family],
                         max(magnitude(expected[n]) for n in expected),
                         clip_width=num_params, weight_decay=0.01)
    moved = {}
    for name in names:
        # the same assignments of the same drawn values on both setups: exact
        np.testing.assert_array_equal(got["initial/" + name], expected["initial/" + name])
        assert_close(got[name], expected[name], drift / tolerance(1, magnitude(expected[name])),
                     err_msg=name)
        scope = name.split("/")[0]
        change = np.abs(expected[name] - expected["initial/" + name]).max()
        moved[scope] = max(moved.get(scope, 0.0), change)
    # the compared weights trained, every part, far beyond the bound
    assert min(moved.values()) > 100 * drift, moved
