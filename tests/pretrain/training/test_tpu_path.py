"""The TPU path, run on CPU: what `--strategy=tpu` builds, and the branches only a TPU takes.

No TPU is available, so the TPU-only branches run under a faked TPU context:
`tpu_function.tpu_shard_context(8)` (what TPUEstimator's rewrite sets around
the model_fn) with `tf.tpu.cross_replica_sum` replaced by a function that
returns what 8 shards holding the given per-shard values would sum to. The
graph then executes on CPU, and an 8-shard update must equal the single-device
update. Separately, the model_fn is built (not run) inside TensorFlow's real
`tpu.shard`, with the real CrossReplicaSum op.
"""
import collections
import contextlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.tpu import tpu as tpu_lib
from tensorflow.python.tpu import tpu_function

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.models import registry
from pretrain.training import optimization, pretraining_model_fn
from pretrain.training import strategy as strategy_lib
from pretrain.training.model_spec import ModeKeys
from tests.testutil.float32_bounds import assert_close, magnitude, summation_ulps, tolerance
from tests.testutil.pretrain_data import (ARGMAX_ELECTRA, encoder_gradient_ulps, make_examples, norm_ulps,
                               tiny_config, weight_drift, write_records)

SHARDS = 8
SEQ, PREDS, BATCH = 8, 2, 2


class FakedShardSum:
    """Stands in for tf.tpu.cross_replica_sum: shard j holds `value * scales[j]`.

    With all scales 1 the shards are identical, so the sum is SHARDS * value.
    Every call is recorded; the result is an op named `faked_cross_replica_sum`.
    """

    def __init__(self, scales=(1.0,) * SHARDS):
        self.scales = tuple(scales)
        self.calls = []

    def __call__(self, value, group_assignment=None, name=None):
        del group_assignment, name
        self.calls.append(value)
        return tf.identity(value * sum(self.scales), name="faked_cross_replica_sum")


@pytest.fixture(autouse=True)
def _no_tpu_in_environment(monkeypatch):
    for variable in strategy_lib.TPU_NAME_ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)


@contextlib.contextmanager
def faked_tpu(monkeypatch, shard_sum):
    """TPU shard context of SHARDS shards whose cross_replica_sum is `shard_sum`."""
    monkeypatch.setattr(tf.tpu, "cross_replica_sum", shard_sum)
    with tpu_function.tpu_shard_context(SHARDS):
        yield


# --- cross_replica_mean / build_train_op(use_tpu=True) -----------------------------------

def test_cross_replica_mean_on_tpu_sums_over_shards_and_divides(monkeypatch):
    values = [np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, np.float32(0.75)]
    shard_sum = FakedShardSum()
    with tf.Graph().as_default():
        with faked_tpu(monkeypatch, shard_sum):
            means = optimization.cross_replica_mean([tf.constant(v) for v in values],
                                                    use_tpu=True)
        with tf.Session() as sess:
            got = sess.run(means)
    assert len(shard_sum.calls) == 2  # one cross_replica_sum per tensor
    for value, mean in zip(values, got):
        np.testing.assert_array_equal(mean, value)  # 8 identical shards: sum / 8 == value


X = np.random.RandomState(0).normal(size=(4, 6, 5)).astype(np.float32)  # 4 batches [6, 5]
Y = np.random.RandomState(1).normal(size=(4, 6, 3)).astype(np.float32)
W0 = np.random.RandomState(2).normal(scale=0.5, size=(5, 3)).astype(np.float32)


def _train_linear(k, updates, tpu=None, optimizer="adamw"):
    """Trains y = x W + b (squared error) for `updates` updates of k micro-batches.

    `tpu`: None (one device) or (monkeypatch, shard_sum) for build_train_op(use_tpu=True)
    under a faked TPU. Micro-batch i of the run is X[i % 4]. Returns
    (W, b, grad_norm per micro-step, logged loss per micro-step).
    """
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        kernel = tf.get_variable("dense/kernel", initializer=W0)
        bias = tf.get_variable("dense/bias", initializer=tf.zeros([3]))
        batch = tf.cast(tf.mod(step, len(X)), tf.int32)
        predictions = tf.matmul(tf.gather(X, batch), kernel) + bias
        loss = tf.reduce_mean(tf.square(predictions - tf.gather(Y, batch)))
        context = faked_tpu(*tpu) if tpu else contextlib.nullcontext()
        with context:
            out = optimization.build_train_op(
                loss, 0.05, num_train_steps=20, num_warmup_steps=0, optimizer=optimizer,
                gradient_accumulation_steps=k, use_tpu=tpu is not None,
                log_scalars={"loss": loss})
        norms, losses = [], []
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            for _ in range(k * updates):
                _, norm, logged = sess.run([out.train_op, out.grad_norm, out.logged["loss"]])
                norms.append(norm)
                losses.append(logged)
            return (*sess.run([kernel, bias]), np.array(norms), np.array(losses))


# _train_linear's gradients (float32_bounds case 2): x @ W (5 terms), the micro-batch's 6
# rows, and four elementwise roundings (residual, 2 / 18, the mean over micro-batches);
# its loss sums 5 terms, then the 18 of the mean; its global norm takes 18 gradients.
LINEAR_GRADIENT_ULPS = summation_ulps(5, 6) + 4
LINEAR_LOSS_ULPS = summation_ulps(5, 18) + 2


@pytest.mark.parametrize("k,optimizer", [(1, "adamw"), (2, "lamb")])
def test_tpu_update_on_8_identical_shards_equals_single_device(monkeypatch, k, optimizer):
    """The faked sum (x 8) and the mean (/ 8) are exact in float32, so the two runs apply
    the same arithmetic to the same values (observed: bit for bit); but they are two graphs
    (a reduce on every micro-step against accumulation first), whose kernels may differ, so
    the bound is that of another evaluation order: kernel-path sensitive."""
    single = _train_linear(k, updates=3, optimizer=optimizer)
    shard_sum = FakedShardSum()
    on_tpu = _train_linear(k, updates=3, tpu=(monkeypatch, shard_sum), optimizer=optimizer)
    # The gradients of both variables and the stacked logged scalars: one reduce each.
    assert len(shard_sum.calls) == 3
    assert [c.shape.as_list() for c in shard_sum.calls] == [[5, 3], [3], [1]]
    learning_rates = [0.05 * (1 - u / 20) for u in range(3)]  # build_train_op's schedule
    weight_scale = max(magnitude(W0), magnitude(single[0]), magnitude(single[1]))
    lamb_norm = 0.0
    if optimizer == "lamb":  # the kernel's norm, grown by lr of itself at most per update
        lamb_norm = np.linalg.norm(W0) * np.prod([1 + lr for lr in learning_rates])
    drift = weight_drift(learning_rates, LINEAR_GRADIENT_ULPS, weight_scale, clip_width=18,
                         lamb_norm=lamb_norm, lamb_width=15 if lamb_norm else 0,
                         weight_decay=0.01)
    assert np.abs(single[0] - W0).max() > 1000 * drift  # the compared weights did train
    drift_ulps = drift / tolerance(1, weight_scale)  # moves gradients and losses as much
    bounds = {"kernel": drift / tolerance(1, magnitude(single[0])),
              "bias": drift / tolerance(1, magnitude(single[1])),
              "grad_norm": LINEAR_GRADIENT_ULPS + norm_ulps(18) + drift_ulps,
              "loss": LINEAR_LOSS_ULPS + drift_ulps}
    for name, a, b in zip(("kernel", "bias", "grad_norm", "loss"), single, on_tpu):
        assert_close(b, a, bounds[name], err_msg=name)


def test_tpu_update_uses_the_reduced_values(monkeypatch):
    """Shards holding 1x..8x the gradient: their mean is 4.5x, which grad_norm and the
    logged loss must show (they come from what cross_replica_sum returned)."""
    single = _train_linear(1, updates=1)
    on_tpu = _train_linear(1, updates=1, tpu=(monkeypatch, FakedShardSum(range(1, 9))))
    # One update at most, so both norms and losses come from the same weights: x 36 rounds
    # once (/ 8 is exact), and the norm of 36 g / 8 rounds its own sum as norm_ulps(18).
    expected_norm, expected_loss = (4.5 * single[i].astype(np.float64) for i in (2, 3))
    assert_close(on_tpu[2], expected_norm, norm_ulps(18) + 1, err_msg="grad_norm")
    assert_close(on_tpu[3], expected_loss, 1, err_msg="logged loss")


# --- the pretraining model_fn on TPU: scaffold_fn and the whole train step ---------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory, request):
    """A 1-layer width-16 config (BERT with its sentence head, or ELECTRA: generator and
    discriminator, argmax replacements so that both runs sample alike), one batch of
    features and a checkpoint of random weights."""
    root = tmp_path_factory.mktemp("tpu_path")
    extra = ARGMAX_ELECTRA if getattr(request, "param", "bert") == "electra" else {}
    config = registry.read_config(
        tiny_config(root / "cfg.json", hidden=16, layers=1, max_position=16, **extra))
    sentence_head = registry.family_of(config).sentence_and_span_heads
    examples = make_examples(BATCH, max_seq_length=SEQ, max_predictions_per_seq=PREDS)
    features = {name: np.array([e[name] for e in examples]) for name in examples[0]}
    features["masked_lm_weights"] = features["masked_lm_weights"].astype(np.float32)
    with tf.Graph().as_default():
        pretraining_model_fn.pretraining_losses(config, _constants(features), True,
                                                sentence_head)
        rng = np.random.RandomState(3)
        with tf.Session() as sess:
            for var in tf.global_variables():
                var.load(rng.normal(scale=0.3, size=var.shape.as_list()).astype(np.float32),
                         sess)
            prefix = tf.train.Saver().save(sess, str(root / "init.ckpt"))
    return {"root": root, "config": config, "features": features, "checkpoint": prefix,
            "sentence_head": sentence_head}


def _constants(features):
    return {name: tf.constant(value) for name, value in features.items()}


def _model_fn(tiny):
    return pretraining_model_fn.model_fn_builder(
        tiny["config"], init_checkpoint=tiny["checkpoint"], learning_rate=1e-2,
        num_train_steps=10, num_warmup_steps=0, precision="fp32",
        use_sentence_head=tiny["sentence_head"])


def _weights(sess):
    return {v.op.name: value for v, value in zip(tf.trainable_variables(),
                                                 sess.run(tf.trainable_variables()))}


@pytest.mark.parametrize("tiny", ["bert", "electra"], indirect=True)
def test_tpu_model_fn_scaffold_restores_checkpoint_and_trains_like_one_device(tiny,
                                                                              monkeypatch):
    """scaffold_fn restores the checkpoint (exactly), and two steps on the faked TPU end
    where one device's do; kernel-path sensitive (one-hot matmuls against gathers, two
    graphs; with Eigen kernels the device also takes the fused sparse cross-entropy where
    the TPU takes the one-hot one: 82 ulps of 610 there, 0 with oneDNN), to weight_drift's
    bound."""
    checkpoint = tf.train.load_checkpoint(tiny["checkpoint"])
    steps = 2
    with tf.Graph().as_default():  # one device, the same checkpoint
        spec = _model_fn(tiny)(_constants(tiny["features"]), None, ModeKeys.TRAIN,
                               {"strategy": "cpu", "num_replicas": 1})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(spec.train_op)
            single = _weights(sess)

    shard_sum = FakedShardSum()
    with tf.Graph().as_default():
        with faked_tpu(monkeypatch, shard_sum):
            spec = _model_fn(tiny)(_constants(tiny["features"]), None,
                                   ModeKeys.TRAIN,
                                   {"strategy": "tpu", "use_tpu": True, "batch_size": BATCH})
        assert spec.scaffold_fn is not None  # TPUEstimator's form: weights loaded on TPU
        names = [v.op.name for v in tf.trainable_variables()]
        assert len(shard_sum.calls) == len(names) + 1  # every gradient + the logged scalars
        with tf.Session() as sess:
            # On TPU the checkpoint is read by scaffold_fn, on the host: until
            # TPUEstimator calls it, the variables keep their own initializers.
            sess.run(tf.global_variables_initializer())
            before = _weights(sess)
            assert all(not np.array_equal(before[n], checkpoint.get_tensor(n)) for n in names)
            scaffold = spec.scaffold_fn()
            assert isinstance(scaffold, tf.train.Scaffold)
            sess.run(tf.global_variables_initializer())
            for name, value in _weights(sess).items():
                np.testing.assert_array_equal(value, checkpoint.get_tensor(name), err_msg=name)
            for _ in range(steps):
                sess.run(spec.train_op)
            on_tpu = _weights(sess)
            assert sess.run(tf.train.get_global_step()) == steps
    moved = {}
    for name in names:  # per top scope: bert, cls; electra, generator, both heads
        scope = name.split("/")[0]
        change = np.abs(on_tpu[name] - checkpoint.get_tensor(name)).max()
        moved[scope] = max(moved.get(scope, 0.0), change)
    assert len(moved) == (2 if tiny["sentence_head"] else 4)
    # One-hot embeddings on TPU against gathers on one device (float32_bounds case 2): the
    # one-hot matmul's forward is exact (one nonzero product per sum), its gradient sums
    # the batch's 16 tokens in another order than the gather's segment sum; the rest is
    # the same ops on the same shapes (x 8 / 8 exact), taken as another order too. Width
    # 16, 1 layer, 8 tokens; the MLM output over 50 ids, an embedding projection, the heads.
    gradient_ulps = encoder_gradient_ulps(16, 32, SEQ, 2, 1, BATCH * SEQ, [16, 50, 16, 16])
    weight_scale = max(magnitude(checkpoint.get_tensor(n)) for n in names)
    num_params = int(sum(single[n].size for n in names))
    drift = weight_drift([1e-2, 9e-3], gradient_ulps, weight_scale, clip_width=num_params,
                         weight_decay=0.01)
    assert min(moved.values()) > 100 * drift, moved  # trained far beyond the bound
    for name in names:
        assert_close(on_tpu[name], single[name], drift / tolerance(1, magnitude(single[name])),
                     err_msg=name)


@pytest.mark.parametrize("tiny", ["bert"], indirect=True)  # ELECTRA: the faked TPU above
def test_tpu_model_fn_builds_inside_tensorflows_tpu_shard(tiny):
    """TensorFlow's own TPU rewrite context (graph only: no TPU to run it on): the
    model_fn builds there, with one real CrossReplicaSum per gradient + 1 for the scalars."""
    model_fn = _model_fn(tiny)
    specs = []

    def computation():
        spec = model_fn(_constants(tiny["features"]), None, ModeKeys.TRAIN,
                        {"strategy": "tpu", "use_tpu": True, "batch_size": BATCH})
        specs.append(spec)
        with tf.control_dependencies([spec.train_op]):
            return tf.identity(spec.loss)

    with tf.Graph().as_default() as graph:
        tpu_lib.shard(computation, num_shards=SHARDS)
        op_types = collections.Counter(op.type for op in graph.get_operations())
        assert op_types["TPUReplicateMetadata"] == 1
        assert op_types["CrossReplicaSum"] == len(tf.trainable_variables()) + 1
        assert specs[0].scaffold_fn is not None  # init_checkpoint deferred to the host


# --- the command line: --strategy=tpu / --use_tpu always mean TPUEstimator(use_tpu=True) ----

class _Built(Exception):
    """Raised instead of training, carrying what run_pretraining built."""


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    root = tmp_path_factory.mktemp("tpu_cli")
    return {"cfg": tiny_config(root / "cfg.json"),
            "data": write_records(root / "a.tfrecord", make_examples(8, seed=1))}


def _cli_opts(records, tmp_path, **kw):
    opts = dict(bert_config_file=records["cfg"], input_file=records["data"],
                output_dir=str(tmp_path / "out"), do_train=True, train_batch_size=8,
                num_train_steps=2, num_warmup_steps=0)
    opts.update(kw)
    return opts


@pytest.mark.parametrize("choice", [{"strategy": "tpu"}, {"use_tpu": True}],
                         ids=["strategy_tpu", "use_tpu"])
def test_cli_tpu_choice_builds_tpu_estimator_on_the_named_tpu(records, tmp_path, monkeypatch,
                                                              choice):
    # Local files stand in for gs:// ones; a grpc address needs no lookup (nothing connects
    # to it: training is replaced by capturing the estimator).
    monkeypatch.setattr(strategy_lib, "check_tpu_paths", lambda **paths: None)
    monkeypatch.setenv("TPU_NAME", "grpc://127.0.0.1:8470")

    def capture(opts, estimator, *args):
        raise _Built(opts, estimator)

    monkeypatch.setattr(run_pretraining, "_train_and_evaluate", capture)
    with pytest.raises(_Built) as built:
        run_pretraining.run(_cli_opts(records, tmp_path, **choice))
    opts, estimator = built.value.args
    assert isinstance(estimator, tf.estimator.tpu.TPUEstimator)
    assert estimator._ctx._use_tpu is True  # pylint: disable=protected-access
    assert estimator.params["use_tpu"] is True and estimator.params["strategy"] == "tpu"
    assert estimator.config.master == "grpc://127.0.0.1:8470"
    assert estimator.config.tpu_config.num_shards == 8
    assert opts.use_tpu and opts.tpu_name == "grpc://127.0.0.1:8470"  # no CPU-side hooks


@pytest.mark.parametrize("choice", [{"strategy": "tpu"}, {"use_tpu": True}],
                         ids=["strategy_tpu", "use_tpu"])
def test_cli_tpu_without_a_tpu_name_is_refused(records, tmp_path, choice):
    with pytest.raises(UserError, match=r"--strategy=tpu \(or --use_tpu\) needs --tpu_name: "
                                        r"--tpu_name=local on a TPU VM.*TPU_NAME"):
        run_pretraining.run(_cli_opts(records, tmp_path, **choice))


def test_tpu_names_that_do_not_resolve_are_refused_by_flag(records, tmp_path, monkeypatch):
    # Before any gs:// input is read (these files do not exist; reading them would fail
    # differently): this machine is no TPU VM.
    with pytest.raises(UserError, match="--tpu_name=local, but this machine has no TPU cores"):
        run_pretraining.run(_cli_opts(records, tmp_path, input_file="gs://no-bucket/x.tfrecord",
                                      output_dir="gs://no-bucket/out", strategy="tpu",
                                      tpu_name="local"))
    with pytest.raises(UserError, match="--tpu_name=local, but this machine has no TPU cores"):
        strategy_lib.make_run_config("tpu", str(tmp_path), tpu_name="local")
    # A TPU Node's name is looked up through GCE metadata; point it at a closed local port.
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    with pytest.raises(UserError, match="--tpu_name=my-tpu: the TPU cannot be resolved"):
        strategy_lib.make_run_config("tpu", str(tmp_path), tpu_name="my-tpu")
