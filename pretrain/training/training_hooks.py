"""Training logs and the non-finite-loss guard.

`PretrainingLoggingHook` fetches a few scalars every step (cheap) so that
  * a non-finite loss stops training at once with the step and the last
    checkpoint named (`NonFiniteLossError`), instead of a silent NaN run;
  * an fp16 step skipped for inf/nan gradients is reported;
and every `every_n_steps` logs loss, MLM and sentence (and SBO) losses, learning rate,
gradient norm, examples/sec and an ETA. `add_summaries` writes the same
scalars as TensorBoard summaries (saved by Estimator's summary hook, or in the session loop
by `SummaryWriterHook`); `LossLoggingHook` logs the loss and step, as Estimator does;
`FinalStepHook` reads the step a process's training ended at.

The hooks here fetch the same tensors at every step and only act on some: a session prunes
and optimises its graph anew for each set of fetches it has not run before, which cost a
fine-tuning run's second step 0.9 s (L4 H256 BERT) when a hook fetched only now and then.
"""
import math
import time

import tensorflow.compat.v1 as tf
from absl import logging

SUMMARY_NAMES = ("loss", "masked_lm_loss", "sentence_loss", "span_boundary_loss", "plm_loss",
                 "learning_rate", "grad_norm", "loss_scale")


LOG_COLLECTION_PREFIX = "pretrain_logging/"


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN/inf loss."""


def register_log_tensors(tensors):
    """Puts the model_fn's logging scalars in graph collections for the hook.

    The hook is handed to `estimator.train(hooks=...)`, which runs it before
    Estimator's own NanTensorHook, so our message (step and last checkpoint)
    is the one the user sees. Under MirroredStrategy replica 0 registers first
    and its (already replica-averaged) tensors are used.
    """
    for name, tensor in tensors.items():
        tf.add_to_collection(LOG_COLLECTION_PREFIX + name, tensor)


def registered_log_tensors():
    graph = tf.get_default_graph()
    out = {}
    for key in graph.get_all_collection_keys():
        if key.startswith(LOG_COLLECTION_PREFIX):
            out[key[len(LOG_COLLECTION_PREFIX):]] = graph.get_collection(key)[0]
    return out


def add_summaries(tensors):
    """tf.summary.scalar for the logged scalars (under the `train/` tag prefix)."""
    for name in SUMMARY_NAMES:
        if name in tensors:
            tf.summary.scalar("train/" + name, tf.cast(tensors[name], tf.float32))


def format_eta(seconds):
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def masked_lm_heads_line(logged, loss):
    """The masked-LM families' heads in a training log line."""
    heads = (f" mlm_loss={logged.get('masked_lm_loss', loss):.4f}"
             f" sentence_loss={logged.get('sentence_loss', 0.0):.4f}")
    if "span_boundary_loss" in logged:
        heads += f" sbo_loss={logged['span_boundary_loss']:.4f}"
    return heads


class PretrainingLoggingHook(tf.train.SessionRunHook):
    """Logs training scalars; stops on a non-finite loss."""

    def __init__(self, tensors=None, every_n_steps=100, examples_per_step=0, last_step=None,
                 output_dir=None, gradient_accumulation_steps=1, heads_line=None):
        """
        Args:
          tensors: dict of scalar tensors with at least "loss"; None: those
            the model_fn put in collections with `register_log_tensors`.
          examples_per_step: global examples consumed by one session.run.
          last_step: final global step (for the ETA).
          output_dir: where checkpoints go (named in the non-finite message).
          heads_line: (logged values, loss) -> the heads' part of a log line (a family's
            ModelFamily.log_line); None: the masked LM's (mlm, sentence, sbo losses).
        """
        self._heads_line = heads_line or masked_lm_heads_line
        self._given_tensors = tensors
        self._every = max(1, int(every_n_steps))
        self._examples_per_step = examples_per_step
        self._last_step = last_step
        self._output_dir = output_dir
        self._k = max(1, int(gradient_accumulation_steps))
        self._step = None
        self._mark_time = None
        self._mark_step = None
        self.history = []  # (step, {name: value}) at each logging step, for tests

    def begin(self):
        self._global_step = tf.train.get_or_create_global_step()
        self._tensors = dict(self._given_tensors or registered_log_tensors())
        if "loss" not in self._tensors:
            raise ValueError("PretrainingLoggingHook: no 'loss' tensor given or registered")

    def after_create_session(self, session, coord):
        del coord
        self._step = int(session.run(self._global_step))
        self._mark_time, self._mark_step = time.time(), self._step

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._tensors)  # every step: see the module doc

    def _last_checkpoint(self):
        if not self._output_dir:
            return None
        return tf.train.latest_checkpoint(self._output_dir)

    def after_run(self, run_context, run_values):
        values = run_values.results
        step = self._step  # the step whose batch produced these values
        self._step += 1
        loss = float(values["loss"])
        if not math.isfinite(loss):
            ckpt = self._last_checkpoint()
            raise NonFiniteLossError(
                f"training loss became {loss} at global step {step}; stopped. Last checkpoint: "
                f"{ckpt or 'none written yet'}. Lower --learning_rate, raise --num_warmup_steps, "
                "check the data, or use --precision=fp32/bf16; rerunning resumes from the last "
                "checkpoint.")
        if "grads_finite" in values and not bool(values["grads_finite"]):
            logging.warning("step %d: gradients are not finite (fp16 overflow); update skipped, "
                            "loss scale lowered to %g", step, float(values.get("loss_scale", 1.0)))
        logging_step = step == 0 or (step + 1) % self._every == 0
        if not logging_step or "learning_rate" not in values:
            return
        now = time.time()
        steps = self._step - self._mark_step
        elapsed = max(now - self._mark_time, 1e-9)
        sec_per_step = elapsed / steps if steps else float("nan")
        examples_per_sec = self._examples_per_step / sec_per_step if steps else float("nan")
        eta = None
        if self._last_step and steps:
            eta = max(self._last_step - self._step, 0) * sec_per_step
        logged = {k: float(v) for k, v in values.items()}
        logged.update(examples_per_sec=examples_per_sec)
        self.history.append((step, logged))
        update = f" (update {step // self._k})" if self._k > 1 else ""
        heads = self._heads_line(logged, loss)
        logging.info(
            "step %d%s: loss=%.4f%s lr=%.3g grad_norm=%.3f examples/sec=%.1f eta=%s", step,
            update, loss, heads, logged["learning_rate"], logged.get("grad_norm", float("nan")),
            examples_per_sec, format_eta(eta))
        self._mark_time, self._mark_step = now, self._step


class SummaryWriterHook(tf.train.SessionRunHook):
    """The graph's summaries (tf.summary.merge_all) written to `output_dir` after the first
    step and every `every_n_steps` steps, as tf.train.SummarySaverHook, but fetched at every
    step (see the module doc)."""

    def __init__(self, output_dir, every_n_steps):
        self._output_dir = output_dir
        self._timer = tf.train.SecondOrStepTimer(every_steps=every_n_steps)

    def begin(self):
        self._summary = tf.summary.merge_all()
        self._global_step = tf.train.get_global_step()
        self._writer = tf.summary.FileWriterCache.get(self._output_dir)

    def before_run(self, run_context):
        fetches = {"step": self._global_step}
        if self._summary is not None:
            fetches["summary"] = self._summary
        return tf.train.SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"]) + 1  # the step this run finished
        if "summary" not in run_values.results or not self._timer.should_trigger_for_step(step):
            return
        self._timer.update_last_triggered_step(step)
        self._writer.add_summary(run_values.results["summary"], step)

    def end(self, session):
        self._writer.flush()


class LossLoggingHook(tf.train.SessionRunHook):
    """Logs `loss = L, step = S` after the first step and every `every_n_steps` steps, as
    Estimator's logging hook, fetching both at every step (see the module doc)."""

    def __init__(self, loss, every_n_steps):
        self._loss = loss
        self._timer = tf.train.SecondOrStepTimer(every_steps=every_n_steps)

    def begin(self):
        self._global_step = tf.train.get_global_step()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs({"loss": self._loss, "step": self._global_step})

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"])  # the step the loss was computed at
        if self._timer.should_trigger_for_step(step):
            self._timer.update_last_triggered_step(step)
            logging.info("loss = %s, step = %d", run_values.results["loss"], step)


class FinalStepHook(tf.train.SessionRunHook):
    """`step`: the global step when the training session ended, read from that session (None
    if the input ran out first: a session then ends without calling its hooks' `end`). A
    multi-worker run's non-chief cannot take it from the shared model_dir, where the chief
    may not have saved its last checkpoint yet."""

    def __init__(self):
        self.step = None
        self._global_step = None

    def begin(self):
        self._global_step = tf.train.get_global_step()

    def end(self, session):
        self.step = int(session.run(self._global_step))
