"""One place that turns --strategy and --training_loop into what trains: pretraining and
fine-tuning share it.

    name = resolve_strategy(flags.strategy, use_tpu=flags.use_tpu)
    settings = make_run_config(name, output_dir, ...)
    trainer = build_trainer(name, model_fn, settings, train_batch_size=..., training_loop=...)

`trainer` is an Estimator (pretrain.training.estimator_runtime; TensorFlow <= 2.15) or the
toolkit's own session loop (pretrain.training.training_loop; any TensorFlow 2.x).

Strategies:
  cpu / gpu     one device.
  mirrored      `MirroredStrategy()` over all
                local GPUs (or logical CPUs); the GLOBAL train batch is split
                across replicas (see `per_replica_batch_size`).
  multi_worker  `MultiWorkerMirroredStrategy` (collective all-reduce); the
                cluster comes from the TF_CONFIG environment variable, which
                must be set identically (except task.index) on every worker.
                Estimator only (train_and_evaluate).
  tpu           `TPUEstimator(use_tpu=True)` + `TPUClusterResolver` (Estimator only),
                `iterations_per_loop`, bfloat16 and one-hot embedding lookups
                (the caller's model_fn handles the last two); paths must be
                gs:// URLs. The TPU comes from --tpu_name, else the TPU_NAME
                (or GKE's KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS) environment
                variable; `local` is the TPU of a TPU VM. `--use_tpu` is
                google-research/bert's spelling of `--strategy=tpu`.

Model functions receive `params["strategy"]` and `params["num_replicas"]`.

`ZH_PRETRAIN_GRAPH_OPTIMIZER=off` in the environment turns TensorFlow's graph
optimizer (grappler) off in the sessions made here. It spends seconds on every
new session whatever the model's size, and pays back only over many steps of a
real model: the test suite sets it for its tiny ones; training should not.
"""
import dataclasses
import json
import os

import tensorflow.compat.v1 as tf
from absl import logging

from common.cli_options import UserError

STRATEGIES = ("auto", "cpu", "gpu", "mirrored", "multi_worker", "tpu")
GRAPH_OPTIMIZER_VARIABLE = "ZH_PRETRAIN_GRAPH_OPTIMIZER"
# Where TPUClusterResolver looks for a TPU when it is given no name (GKE's first).
TPU_NAME_ENVIRONMENT = ("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_NAME")
TPU_NAME_HELP = ("--tpu_name=local on a TPU VM; for a TPU Node its name (with --tpu_zone/"
                 "--gcp_project when not this VM's) or its grpc://IP:8470 address; or set "
                 "the TPU_NAME environment variable")


def _tf_config_workers():
    """Number of worker/chief tasks in TF_CONFIG (0 when unset)."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        return 0
    try:
        cluster = json.loads(raw).get("cluster", {})
    except ValueError as err:
        raise UserError(f"TF_CONFIG is not valid JSON ({err}): {raw[:200]!r}") from err
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def resolve_strategy(name="auto", use_tpu=False):
    """A concrete strategy name; `auto` looks at TF_CONFIG and visible GPUs and logs its pick."""
    name = (name or "auto").lower()
    if name not in STRATEGIES:
        raise UserError(f"--strategy={name!r} is not one of {', '.join(STRATEGIES)}")
    if use_tpu:
        if name not in ("auto", "tpu"):
            raise UserError(f"--use_tpu implies --strategy=tpu, but --strategy={name} was given")
        return "tpu"
    if name != "auto":
        return name
    workers = _tf_config_workers()
    gpus = tf.config.list_physical_devices("GPU")
    if workers > 1:
        picked, why = "multi_worker", f"TF_CONFIG lists {workers} workers"
    elif len(gpus) > 1:
        picked, why = "mirrored", f"{len(gpus)} GPUs visible"
    elif len(gpus) == 1:
        picked, why = "gpu", "1 GPU visible"
    else:
        picked, why = "cpu", "no GPU visible"
    logging.info("--strategy=auto picked %s (%s)", picked, why)
    return picked


def make_distribution_strategy(name):
    """The tf.distribute strategy for `mirrored` / `multi_worker`, else None."""
    if name == "mirrored":
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
        if not devices:  # CPU-only: mirror over logical CPU devices (tests, debugging)
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=devices)
    if name == "multi_worker":
        if _tf_config_workers() < 1:
            raise UserError("--strategy=multi_worker needs TF_CONFIG with a cluster of workers, "
                            'e.g. {"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                            '"task": {"type": "worker", "index": 0}}')
        return tf.distribute.experimental.MultiWorkerMirroredStrategy(
            communication=tf.distribute.experimental.CollectiveCommunication.AUTO)
    return None


def num_replicas(strategy):
    return strategy.num_replicas_in_sync if strategy is not None else 1


def per_replica_batch_size(global_batch_size, replicas, flag_name="--train_batch_size"):
    """Global batch / replicas; refuses a batch that does not split evenly."""
    if global_batch_size % replicas:
        raise UserError(f"{flag_name}={global_batch_size} (the global batch) must be divisible "
                        f"by the {replicas} replicas in sync")
    return global_batch_size // replicas


def check_tpu_paths(**paths):
    """TPUs read and write only Cloud Storage: refuse local paths by flag name."""
    for flag, value in paths.items():
        for path in [p for p in str(value or "").split(",") if p.strip()]:
            if not path.strip().startswith("gs://"):
                raise UserError(
                    f"--{flag}={path.strip()} is a local path; a TPU worker cannot read or write "
                    "the local disk of this machine. Copy the data to a Cloud Storage bucket and "
                    "pass gs:// paths (e.g. gsutil -m cp -r ... gs://BUCKET/...).")


def resolve_tpu_name(tpu_name=None):
    """--tpu_name, else the TPU named by the environment; refuses to go on without one."""
    name = (tpu_name or "").strip()
    if not name:
        for variable in TPU_NAME_ENVIRONMENT:
            name = os.environ.get(variable, "").strip()
            if name:
                logging.info("TPU from the %s environment variable: %s", variable, name)
                break
    if not name:
        raise UserError(f"--strategy=tpu (or --use_tpu) needs --tpu_name: {TPU_NAME_HELP}. "
                        "Without a TPU choose another --strategy (cpu, gpu, mirrored, "
                        "multi_worker).")
    return name


def tpu_cluster_resolver(tpu_name=None, tpu_zone=None, gcp_project=None):
    """TPUClusterResolver for the TPU `resolve_tpu_name` finds; failures name the flag.

    `local` (a TPU VM) is checked for TPU cores here, as TPUEstimator would
    check them at its first step; a named TPU is looked up through the Cloud
    TPU API (needs the cloud-tpu-client package and GCE credentials).
    """
    name = resolve_tpu_name(tpu_name)
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            name, zone=tpu_zone, project=gcp_project)
        resolver.master()  # a named TPU is looked up now, not at the first step
    except (ValueError, RuntimeError, OSError) as err:
        raise UserError(f"--tpu_name={name}: the TPU cannot be resolved ({type(err).__name__}: "
                        f"{err}). Pass {TPU_NAME_HELP}.") from err
    if name == "local":
        from tensorflow.python.tpu import tpu_system_metadata  # pylint: disable=import-outside-toplevel
        metadata = tpu_system_metadata._query_tpu_system_metadata(  # pylint: disable=protected-access
            "", cluster_def=None, query_topology=False)
        if not metadata.num_cores:
            raise UserError("--tpu_name=local, but this machine has no TPU cores (devices: "
                            f"{', '.join(d.name for d in metadata.devices)}). Run on a TPU VM, "
                            f"or pass {TPU_NAME_HELP}.")
    return resolver


def graph_optimizer_off():
    """True when the environment says ZH_PRETRAIN_GRAPH_OPTIMIZER=off (any case/spacing)."""
    return os.environ.get(GRAPH_OPTIMIZER_VARIABLE, "").strip().lower() == "off"


TRAINING_LOOPS = ("auto", "estimator", "session")
# `auto`'s choice when set (estimator or session), e.g. to run a whole pipeline on either.
TRAINING_LOOP_VARIABLE = "ZH_PRETRAIN_TRAINING_LOOP"
TRAINING_LOOP_HELP = (
    "What runs the model functions: estimator (tf.estimator, TensorFlow <= 2.15 only; "
    "TPUEstimator for --strategy=tpu), session (the toolkit's own loop, "
    "pretrain.training.training_loop: any TensorFlow 2.x; every strategy but tpu), or auto: "
    f"${TRAINING_LOOP_VARIABLE} when set, else the Estimator where TensorFlow has it, else "
    "the session loop.")


def estimator_available():
    """True on TensorFlow <= 2.15, the last release with tf.estimator."""
    try:
        import tensorflow_estimator  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        return False
    return hasattr(tf, "estimator")


def available_training_loops():
    """The training loops this TensorFlow can run: session always, estimator up to 2.15."""
    return [loop for loop in TRAINING_LOOPS[1:] if loop != "estimator" or estimator_available()]


def resolve_training_loop(name, strategy_name, auto="estimator"):
    """`estimator` or `session` for --training_loop=name; UserError for a choice this
    TensorFlow or this strategy cannot run. auto: what `auto` picks when the variable is
    unset (the Estimator where TensorFlow has it, else the session loop; fine-tuning asks
    for `session`); the TPU always takes the Estimator."""
    name = (name or "auto").lower()
    if name not in TRAINING_LOOPS:
        raise UserError(f"--training_loop={name!r} is not one of {', '.join(TRAINING_LOOPS)}")
    needs_estimator = strategy_name == "tpu"
    if name == "auto":
        name = os.environ.get(TRAINING_LOOP_VARIABLE, "").strip().lower()
        if name and name not in TRAINING_LOOPS[1:]:
            raise UserError(f"{TRAINING_LOOP_VARIABLE}={name!r} is not one of "
                            f"{', '.join(TRAINING_LOOPS[1:])}")
        if not name or (needs_estimator and estimator_available()):
            name = auto if not needs_estimator else "estimator"
            if name == "estimator" and not estimator_available():
                name = "session"
    if name == "estimator" and not estimator_available():
        raise UserError(f"--training_loop=estimator needs TensorFlow <= 2.15 (tf.estimator); this "
                        f"is TensorFlow {tf.__version__}: use --training_loop=session"
                        + (f", which does not run --strategy={strategy_name}: that needs the "
                           "TensorFlow 2.15 runtime (Python <= 3.11)" if needs_estimator else ""))
    if name == "session" and needs_estimator:
        raise UserError("--strategy=tpu runs on TPUEstimator only, which needs the TensorFlow 2.15 "
                        "runtime (Python <= 3.11, tensorflow 2.15.1); the session loop has no "
                        "TPU path")
    return name


def make_session_config(use_xla=False, distribution=None):
    """The ConfigProto of every session a run makes (threads and devices fit the strategy)."""
    config = tf.ConfigProto(allow_soft_placement=True)
    if use_xla:
        config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    if graph_optimizer_off():
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    if distribution is not None and distribution.num_replicas_in_sync > 1:
        # Collective all-reduce ops block an inter-op thread per replica while
        # they wait for their peers; with the default pool (one per core) two
        # replicas on a 2-core machine deadlock. Leave room for the graph.
        threads = max(config.inter_op_parallelism_threads,
                      (os.cpu_count() or 1) + 4 * distribution.num_replicas_in_sync)
        config.inter_op_parallelism_threads = threads
        cpus = [d for d in distribution.extended.worker_devices if "CPU" in d.upper()]
        if len(cpus) > 1:
            # tf.Session only creates logical CPU devices it is told about;
            # without them soft placement would put every replica on CPU:0
            # and the collectives would wait forever for a second device.
            config.device_count["CPU"] = len(cpus)
    return config


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """Where and how a run saves, logs and places its work: what Estimator's RunConfig
    held, read by both training loops (and by model functions as their `config`)."""
    model_dir: str
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    keep_checkpoint_every_n_hours: float = 10000.0
    log_step_count_steps: int = 100
    save_summary_steps: int = 100
    tf_random_seed: int = None
    session_config: object = None      # tf.ConfigProto
    save_graph_def: bool = True        # graph.pbtxt and model.ckpt-*.meta beside the
                                       # checkpoints (the session loop; the Estimator always)
    distribution: object = None        # a tf.distribute strategy (mirrored, multi_worker)
    tpu_cluster: object = None         # TPUClusterResolver (tpu)
    iterations_per_loop: int = 1000    # tpu
    num_tpu_cores: int = 8             # tpu

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def make_run_config(strategy_name, output_dir, save_checkpoints_steps=1000, keep_checkpoint_max=5,
                    log_step_count_steps=100, iterations_per_loop=1000, tpu_name=None,
                    tpu_zone=None, gcp_project=None, num_tpu_cores=8, use_xla=False,
                    session_config=None, tf_random_seed=None, distribution=None,
                    save_summary_steps=100, tpu_cluster=None):
    """RunSettings for the resolved strategy.

    `distribution` may pass a ready strategy (else one is created). For `tpu`,
    `tpu_cluster` may pass a ready `tpu_cluster_resolver(...)` (else one is made from
    tpu_name / tpu_zone / gcp_project).
    """
    if strategy_name == "tpu":
        if tpu_cluster is None:
            tpu_cluster = tpu_cluster_resolver(tpu_name, tpu_zone, gcp_project)
        distribution = None
    elif distribution is None:
        distribution = make_distribution_strategy(strategy_name)
    if session_config is None:
        session_config = make_session_config(use_xla, distribution)
    return RunSettings(
        model_dir=output_dir, save_checkpoints_steps=save_checkpoints_steps,
        keep_checkpoint_max=keep_checkpoint_max, log_step_count_steps=log_step_count_steps,
        save_summary_steps=save_summary_steps, tf_random_seed=tf_random_seed,
        session_config=session_config, distribution=distribution, tpu_cluster=tpu_cluster,
        iterations_per_loop=iterations_per_loop, num_tpu_cores=num_tpu_cores)


def build_trainer(strategy_name, model_fn, run_settings, params=None, train_batch_size=None,
                  eval_batch_size=None, training_loop="auto", auto_loop="estimator"):
    """What trains, evaluates and predicts with `model_fn` (pretrain.training.model_spec):
    an Estimator (estimator_runtime) or our session loop (training_loop), chosen by
    `training_loop` (TRAINING_LOOPS; auto_loop: what `auto` means, resolve_training_loop).
    Both take train(input_fn, max_steps, hooks, saving_listeners), evaluate(input_fn, steps,
    name), predict(input_fn, checkpoint_path) and carry model_dir, params and
    get_variable_value(name). Model functions receive params["strategy"],
    params["num_replicas"] and params["training_loop"]."""
    loop = resolve_training_loop(training_loop, strategy_name, auto_loop)
    params = dict(params or {}, training_loop=loop)
    if strategy_name != "tpu":  # TPUEstimator sets its own
        replicas = num_replicas(run_settings.distribution)
        if train_batch_size:
            per_replica_batch_size(train_batch_size, replicas)
        params.update(strategy=strategy_name, num_replicas=replicas, use_tpu=False,
                      train_batch_size=train_batch_size, eval_batch_size=eval_batch_size)
    if loop == "estimator":
        from pretrain.training import estimator_runtime  # pylint: disable=import-outside-toplevel
        return estimator_runtime.build_estimator(
            strategy_name, model_fn, run_settings, params=params,
            train_batch_size=train_batch_size, eval_batch_size=eval_batch_size)
    from pretrain.training import training_loop as loop_lib  # pylint: disable=import-outside-toplevel
    return loop_lib.TrainingLoop(model_fn, run_settings, params)


def input_batch_size(params, mode_batch_key, input_context=None):
    """Batch size one input pipeline must produce.

    TPUEstimator sets params["batch_size"] (per host/shard). Under a
    tf.distribute strategy Estimator gives each replica a whole batch from the
    input_fn, so it must produce global / replicas.
    """
    if "batch_size" in params:
        return int(params["batch_size"])
    global_batch = int(params[mode_batch_key])
    if input_context is not None:
        return per_replica_batch_size(global_batch, input_context.num_replicas_in_sync)
    return global_batch
