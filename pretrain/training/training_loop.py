"""The toolkit's own training loop: model functions in a compat.v1 graph and session, on every
TensorFlow 2.x (tf.estimator left with 2.15).

    loop = TrainingLoop(model_fn, run_settings, params)     # strategy.build_trainer makes it
    loop.train(input_fn, max_steps, hooks=[...], saving_listeners=[...])
    results = loop.evaluate(input_fn, steps=None, name=None)  # {metric, "loss", "global_step"}
    for example in loop.predict(input_fn, checkpoint_path=None): ...
    predictor = loop.predictor(input_fn)                      # one graph, many checkpoints
    outputs = predictor.run(checkpoint)

It does what Estimator did, with the same public compat.v1 pieces, in the same order, so a
seeded run builds the same graph and trains to the same weights as the Estimator (a test
compares them on TensorFlow 2.15): the graph seed, the global step, the input on the CPU through
an initializable iterator, the model function, a `loss` summary, a sharded saver (unless the
model function put one in the SAVERS collection), then a MonitoredTrainingSession with the
caller's hooks, a NanTensorHook, a StopAtStepHook, the loss logged and summaries written
(training_hooks: fetched at every step, so every step runs one optimised graph) and a
CheckpointSaverHook carrying the saving listeners (step 0 is saved too). On one device the
checkpoints also hold the input position and the seed (pretrain.training.input_state), so a
rerun continues the data stream where the checkpoint was written. Under a tf.distribute strategy
(mirrored, multi_worker) the input is made per replica (`input_context`), the model function
runs once per replica, and the replicas' losses are summed (the model function reports its share
of the mean, as under the Estimator); a multi-worker run's session runs against this worker's
server and only the chief saves (`_worker_task`). Evaluation and prediction run on one device,
from the latest checkpoint or a given one; with no checkpoint the variables are initialised,
which loads an --init_checkpoint the model function names.
"""
import collections
import inspect
import os
import re

import tensorflow.compat.v1 as tf
from absl import logging
from tensorflow.python.training import training_util  # pylint: disable=no-name-in-module

from pretrain.models import random_draws
from pretrain.training import input_state, training_hooks
from pretrain.training.model_spec import ModeKeys


def _step_of(checkpoint):
    match = re.search(r"-(\d+)$", checkpoint or "")
    return int(match.group(1)) if match else None


def _split(result):
    """(features, labels) of an iterator's element: a dict, or a (features, labels) pair."""
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError(f"an input_fn's dataset yields features or (features, labels), "
                             f"not {len(result)} elements")
        return result[0], result[1]
    return result, None


class _RunAtStart(tf.train.SessionRunHook):
    """Runs `ops` once the session exists (iterator initializers)."""

    def __init__(self, make_ops):
        self._make_ops = make_ops
        self._ops = None

    def begin(self):
        self._ops = self._make_ops()

    def after_create_session(self, session, coord):
        del coord
        session.run(self._ops)


class _StopAfter(tf.train.SessionRunHook):
    """Requests a stop after `count` runs (an eval of `steps` batches)."""

    def __init__(self, count):
        self._count, self._done = count, 0

    def after_run(self, run_context, run_values):
        self._done += 1
        if self._done >= self._count:
            run_context.request_stop()


class _FinalValues(tf.train.SessionRunHook):
    """Fetches `tensors` when the session ends (also at the end of the input)."""

    def __init__(self, tensors):
        self._tensors, self.values = tensors, None

    def end(self, session):
        self.values = session.run(self._tensors)


class _WorkerTask(collections.namedtuple("_WorkerTask", "master is_chief")):
    """Where this process's session runs ("" in process) and whether it saves."""


def _worker_task(distribution):
    """The session target and chief role of this worker under a multi-worker collective
    strategy (TF_CONFIG; the strategy started this task's server when it was made); a
    single machine is its own chief."""
    resolver = getattr(distribution, "cluster_resolver", None)
    cluster = resolver.cluster_spec() if resolver is not None else None
    if not cluster or not cluster.jobs:
        return _WorkerTask("", True)
    task_type, task_id = resolver.task_type, resolver.task_id
    is_chief = task_type == "chief" or ("chief" not in cluster.jobs and task_id == 0)
    return _WorkerTask("grpc://" + cluster.task_address(task_type, task_id), is_chief)


class TrainingLoop:
    """train / evaluate / predict of a model function (see the module doc)."""

    def __init__(self, model_fn, settings, params=None):
        self._model_fn = model_fn
        self.config = settings
        self.model_dir = settings.model_dir
        self.params = dict(params or {})

    # ---- building blocks -------------------------------------------------------------------

    def _call_input_fn(self, input_fn, input_context=None):
        """input_fn(params[, input_context]) on the CPU, as Estimator calls it."""
        accepted = inspect.signature(input_fn).parameters
        kwargs = {"params": self.params} if "params" in accepted else {}
        if input_context is not None and "input_context" in accepted:
            kwargs["input_context"] = input_context
        with tf.device("/cpu:0"):
            return input_fn(**kwargs)

    def _features(self, input_fn):
        """(features, labels, [hook initialising the iterator], the iterator's resource)."""
        dataset = self._call_input_fn(input_fn)
        iterator = tf.data.make_initializable_iterator(dataset)
        features, labels = _split(iterator.get_next())
        return (features, labels, [_RunAtStart(lambda: iterator.initializer)],
                iterator._iterator_resource)  # pylint: disable=protected-access

    def _call_model_fn(self, features, labels, mode):
        spec = self._model_fn(features, labels, mode, self.params, self.config)
        if spec.mode != mode:
            raise ValueError(f"the model function returned a {spec.mode!r} spec for {mode!r}")
        return spec

    def _new_graph(self):
        graph = tf.Graph()
        with graph.as_default():
            if self.config.tf_random_seed is not None:
                tf.set_random_seed(self.config.tf_random_seed)
        return graph

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.model_dir)

    def get_variable_value(self, name):
        """The value of variable `name` in the latest checkpoint."""
        return tf.train.load_variable(self.latest_checkpoint(), name)

    # ---- train -----------------------------------------------------------------------------

    def _training_graph(self, input_fn):
        """(loss, train_op, the model's training hooks, input hooks) in the default graph;
        one device's input position is saved with the checkpoints (input_state)."""
        distribution = self.config.distribution
        if distribution is None:
            tf.train.get_or_create_global_step()
            features, labels, input_hooks, iterator = self._features(input_fn)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
            position = input_state.track(random_draws.graph_seed(), iterator, self.params)
            return spec.loss, spec.train_op, spec.training_hooks, input_hooks + [position]
        with distribution.scope():
            iterator = distribution.make_input_fn_iterator(
                lambda context: self._call_input_fn(input_fn, context))
            global_step = tf.train.get_or_create_global_step()
            # Read once here, not in each replica's thread (the optimizer reads it there).
            tf.add_to_collection(training_util.GLOBAL_STEP_READ_KEY,
                                 distribution.extended.read_var(global_step))
            features, labels = _split(iterator.get_next())
            specs = []

            def replica_step(features, labels):
                spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
                specs.append(spec)
                return spec.loss, spec.train_op

            losses, train_ops = distribution.extended.call_for_each_replica(
                replica_step, args=(features, labels))
            loss = distribution.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
            train_op = distribution.group(train_ops)
        position = input_state.track(random_draws.graph_seed(), None, self.params)
        return loss, train_op, specs[0].training_hooks, [
            _RunAtStart(iterator.initialize), position]

    def _saver(self):
        if not tf.get_collection(tf.GraphKeys.SAVERS):
            tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver(
                sharded=True, max_to_keep=self.config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=self.config.keep_checkpoint_every_n_hours,
                defer_build=True, save_relative_paths=True))

    def train(self, input_fn, max_steps, hooks=(), saving_listeners=()):
        """Trains until the global step reaches `max_steps`, resuming from the latest
        checkpoint in model_dir (weights, optimizer slots, step, loss scale)."""
        latest = self.latest_checkpoint()
        if latest and (_step_of(latest) or 0) >= max_steps:
            logging.info("%s is at step %s >= max_steps=%d: nothing to train", latest,
                         _step_of(latest), max_steps)
            return self
        hooks = list(hooks) + [tf.train.StopAtStepHook(last_step=max_steps)]
        with self._new_graph().as_default():
            loss, train_op, model_hooks, input_hooks = self._training_graph(input_fn)
            if not any(summary.op.name == "loss"
                       for summary in tf.get_collection(tf.GraphKeys.SUMMARIES)):
                tf.summary.scalar("loss", loss)
            tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
            worker_hooks = list(input_hooks) + hooks + [tf.train.NanTensorHook(loss)]
            if self.config.log_step_count_steps:
                worker_hooks.append(training_hooks.LossLoggingHook(
                    loss, self.config.log_step_count_steps))
            worker_hooks += list(model_hooks)
            self._saver()
            scaffold = tf.train.Scaffold()
            chief_hooks = []
            if self.config.save_summary_steps:
                chief_hooks.append(training_hooks.SummaryWriterHook(
                    self.model_dir, self.config.save_summary_steps))
            if self.config.save_checkpoints_steps:
                chief_hooks.append(tf.train.CheckpointSaverHook(
                    self.model_dir, save_steps=self.config.save_checkpoints_steps,
                    scaffold=scaffold,
                    listeners=[input_state.InputPositionListener()] + list(saving_listeners),
                    save_graph_def=self.config.save_graph_def))
            task = _worker_task(self.config.distribution)
            session_config = self.config.session_config
            if task.master:
                session_config = self.config.distribution.update_config_proto(session_config)
            if task.is_chief:
                session = tf.train.MonitoredTrainingSession(
                    master=task.master, is_chief=True, checkpoint_dir=self.model_dir,
                    scaffold=scaffold, hooks=worker_hooks, chief_only_hooks=chief_hooks,
                    save_checkpoint_secs=0, save_summaries_steps=0,  # SummaryWriterHook
                    config=session_config, log_step_count_steps=self.config.log_step_count_steps)
            else:
                # Another worker of a collective all-reduce: it initialises its own copy of
                # the variables (their initial values broadcast from the chief) or restores
                # the chief's latest checkpoint from the shared model_dir, and writes nothing.
                session = tf.train.MonitoredSession(
                    tf.train.ChiefSessionCreator(scaffold=scaffold, master=task.master,
                                                 config=session_config,
                                                 checkpoint_dir=self.model_dir),
                    hooks=worker_hooks)
            with session:
                while not session.should_stop():
                    session.run([train_op, loss])
        return self

    # ---- evaluate --------------------------------------------------------------------------

    def evaluate(self, input_fn, steps=None, name=None, checkpoint_path=None, hooks=()):
        """{metric: value, "loss": mean loss, "global_step"} over `steps` batches (None: the
        whole input) with the checkpoint's weights (default: the latest; none: initial)."""
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            logging.info("no checkpoint in %s: evaluating the initial weights", self.model_dir)
        with self._new_graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            features, labels, input_hooks, _ = self._features(input_fn)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
            metrics = dict(spec.metric_ops())
            metrics["loss"] = tf.metrics.mean(spec.loss)
            values = {key: value for key, (value, _) in metrics.items()}
            values["global_step"] = global_step
            final = _FinalValues(values)
            stop = [_StopAfter(steps)] if steps else []
            creator = tf.train.ChiefSessionCreator(
                scaffold=tf.train.Scaffold(), checkpoint_filename_with_path=checkpoint,
                config=self.config.session_config)
            updates = [update for _, update in metrics.values()]
            with tf.train.MonitoredSession(creator, hooks=input_hooks + stop + list(hooks)
                                           + [final]) as session:
                while not session.should_stop():
                    session.run(updates)
        results = final.values
        self._write_eval_summary(name, results)
        return results

    def _write_eval_summary(self, name, results):
        """TensorBoard's view of an eval: model_dir/eval[_NAME], as Estimator writes it."""
        folder = os.path.join(self.model_dir, "eval" if not name else "eval_" + name)
        summary = tf.Summary(value=[tf.Summary.Value(tag=key, simple_value=float(value))
                                    for key, value in sorted(results.items())
                                    if key != "global_step"])
        with tf.Graph().as_default():  # FileWriter refuses eager mode
            writer = tf.summary.FileWriter(folder)
            writer.add_summary(summary, int(results["global_step"]))
            writer.close()

    # ---- predict ---------------------------------------------------------------------------

    def predictor(self, input_fn):
        """A Predictor: the predict graph of `input_fn` built once, run per checkpoint."""
        return Predictor(self, input_fn)

    def predict(self, input_fn, checkpoint_path=None, yield_single_examples=True):
        """Yields the predictions of every example (a dict of arrays [...]) or, with
        yield_single_examples=False, of every batch ([B, ...])."""
        with self.predictor(input_fn) as predictor:
            for batch in predictor.batches(checkpoint_path or self.latest_checkpoint()):
                if not yield_single_examples:
                    yield batch
                    continue
                size = len(next(iter(batch.values())))
                for index in range(size):
                    yield {key: value[index] for key, value in batch.items()}


class Predictor:
    """One predict graph and session; `run(checkpoint)` restores the checkpoint's weights and
    returns every example's predictions (dev scoring after each save reuses it)."""

    def __init__(self, loop, input_fn):
        self._graph = loop._new_graph()  # pylint: disable=protected-access
        with self._graph.as_default():
            tf.train.get_or_create_global_step()
            dataset = loop._call_input_fn(input_fn)  # pylint: disable=protected-access
            # Each run re-initialises the iterator, which first waits for tf.data's autotuning
            # thread of the last one to wake: measured 1 to 9 s of a 1.3 s dev scoring. A
            # scoring input has nothing to tune, so it runs without.
            options = tf.data.Options()
            options.autotune.enabled = False
            self._iterator = tf.data.make_initializable_iterator(dataset.with_options(options))
            features, _ = _split(self._iterator.get_next())
            spec = loop._call_model_fn(  # pylint: disable=protected-access
                features, None, ModeKeys.PREDICT)
            self._predictions = spec.predictions
            self._saver = tf.train.Saver(sharded=True)
            self._initialize = tf.group(tf.global_variables_initializer(),
                                        tf.local_variables_initializer())
            self._graph.finalize()
        self._session = tf.Session(graph=self._graph, config=loop.config.session_config)

    def batches(self, checkpoint):
        """Yields {name: array [B, ...]} per batch, with `checkpoint`'s weights (None: the
        initial ones)."""
        with self._graph.as_default():  # Saver.restore outside it would take the eager path
            if checkpoint:
                self._saver.restore(self._session, checkpoint)
            else:
                self._session.run(self._initialize)
            self._session.run(self._iterator.initializer)
        while True:
            try:
                yield self._session.run(self._predictions)
            except tf.errors.OutOfRangeError:
                return

    def run(self, checkpoint):
        """Every example's predictions, in input order: [{name: array [...]}]."""
        examples = []
        for batch in self.batches(checkpoint):
            size = len(next(iter(batch.values())))
            examples += [{key: value[index] for key, value in batch.items()}
                         for index in range(size)]
        return examples

    def close(self):
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
