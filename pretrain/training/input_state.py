"""The input position and the run's seed, saved in the checkpoint with the weights.

A rerun into the same model_dir restores weights, optimizer slots and step from the latest
checkpoint; this module makes it continue the data stream too, instead of reading the
data from its first record again. Two scalars join the model's variables (so one Saver
writes them into the same checkpoint files, atomically):

  input_pipeline/iterator_state  string: tf.data's serialized training iterator (where each
                                 file is, the shuffle buffers and their random state, the
                                 prefetched batches); "" before the first step.
  random_seed                    int64: the graph seed the run was built with
                                 (pretrain.models.random_draws keys every draw with it;
                                 -1: the graph had none, and its draws cannot be repeated).

`track(seed, iterator)` makes them in the training graph, beside the training iterator
(single device: one input pipeline; distributed input is not tracked, and its rerun reads
the data from a new start). Two pieces move the state, between steps only:

  * InputPositionHook, after the session restored the variables and the iterator was
    initialised: when the restored state is not empty, it is put back into the iterator
    (checked against the restored global step); the log says so.
  * InputPositionListener, a CheckpointSaverListener: before every save, the iterator's
    current state is written into the variable (not before the hook has run: the save
    made when the session starts writes back what was restored).

Both training loops use them: pretrain.training.training_loop and, on TensorFlow 2.15,
pretrain.training.estimator_runtime.
"""
import random
import weakref

import tensorflow.compat.v1 as tf
from absl import logging
from tensorflow.python.ops import gen_dataset_ops  # pylint: disable=no-name-in-module

STATE_NAME = "input_pipeline/iterator_state"
SEED_NAME = "random_seed"
_TRACKED = weakref.WeakKeyDictionary()  # graph -> its Tracked (not a collection: see below)
_ITERATORS = "iterators"  # tf.data's graph collection of iterator resources
# Fail rather than save a state that cannot be restored (a stateful op in a dataset fn).
_FAIL_ON_EXTERNAL_STATE = 2


class Tracked:
    """The variables of one training graph and the ops that move the iterator's state."""

    def __init__(self, iterator_resource, seed):
        with tf.get_default_graph().name_scope(None), tf.device("/cpu:0"):
            self.seed = tf.Variable(tf.constant(-1 if seed is None else seed, tf.int64),
                                    trainable=False, name=SEED_NAME)
            # A reference variable: XLA's auto-clustering (--use_xla) leaves its ops out; it
            # would take a string resource into a cluster (the initialisation checks) and fail.
            self.state = tf.Variable(tf.constant(""), trainable=False, name=STATE_NAME,
                                     use_resource=False)
            self.capture = self.restore = None
            if iterator_resource is not None:
                serialized = gen_dataset_ops.serialize_iterator(
                    iterator_resource, external_state_policy=_FAIL_ON_EXTERNAL_STATE)
                self.capture = self.state.assign(tf.io.serialize_tensor(serialized))
                self.restore = gen_dataset_ops.deserialize_iterator(
                    iterator_resource, tf.io.parse_tensor(self.state, tf.variant))
        self.ready = False  # set once the hook has restored (or started) the iterator


def tracked(graph=None):
    """The Tracked of `graph` (default: the default graph), or None. Kept beside the graph,
    not in a collection, which a meta graph export would try to serialise."""
    return _TRACKED.get(graph or tf.get_default_graph())


def only_iterator():
    """The iterator resource of this graph's one tf.data iterator (the Estimator's training
    input), or None when there is none, several, or a tf.distribute strategy feeds them."""
    iterators = tf.get_collection(_ITERATORS)
    return iterators[0] if len(iterators) == 1 and not tf.distribute.has_strategy() else None


def track(seed, iterator_resource):
    """Makes this graph's Tracked (once) of the training iterator `iterator_resource` (None:
    the input is not tracked, only the seed); returns the hook to run with training."""
    existing = tracked()
    if existing is None:
        if iterator_resource is None:
            logging.warning("the input position is not saved with this run's checkpoints "
                            "(distributed input): a rerun reads the data from a new start")
        existing = _TRACKED[tf.get_default_graph()] = Tracked(iterator_resource, seed)
    return InputPositionHook(existing)


class InputPositionHook(tf.train.SessionRunHook):
    """Puts a restored input position back into the iterator when the session starts."""

    def __init__(self, state):
        self._tracked = state

    def begin(self):
        self._step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        del coord
        state = self._tracked
        if state.restore is not None:
            step, blob = session.run([self._step, state.state])
            if blob:
                session.run(state.restore)
                logging.info("resumed at step %d, input position restored", step)
            elif step:
                raise ValueError(
                    f"the checkpoint of step {step} holds no input position: it was written "
                    "by a run that did not save it (another strategy or an older version); "
                    "continue it with the strategy it was made with or start a new "
                    "--output_dir")
        state.ready = True


class InputPositionListener(tf.train.CheckpointSaverListener):
    """Writes the iterator's current state into the variable before each save."""

    def before_save(self, session, global_step_value):
        del global_step_value
        state = tracked(session.graph)
        if state is not None and state.ready and state.capture is not None:
            session.run(state.capture)


class ResumeError(ValueError):
    """The run in model_dir cannot continue with these settings (one line: what and why)."""


def resume_seed(model_dir, requested, tracks_input=True, flag="--random_seed"):
    """(seed, step resumed from or None): the seed a run in `model_dir` is built with.

    A run that already has a checkpoint there keeps the seed saved in it (`requested`, if
    given, must be that seed); a new run takes `requested`, or draws one, which its first
    checkpoint saves, so a rerun without the flag continues the same stream and draws.
    ResumeError for a checkpoint without the saved state (written before it was saved), or,
    when this run tracks its input, one whose input position was not saved."""
    latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
    if latest is None:
        if requested is not None:
            return int(requested), None
        return random.SystemRandom().randrange(2 ** 31), None
    names = dict(tf.train.list_variables(latest))
    if SEED_NAME not in names or STATE_NAME not in names or "global_step" not in names:
        raise ResumeError(
            f"{latest} does not hold the run's seed and input position (written by an older "
            "version): it cannot resume exactly; start a new --output_dir, or initialise one "
            f"from it with --init_checkpoint={latest}")
    step = int(tf.train.load_variable(latest, "global_step"))
    if tracks_input and step and not tf.train.load_variable(latest, STATE_NAME):
        raise ResumeError(
            f"{latest} holds no input position (its run read distributed input): continue it "
            "with the --strategy it was made with, or start a new --output_dir")
    saved = int(tf.train.load_variable(latest, SEED_NAME))
    if requested is not None and int(requested) != saved:
        raise ResumeError(f"{flag}={requested}, but the run in {model_dir} was started with "
                          f"seed {saved} (its checkpoint of step {step}): rerun with {flag}="
                          f"{saved}, without {flag}, or with a new output directory")
    return saved, step
