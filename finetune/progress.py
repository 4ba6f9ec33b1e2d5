"""A compact training progress line for fine-tuning (instead of TF's INFO log), and the
clock of where a training call's seconds went (TrainingClock).

Every `every_n_steps` steps: `train step 400/1500: loss 0.41234 (mean of the
last 100), 12.3 steps/s, ETA 1m29s` through `log_fn`.
"""
import time

import tensorflow.compat.v1 as tf


def format_duration(seconds):
    seconds = int(max(seconds, 0))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class ProgressHook(tf.train.SessionRunHook):
    """Logs mean training loss, speed and ETA every `every_n_steps` steps."""

    def __init__(self, loss, num_train_steps, every_n_steps=100, log_fn=print):
        self._loss = loss  # float32 scalar tensor of the training graph
        self._num_train_steps = num_train_steps
        self._every = max(1, int(every_n_steps))
        self._log_fn = log_fn
        self._losses = []

    def begin(self):
        self._global_step = tf.train.get_global_step()
        self._window_start = None

    def before_run(self, run_context):
        return tf.train.SessionRunArgs({"step": self._global_step, "loss": self._loss})

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"]) + 1  # the step this run just finished
        self._losses.append(float(run_values.results["loss"]))
        now = time.time()
        if self._window_start is None:
            self._window_start = (now, step)
        if step % self._every and step != self._num_train_steps:
            return
        start_time, start_step = self._window_start
        rate = (step - start_step) / max(now - start_time, 1e-6)
        eta = (self._num_train_steps - step) / rate if rate > 0 else 0.0
        loss = sum(self._losses) / len(self._losses)
        self._log_fn(f"train step {step}/{self._num_train_steps}: loss {loss:.5g} (mean of the "
                     f"last {len(self._losses)}), {rate:.1f} steps/s, ETA {format_duration(eta)}")
        self._losses = []
        self._window_start = (now, step)


class TrainingClock:
    """Where the seconds of a `train` call went: `graph` (from `start()` to the session's
    creation: the training graph, the session, the initial weights), `checkpoints` (the
    saves themselves) and `steps` (the rest, less what the other saving listeners spent:
    dev scoring, the copies to best/). `hook()` and `listener()` report to it; give the
    listener before the others, so that its after_save runs first."""

    def __init__(self):
        self.seconds = {"graph": 0.0, "checkpoints": 0.0}
        self._started = self._save_started = self._graph_ready = None

    def start(self):
        self._started, self._graph_ready = time.time(), None

    def session_created(self):
        if self._graph_ready is None:
            self._graph_ready = time.time()
            self.seconds["graph"] = self._graph_ready - self._started

    def save_started(self):
        self._save_started = time.time()
        # the step-0 save runs as the session is created, before the hook hears of it
        self.session_created()

    def save_ended(self):
        self.seconds["checkpoints"] += time.time() - self._save_started

    def hook(self):
        return _SessionCreatedHook(self)

    def listener(self):
        return _SaveListener(self)

    def finish(self, other_seconds=0.0):
        """{graph, checkpoints, steps} seconds since start(); other_seconds: what the other
        listeners spent inside the call."""
        total = time.time() - self._started
        steps = total - self.seconds["graph"] - self.seconds["checkpoints"] - other_seconds
        return dict(self.seconds, steps=max(steps, 0.0))


class _SessionCreatedHook(tf.train.SessionRunHook):
    def __init__(self, clock):
        self._clock = clock

    def after_create_session(self, session, coord):
        del session, coord
        self._clock.session_created()


class _SaveListener(tf.train.CheckpointSaverListener):
    def __init__(self, clock):
        self._clock = clock

    def before_save(self, session, global_step_value):
        del session, global_step_value
        self._clock.save_started()

    def after_save(self, session, global_step_value):
        del session, global_step_value
        self._clock.save_ended()
