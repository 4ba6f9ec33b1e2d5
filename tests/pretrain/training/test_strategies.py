"""Strategy switching: auto/tpu resolution, TPUEstimator's spec plumbing on CPU, mirrored on
two logical CPUs (matches one device), multi_worker with two local processes on loopback.
The TPU-only branches (cross-replica sum, scaffold) are tested in test_tpu_path.py."""
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.cli_runs import free_ports
from tests.testutil.float32_bounds import magnitude, summation_ulps, tolerance
from pretrain import run_pretraining
from pretrain.models import registry
from pretrain.models.bert import modeling
from pretrain.training import input_pipeline, pretraining_model_fn
from pretrain.training import estimator_runtime
from pretrain.training import strategy as strategy_lib
from tests.testutil.pretrain_data import (ARGMAX_ELECTRA, assert_trained_alike, encoder_gradient_ulps,
                               make_examples, moment_ulps, tiny_config,
                               weight_drift, write_records)
from conftest import REPO_ROOT

REPO = str(REPO_ROOT)
TESTS = os.path.join(REPO, "tests")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("strategy_data")
    return {"root": root, "cfg": tiny_config(root / "cfg.json"),
            "electra_cfg": tiny_config(root / "electra.json", **ARGMAX_ELECTRA),
            "a": write_records(root / "a.tfrecord", make_examples(16, seed=1)),
            "one_batch": write_records(root / "one.tfrecord", make_examples(8, seed=1)),
            "b": write_records(root / "b.tfrecord.gz", make_examples(16, seed=2),
                               compression="gzip")}


def _opts(data, out, **kw):
    opts = dict(bert_config_file=data["cfg"], input_file=data["a"], output_dir=str(out),
                do_train=True, max_seq_length=16, max_predictions_per_seq=4,
                train_batch_size=8, eval_batch_size=8, learning_rate=3e-3, num_train_steps=3,
                num_warmup_steps=0, log_every_n_steps=1, random_seed=1, shuffle_buffer=0)
    opts.update(kw)
    return opts


def _run_python(code, env_extra=None, timeout=240):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS]),
               TF_CPP_MIN_LOG_LEVEL="2", **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _result(proc, timeout=240, with_log=False):
    out, _ = proc.communicate(timeout=timeout)
    lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, out[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    return (result, out) if with_log else result


def test_resolve_strategy_choices():
    assert strategy_lib.resolve_strategy("auto") == "cpu"  # no GPU, no TF_CONFIG here
    assert strategy_lib.resolve_strategy("auto", use_tpu=True) == "tpu"
    assert strategy_lib.resolve_strategy("mirrored") == "mirrored"
    with pytest.raises(ValueError, match="--use_tpu implies --strategy=tpu"):
        strategy_lib.resolve_strategy("mirrored", use_tpu=True)
    with pytest.raises(ValueError, match="not one of auto, cpu"):
        strategy_lib.resolve_strategy("horovod")
    with pytest.raises(ValueError, match="divisible by the 3 replicas"):
        strategy_lib.per_replica_batch_size(8, 3)


def test_tpu_refuses_local_paths(data, tmp_path, monkeypatch):
    for variable in strategy_lib.TPU_NAME_ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match=r"--input_file=.*a\.tfrecord is a local path.*gs://"):
        run_pretraining.run(_opts(data, "gs://bucket/out", use_tpu=True, tpu_name="t1"))
    with pytest.raises(ValueError, match="needs --tpu_name: --tpu_name=local on a TPU VM"):
        run_pretraining.run(_opts(data, "gs://bucket/out", strategy="tpu"))
    with pytest.raises(ValueError, match=r"--output_dir=.* is a local path"):
        run_pretraining.run(_opts(data, tmp_path / "o", input_file="gs://b/x.tfrecord",
                                  strategy="tpu", tpu_name="t1"))


@pytest.mark.parametrize("family", ["bert", "electra"])
def test_tpu_run_config_and_estimator_spec_plumbing_on_cpu_in_bf16(data, tmp_path, family):
    """TPUEstimator's CPU emulation (a test device only: no flag reaches it) runs the
    TPUEstimatorSpec train/eval plumbing and params["batch_size"]; none of the TPU
    branches, which tests/pretrain/training/test_tpu_path.py runs under a faked TPU context. ELECTRA's
    eval metrics (upstream's names) go through TPUEstimator's (metric_fn, tensors) too.
    Kernel-path sensitive: its bf16 matmuls need bf16 kernels (oneDNN's on an avx512_bf16
    CPU, which abort when ONEDNN_MAX_CPU_ISA caps it below them; hence bf16 in the name,
    which tests/testutil/kernel_paths.py deselects on that path)."""
    settings = strategy_lib.make_run_config(
        "tpu", str(tmp_path / "grpc"), iterations_per_loop=2, num_tpu_cores=8,
        tpu_name="grpc://127.0.0.1:8470")  # an address needs no lookup; nothing connects
    tpu_config = estimator_runtime.run_config("tpu", settings)
    assert isinstance(tpu_config, tf.estimator.tpu.RunConfig)
    assert tpu_config.master == "grpc://127.0.0.1:8470"
    assert (tpu_config.tpu_config.iterations_per_loop, tpu_config.tpu_config.num_shards) == (2, 8)
    assert (tpu_config.tpu_config.per_host_input_for_training
            == tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2)

    config = registry.read_config(data["electra_cfg" if family == "electra" else "cfg"])
    sentence_head = registry.family_of(config).sentence_and_span_heads
    run_settings = strategy_lib.RunSettings(model_dir=str(tmp_path), save_checkpoints_steps=100,
                                            iterations_per_loop=2, num_tpu_cores=1)
    model_fn = pretraining_model_fn.model_fn_builder(
        config, learning_rate=3e-3, num_train_steps=4, precision="bf16",
        use_one_hot_embeddings=True, use_sentence_head=sentence_head)
    estimator = estimator_runtime.build_estimator("tpu", model_fn, run_settings,
                                                  train_batch_size=8, eval_batch_size=8,
                                                  _tpu_estimator_on_cpu=True)
    assert isinstance(estimator, tf.estimator.tpu.TPUEstimator)
    train_fn = input_pipeline.input_fn_builder(data["a"], 16, 4, is_training=True, seed=1)
    estimator.train(train_fn, max_steps=4)
    eval_fn = input_pipeline.input_fn_builder(data["a"], 16, 4, is_training=False)
    results = estimator.evaluate(eval_fn, steps=1)
    assert results["global_step"] == 4
    assert 0.0 <= results["masked_lm_accuracy"] <= 1.0
    if sentence_head:
        assert np.isfinite(results["sentence_loss"])
    else:  # upstream's names; one eval batch: 8 examples x 4 masked positions
        for name in ("disc_auc", "disc_accuracy", "disc_precision", "disc_recall",
                     "sampled_masked_lm_accuracy"):
            assert 0.0 <= results[name] <= 1.0, name
        assert results["masked_lm_num_targets"] == 32.0
        assert np.isfinite(results["disc_loss"]) and "sentence_loss" not in results


MIRRORED_SCRIPT = """
import glob, json, os, shutil
import tensorflow as tf2
cpu = tf2.config.list_physical_devices("CPU")[0]
tf2.config.set_logical_device_configuration(
    cpu, [tf2.config.LogicalDeviceConfiguration(), tf2.config.LogicalDeviceConfiguration()])
from absl import logging
logging.set_verbosity(logging.INFO)
tf2.get_logger().setLevel("INFO")
from pretrain import run_pretraining
from tests.testutil.pretrain_data import rename_slots_to_legacy
opts, resume_opts, kept = {OPTS}, {RESUME_OPTS}, {KEPT!r}
print("RESULT " + json.dumps(run_pretraining.run(opts)), flush=True)
# The trained checkpoint as it was, for the comparison; then the resume from legacy slot names.
os.makedirs(kept)
for path in glob.glob(os.path.join(opts["output_dir"], "model.ckpt-3.*")):
    shutil.copy(path, kept)
rename_slots_to_legacy(opts["output_dir"])
print("RESULT " + json.dumps(run_pretraining.run(resume_opts)), flush=True)
"""


def _save_initial_weights(config_file, path):
    """One shared starting point for both runs (weights only, like --init_checkpoint)."""
    config = modeling.BertConfig.from_json_file(config_file)
    with tf.Graph().as_default():
        feats = {k: tf.zeros([2, 16], tf.int32) for k in ("input_ids", "input_mask",
                                                           "segment_ids")}
        feats.update(masked_lm_positions=tf.zeros([2, 4], tf.int32),
                     masked_lm_ids=tf.zeros([2, 4], tf.int32), masked_lm_weights=tf.ones([2, 4]),
                     next_sentence_labels=tf.zeros([2, 1], tf.int32))
        pretraining_model_fn.pretraining_losses(config, feats, True, True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, path)


@pytest.mark.parametrize("loop", [strategy_lib.resolve_training_loop("auto", "mirrored")])
def test_mirrored_two_logical_cpus_matches_single_device(data, tmp_path, loop):
    """3 steps mirrored vs on one device, in the runtime's default loop (the Estimator on
    2.15, the session loop elsewhere; the session loop's mirrored training on 2.15, against
    one device: test_collectives.py); then both resume for a 4th
    step, the mirrored run from its checkpoint with the slots renamed to the old names. One subprocess (the logical
    CPUs are set before TensorFlow starts) runs both mirrored steps while this process runs
    the single-device ones. Kernel-path sensitive: the replicas' batches of 4 against one
    device's 8 take other matmul blockings and sum orders, hence weight_drift's bound. The
    data is one batch, so every step trains on it: the single-device rerun continues its
    input where it stopped, the mirrored one reads its (distributed) input anew."""
    init = _save_initial_weights(data["cfg"], str(tmp_path / "init.ckpt"))
    base = _opts(data, tmp_path, num_train_steps=3, train_batch_size=8, init_checkpoint=init,
                 training_loop=loop, input_file=data["one_batch"])
    mirrored_opts = dict(base, strategy="mirrored", output_dir=str(tmp_path / "mirrored"))
    # A mirrored run resumes from a checkpoint whose slots have the old names
    # (<var>/AdamWeightDecay, _1): restored through the mapping, written back as adam_m/v.
    # The resumed update also uses Adam's bias correction (its update count read on
    # each device), which must agree between the two as well.
    resume_opts = dict(mirrored_opts, num_train_steps=4, adam_bias_correction=True,
                       allow_schedule_change=True)  # 3 -> 4 updates
    proc = _run_python(MIRRORED_SCRIPT.format(OPTS=repr(mirrored_opts),
                                              RESUME_OPTS=repr(resume_opts),
                                              KEPT=str(tmp_path / "mirrored_step3")))
    single_result = run_pretraining.run(dict(base, strategy="cpu",
                                             output_dir=str(tmp_path / "cpu")))
    run_pretraining.run(dict(base, strategy="cpu", output_dir=str(tmp_path / "cpu"),
                             num_train_steps=4, adam_bias_correction=True,
                             allow_schedule_change=True))
    resumed_result, log = _result(proc, with_log=True)  # the last RESULT line; the first:
    first, _ = [l for l in log.splitlines() if l.startswith("RESULT ")]
    mirrored_result = json.loads(first[len("RESULT "):])
    assert mirrored_result["strategy"] == "mirrored"
    assert mirrored_result["training_loop"] == loop
    # The loop's own `loss = ...` line shows the global-batch mean, as the hook's does (it
    # SUMs what the replicas report; each reports its share of the mean).
    estimator_loss = float(re.search(r"loss = ([0-9.]+), step = 0", log).group(1))
    hook_loss = float(re.search(r"step 0: loss=([0-9.]+)", log).group(1))
    # Not a float32 tolerance but the hook's print: 4 decimals, half a unit off at most
    # (Estimator prints the float32 value); besides, the same two replica losses are summed
    # as two halves or averaged: 2 ulps.
    printed = 0.5e-4 + tolerance(summation_ulps(2) + 1, abs(hook_loss))
    assert abs(estimator_loss - hook_loss) <= printed, log[-3000:]
    assert mirrored_result["global_step"] == 3 == single_result["global_step"]
    mirrored = tf.train.load_checkpoint(str(tmp_path / "mirrored_step3" / "model.ckpt-3"))
    single = tf.train.load_checkpoint(str(tmp_path / "cpu" / "model.ckpt-3"))
    initial = tf.train.load_checkpoint(init)
    shapes = single.get_variable_to_shape_map()
    names = [n for n in shapes if n.startswith(("bert/", "cls/"))]
    assert len(names) > 40
    # float32_bounds case 2: two replicas' halves of the batch and their mean against one
    # device's batch of 8 (tiny_config: width 32, 2 layers, 16 tokens; the MLM head's
    # transform and vocab of 50, the pooler and the sentence head), bias-corrected AdamW (the
    # tool's default) at 3e-3 falling linearly over 3 updates, the global norm of all
    # weights' gradients clipped.
    weights = [n for n in names if not n.endswith(("/adam_m", "/adam_v"))]
    weight_scale = max(magnitude(initial.get_tensor(n)) for n in weights)
    gradient_ulps = encoder_gradient_ulps(32, 64, 16, 2, 2, 8 * 16, [32, 50, 32, 2])
    num_params = int(sum(np.prod(shapes[n]) for n in weights))
    learning_rates = [3e-3, 2e-3, 1e-3]
    drift = weight_drift(learning_rates, gradient_ulps, weight_scale, clip_width=num_params,
                         weight_decay=0.01, bias_correction=True)
    # m: the third update's gradients, taken at weights at most `drift` apart
    assert_trained_alike(mirrored, single, names, drift,
                         moment_ulps(gradient_ulps, drift, weight_scale, num_params))
    moved = np.abs(single.get_tensor("bert/pooler/dense/kernel")
                   - initial.get_tensor("bert/pooler/dense/kernel")).max()
    assert moved > 100 * drift  # the comparison is between trained weights

    assert resumed_result["global_step"] == 4
    mirrored = tf.train.load_checkpoint(str(tmp_path / "mirrored"))
    single = tf.train.load_checkpoint(str(tmp_path / "cpu"))
    assert "bert/pooler/dense/kernel/adam_v" in mirrored.get_variable_to_shape_map()
    # One more update (at 3e-3 * 1/4 of a 4-step schedule), bias-corrected as the others.
    resumed_drift = weight_drift(learning_rates + [7.5e-4], gradient_ulps, weight_scale,
                                 clip_width=num_params, weight_decay=0.01, bias_correction=True)
    assert_trained_alike(mirrored, single, names, resumed_drift,
                         moment_ulps(gradient_ulps, drift, weight_scale, num_params))


WORKER_SCRIPT = """
import json, sys
from pretrain import run_pretraining
opts = {OPTS}
print("RESULT " + json.dumps(run_pretraining.run(opts)), flush=True)
"""


def _multi_worker_run(opts, cluster):
    procs = [_run_python(WORKER_SCRIPT.format(OPTS=repr(opts)), env_extra={"TF_CONFIG": json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": i}})}) for i in range(2)]
    return [_result(p) for p in procs]


def test_multi_worker_two_local_processes(data, tmp_path):
    """Two workers on loopback train 3 steps in step, in the runtime's default loop (the
    Estimator's train_and_evaluate on 2.15, the session loop elsewhere; the session loop's
    multi-worker training on 2.15: test_collectives.py); only the chief (worker 0) saves.
    The session loop also resumes both workers from the chief's checkpoint to step 5."""
    loop = strategy_lib.resolve_training_loop("auto", "multi_worker")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    out = tmp_path / "mw"
    opts = _opts(data, out, input_file=f"{data['a']},{data['b']}", strategy="multi_worker",
                 num_train_steps=3, training_loop=loop, save_checkpoints_steps=3)
    results = _multi_worker_run(opts, cluster)
    assert [r["strategy"] for r in results] == ["multi_worker", "multi_worker"]
    assert [r["global_step"] for r in results] == [3, 3]
    assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-3")
    if loop == "estimator":
        return
    saved = sorted(tf.train.get_checkpoint_state(str(out)).all_model_checkpoint_paths)
    assert [os.path.basename(p) for p in saved] == ["model.ckpt-0", "model.ckpt-3"]
    at_3 = tf.train.load_variable(str(out), "bert/embeddings/word_embeddings")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    results = _multi_worker_run(dict(opts, num_train_steps=5, allow_schedule_change=True),
                                cluster)
    assert [r["global_step"] for r in results] == [5, 5]
    assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-5")
    at_5 = tf.train.load_variable(str(out), "bert/embeddings/word_embeddings")
    assert np.abs(at_5 - at_3).max() > 1e-4  # resumed and trained on


def test_graph_optimizer_switch_reaches_the_session_config(tmp_path, monkeypatch):
    """ZH_PRETRAIN_GRAPH_OPTIMIZER=off (the suite's setting) turns grappler off; unset, the
    sessions keep TensorFlow's default optimizer."""
    for value, off in (("off", True), ("OFF ", True), ("", False), ("on", False)):
        monkeypatch.setenv(strategy_lib.GRAPH_OPTIMIZER_VARIABLE, value)
        config = strategy_lib.make_run_config("cpu", str(tmp_path)).session_config
        assert config.graph_options.rewrite_options.disable_meta_optimizer is off, value
    monkeypatch.delenv(strategy_lib.GRAPH_OPTIMIZER_VARIABLE)
    config = strategy_lib.make_run_config("cpu", str(tmp_path)).session_config
    assert not config.graph_options.rewrite_options.disable_meta_optimizer
