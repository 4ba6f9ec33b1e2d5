"""The input position and the run's seed, saved in the checkpoint with the weights.

A rerun into the same model_dir restores weights, optimizer slots and step from the latest
checkpoint; this module makes it continue the data stream too, instead of reading the
data from its first record again. Four scalars join the model's variables (so one Saver
writes them into the same checkpoint files, atomically):

  input_pipeline/iterator_state  string: tf.data's serialized training iterator (where each
                                 file is, the shuffle buffers and their random state, the
                                 prefetched batches); "" before the first step.
  input_pipeline/step            int64: the global step the state was captured at, checked
                                 against the restored step.
  input_pipeline/setup           string: JSON of what the position and the schedule depend on
                                 (batch size, replicas, files; learning-rate schedule), as
                                 the run that wrote the checkpoint had them (resume_check).
  random_seed                    int64: the graph seed the run was built with
                                 (pretrain.models.random_draws keys every draw with it;
                                 -1: the graph had none, and its draws cannot be repeated).

`track(seed, iterator, params)` makes them in the training graph, beside the training iterator
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
import json
import random
import weakref

import tensorflow.compat.v1 as tf
from absl import logging
from tensorflow.python.ops import gen_dataset_ops  # pylint: disable=no-name-in-module

STATE_NAME = "input_pipeline/iterator_state"
STATE_STEP_NAME = "input_pipeline/step"
SETUP_NAME = "input_pipeline/setup"
SEED_NAME = "random_seed"
_TRACKED = weakref.WeakKeyDictionary()  # graph -> its Tracked (not a collection: see below)
_ITERATORS = "iterators"  # tf.data's graph collection of iterator resources
# Fail rather than save a state that cannot be restored (a stateful op in a dataset fn).
_FAIL_ON_EXTERNAL_STATE = 2


class Tracked:
    """The variables of one training graph and the ops that move the iterator's state."""

    def __init__(self, iterator_resource, seed, setup="", restore=True):
        with tf.get_default_graph().name_scope(None), tf.device("/cpu:0"):
            self.seed = tf.Variable(tf.constant(-1 if seed is None else seed, tf.int64),
                                    trainable=False, name=SEED_NAME)
            # Reference variables: XLA's auto-clustering (--use_xla) leaves their ops out; it
            # would take a string resource into a cluster (the initialisation checks) and fail.
            self.state = tf.Variable(tf.constant(""), trainable=False, name=STATE_NAME,
                                     use_resource=False)
            self.setup = tf.Variable(tf.constant(setup), trainable=False, name=SETUP_NAME,
                                     use_resource=False)
            self.state_step = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                                          name=STATE_STEP_NAME, use_resource=False)
            self.has_state = tf.strings.length(self.state) > 0  # not the bytes into Python
            self.record_setup = self.setup.assign(setup)  # after a restore: this run's
            self.capture = self.restore = None
            if iterator_resource is not None:
                serialized = gen_dataset_ops.serialize_iterator(
                    iterator_resource, external_state_policy=_FAIL_ON_EXTERNAL_STATE)
                self.capture = tf.group(
                    self.state.assign(tf.io.serialize_tensor(serialized)),
                    self.state_step.assign(tf.cast(tf.train.get_global_step(), tf.int64)))
                if restore:
                    self.restore = gen_dataset_ops.deserialize_iterator(
                        iterator_resource, tf.io.parse_tensor(self.state, tf.variant))
        self.restore_requested = restore
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


def track(seed, iterator_resource, params):
    """Makes this graph's Tracked (once) of the training iterator `iterator_resource` (None:
    the input is not tracked, only the seed); returns the hook to run with training.
    params: the trainer's; params["input_setup"] is this run's setup (JSON),
    params["restore_input_position"] False leaves a saved position unread."""
    existing = tracked()
    if existing is None:
        if iterator_resource is None:
            logging.warning("the input position is not saved with this run's checkpoints "
                            "(distributed input): a rerun reads the data from a new start")
        existing = _TRACKED[tf.get_default_graph()] = Tracked(
            iterator_resource, seed, params.get("input_setup", ""),
            params.get("restore_input_position", True))
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
        step, blob, state_step = session.run([self._step, state.has_state, state.state_step])
        if blob and state_step != step:
            raise ValueError(f"the checkpoint of step {step} holds the input position of step "
                             f"{state_step}: it was not written by the run's own saver")
        if state.restore is not None and blob:
            session.run(state.restore)
            logging.info("resumed at step %d, input position restored", step)
        elif state.capture is not None and step:
            if not state.restore_requested:
                logging.info("resumed at step %d; the input is read from a new start "
                             "(--ignore_data_skip)", step)
            else:
                raise ValueError(
                    f"the checkpoint of step {step} holds no input position: it was written "
                    "by a run that did not save it (another strategy or an older version); "
                    "continue it with the strategy it was made with or start a new "
                    "--output_dir")
        session.run(state.record_setup)
        state.ready = True


class InputPositionListener(tf.train.CheckpointSaverListener):
    """Writes the iterator's current state into the variable before each save."""

    def before_save(self, session, global_step_value):
        del global_step_value
        state = tracked(session.graph)
        if state is not None and state.ready and state.capture is not None:
            session.run(state.capture)


# What the learning rate at a step depends on (run_pretraining's flags): a rerun that changes
# one of them needs --allow_schedule_change.
SCHEDULE_FLAGS = ("--learning_rate", "--num_train_steps", "--num_warmup_steps", "--poly_power",
                  "--optimizer", "--weight_decay_rate", "--gradient_accumulation_steps",
                  "--lr_scheduler_type", "--num_decay_steps", "--decay_type", "--min_lr_ratio")


class ResumeError(ValueError):
    """The run in model_dir cannot continue with these settings (one line: what and why)."""


def setup_json(input_setup, schedule):
    """The JSON of a run's setup: {"input": {name: value}, "schedule": {name: value}}, names
    as the user knows them (flags, "--strategy's replicas")."""
    return json.dumps({"input": input_setup, "schedule": schedule}, sort_keys=True)


def _changes(saved, current):
    return [f"{name}={current[name]} (was {saved[name]})" for name in sorted(current)
            if name in saved and saved[name] != current[name]]


def setup_changes(checkpoint, setup):
    """["--flag=new (was old)"] of `setup` (setup_json) against what `checkpoint` saved, both
    parts; one entry saying so when it saved none."""
    if SETUP_NAME not in dict(tf.train.list_variables(checkpoint)):
        return ["(its checkpoint saved no settings: an older version)"]
    saved = json.loads(tf.train.load_variable(checkpoint, SETUP_NAME) or b"{}")
    current = json.loads(setup)
    return [change for part in ("input", "schedule")
            for change in _changes(saved.get(part, {}), current.get(part, {}))]


def resume_check(model_dir, requested_seed, setup, tracks_input=True, ignore_data_skip=False,
                 allow_schedule_change=False, seed_flag="--random_seed"):
    """(seed, step resumed from or None) of a run in `model_dir` with `setup` (setup_json).

    A run that already has a checkpoint there keeps the seed saved in it (`requested_seed`,
    if given, must be that seed); a new run takes `requested_seed`, or draws one, which its
    first checkpoint saves, so a rerun without the flag continues the same stream and draws.
    ResumeError (one line: what changed and the flag that accepts it) when the checkpoint
    lacks the saved state (an older version), when this run tracks its input and the
    checkpoint has no position, when the input setup changed (batch, replicas, files: the
    saved position is that input's) without ignore_data_skip, or the learning-rate schedule
    changed without allow_schedule_change."""
    latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
    if latest is None:
        if requested_seed is not None:
            return int(requested_seed), None
        return random.SystemRandom().randrange(2 ** 31), None
    names = dict(tf.train.list_variables(latest))
    if not {SEED_NAME, STATE_NAME, SETUP_NAME, "global_step"} <= set(names):
        raise ResumeError(
            f"{latest} does not hold the run's seed and input position (written by an older "
            "version): it cannot resume exactly; start a new --output_dir, or initialise one "
            f"from it with --init_checkpoint={latest}")
    step = int(tf.train.load_variable(latest, "global_step"))
    if tracks_input and step and not ignore_data_skip \
            and not tf.train.load_variable(latest, STATE_NAME):
        raise ResumeError(
            f"{latest} holds no input position (its run read distributed input): continue it "
            "with the --strategy it was made with, add --ignore_data_skip to read the data "
            "from a new start, or start a new --output_dir")
    saved_seed = int(tf.train.load_variable(latest, SEED_NAME))
    if requested_seed is not None and int(requested_seed) != saved_seed:
        raise ResumeError(
            f"{seed_flag}={requested_seed}, but the run in {model_dir} was started with seed "
            f"{saved_seed} (its checkpoint of step {step}): rerun with {seed_flag}="
            f"{saved_seed}, without {seed_flag}, or with a new output directory")
    saved = json.loads(tf.train.load_variable(latest, SETUP_NAME) or b"{}")
    current = json.loads(setup or "{}")
    changed = _changes(saved.get("input", {}), current.get("input", {}))
    if changed and tracks_input and not ignore_data_skip:
        raise ResumeError(
            f"the run in {model_dir} saved its input position at step {step} for another "
            f"input: {', '.join(changed)}; rerun with its values, or add --ignore_data_skip "
            "to read the data from a new start")
    changed = _changes(saved.get("schedule", {}), current.get("schedule", {}))
    if changed and not allow_schedule_change:
        raise ResumeError(
            f"the run in {model_dir} (step {step}) was trained with another schedule: "
            f"{', '.join(changed)}; rerun with its values, or add --allow_schedule_change to "
            f"go on from step {step} under the new one")
    return saved_seed, step


def resume(model_dir, requested_seed, setup, tracks_input, ignore_data_skip=False,
           allow_schedule_change=False):
    """(seed, the training input's seed, the trainer's params) of a run in `model_dir`:
    resume_check's seed (logged when it was not requested); the input's seed is the same,
    except when a resumed run reads its data from a new start (ignore_data_skip, or an input
    that is not tracked: distributed), which is then shuffled by seed + step, not in the
    first run's order. params: input_setup and restore_input_position (track)."""
    seed, step = resume_check(model_dir, requested_seed, setup, tracks_input,
                              ignore_data_skip, allow_schedule_change)
    if requested_seed is None:
        logging.info("random seed %d (%s)", seed, "saved with the run" if step is not None
                     else "drawn; its checkpoints save it, so a rerun continues")
    input_seed = seed
    if step and (ignore_data_skip or not tracks_input):
        input_seed = seed + step
        logging.warning("resuming at step %d, the data is read again from its start, in a new "
                        "order (seed %d): %s", step, input_seed, "--ignore_data_skip"
                        if tracks_input else "distributed input has no saved position")
    return seed, input_seed, {"input_setup": setup,
                              "restore_input_position": not ignore_data_skip}
