"""Learning-rate schedules: the rate of an optimizer update, as a graph scalar.

    scheduler = lr_schedules.Scheduler("warmup_stable_decay", num_decay_steps=200,
                                       decay_type="1-sqrt", min_lr_ratio=0.0)
    rate = lr_schedules.learning_rate(init_lr, global_step, num_train_steps, num_warmup_steps,
                                      steps_per_update=k, scheduler=scheduler)

Every schedule counts optimizer updates u = global_step // steps_per_update (with gradient
accumulation the global step counts micro-batches). With N = num_train_steps, W =
num_warmup_steps, D = num_decay_steps, r = min_lr_ratio and peak = init_lr:

  polynomial (google-research/bert's; the default): peak * u / W while u < W, else
      peak * (1 - min(u, N) / N) ** poly_power (the decay is measured from step 0).
  warmup_stable_decay (transformers' get_wsd_schedule, Hägele et al. 2024): the warmup
      rises from r * peak, peak * (r + (1 - r) * u / W) while u < W; the stable phase
      holds peak while u < N - D; the decay, p = (u - (N - D)) / D, gives
      peak * (r + (1 - r) * f(p)) with f = 1 - p (linear), (1 + cos(pi p)) / 2 (cosine)
      or 1 - sqrt(p) (1-sqrt); r * peak from u = N on. The decay's first update, N - D,
      still runs at the peak (p = 0).
  cosine (transformers' get_cosine_with_min_lr_schedule_with_warmup, one half-wave):
      peak * u / W while u < W, else peak * (r + (1 - r) * (1 + cos(pi p)) / 2) with
      p = (min(u, N) - W) / (N - W).

A division by W or D takes max(1, ·), as transformers does. `plateau_update` is the update
count at which a warmup_stable_decay run has finished its stable phase (the plateau
checkpoint's step, pretrain.training.plateau_checkpoint).
"""
import dataclasses
import math

import tensorflow.compat.v1 as tf

from common.cli_options import UserError

POLYNOMIAL, WSD, COSINE = "polynomial", "warmup_stable_decay", "cosine"
SCHEDULER_TYPES = (POLYNOMIAL, WSD, COSINE)
DECAY_TYPES = ("linear", "cosine", "1-sqrt")
# The decay's default share of --num_train_steps: Hägele et al. 2024 ("Scaling Laws and
# Compute-Optimal Training Beyond Fixed Training Durations") match a cosine run's loss with
# a 20% cooldown.
DEFAULT_DECAY_SHARE = 0.2
DEFAULT_DECAY_TYPE = "cosine"  # transformers' default

LR_SCHEDULER_TYPE_HELP = (
    "Learning-rate schedule after the linear warmup: polynomial (google-research/bert's: "
    "decay to 0 at --num_train_steps, power --poly_power), warmup_stable_decay (the peak "
    "until the last --num_decay_steps, then a --decay_type decay; its stable end is kept in "
    "OUTPUT_DIR/plateau) or cosine (cosine decay to --min_lr_ratio x the peak).")
NUM_DECAY_STEPS_HELP = (
    "warmup_stable_decay: updates of the decay phase, at the end of --num_train_steps "
    f"(default: {DEFAULT_DECAY_SHARE:.0%} of it, the cooldown Hägele et al. 2024 found to "
    "match a cosine schedule).")
DECAY_TYPE_HELP = (f"warmup_stable_decay: the decay's shape (default {DEFAULT_DECAY_TYPE}, as "
                   "transformers'; 1-sqrt did best in Hägele et al. 2024).")
MIN_LR_RATIO_HELP = ("warmup_stable_decay and cosine: the final rate as a share of the peak, "
                     "in [0, 1] (default 0).")


@dataclasses.dataclass(frozen=True)
class Scheduler:
    """The schedule's type and what only some types read (transformers' names); the step
    counts and --poly_power are passed beside it. Resolved: warmup_stable_decay has every
    field, cosine its min_lr_ratio, polynomial none (None)."""
    lr_scheduler_type: str = POLYNOMIAL
    num_decay_steps: int = None
    decay_type: str = None
    min_lr_ratio: float = None


# The flags each type reads beyond the step counts.
_READS = {POLYNOMIAL: (), WSD: ("num_decay_steps", "decay_type", "min_lr_ratio"),
          COSINE: ("min_lr_ratio",)}


def resolve(lr_scheduler_type, num_train_steps, num_warmup_steps, num_decay_steps=None,
            decay_type=None, min_lr_ratio=None):
    """The Scheduler of the flags, defaults filled in; UserError naming the flag when one is
    given to a type that does not read it, a value is out of range, or the phases do not
    fit in --num_train_steps (warmup_stable_decay, cosine)."""
    given = {"num_decay_steps": num_decay_steps, "decay_type": decay_type,
             "min_lr_ratio": min_lr_ratio}
    if lr_scheduler_type not in _READS:
        raise UserError(f"--lr_scheduler_type={lr_scheduler_type!r}: choose one of "
                        f"{', '.join(SCHEDULER_TYPES)}")
    for name, value in given.items():
        if value is not None and name not in _READS[lr_scheduler_type]:
            readers = [kind for kind, names in _READS.items() if name in names]
            raise UserError(f"--{name} is read by --lr_scheduler_type={' or '.join(readers)} "
                            f"only, not {lr_scheduler_type}; leave it out")
    if lr_scheduler_type == POLYNOMIAL:
        return Scheduler()
    if min_lr_ratio is not None and not 0.0 <= float(min_lr_ratio) <= 1.0:
        raise UserError(f"--min_lr_ratio={min_lr_ratio} must be within [0, 1]: the final "
                        "rate as a share of --learning_rate")
    ratio = float(min_lr_ratio or 0.0)
    warmup, total = int(num_warmup_steps or 0), int(num_train_steps)
    if lr_scheduler_type == COSINE:
        if warmup > total:
            raise UserError(f"--num_warmup_steps={warmup} exceeds --num_train_steps={total}: "
                            "the cosine decay would never start")
        return Scheduler(COSINE, min_lr_ratio=ratio)
    if decay_type is not None and decay_type not in DECAY_TYPES:
        raise UserError(f"--decay_type={decay_type!r}: choose one of {', '.join(DECAY_TYPES)}")
    if num_decay_steps is None:
        num_decay_steps = int(total * DEFAULT_DECAY_SHARE + 0.5)
    elif int(num_decay_steps) < 0:
        raise UserError(f"--num_decay_steps={num_decay_steps} must be >= 0")
    if warmup + int(num_decay_steps) > total:
        raise UserError(f"--num_warmup_steps={warmup} + --num_decay_steps={num_decay_steps} "
                        f"exceed --num_train_steps={total}: lower them or train longer")
    return Scheduler(WSD, int(num_decay_steps), decay_type or DEFAULT_DECAY_TYPE, ratio)


def plateau_update(scheduler, num_train_steps):
    """The updates applied when a warmup_stable_decay run's stable phase ends (N - D), the
    step of its plateau checkpoint in updates; None for the other types."""
    if scheduler.lr_scheduler_type != WSD:
        return None
    return int(num_train_steps) - int(scheduler.num_decay_steps)


def learning_rate(init_lr, global_step, num_train_steps, num_warmup_steps, poly_power=1.0,
                  steps_per_update=1, scheduler=Scheduler()):
    """The rate of the update at `global_step` (int scalar tensor): a float32 scalar named
    `learning_rate` (formulas in the module doc)."""
    update_step = tf.cast(global_step // steps_per_update, tf.float32)
    if scheduler.lr_scheduler_type == POLYNOMIAL:
        return _polynomial(init_lr, update_step, num_train_steps, num_warmup_steps, poly_power)
    total, warmup = float(num_train_steps), float(num_warmup_steps or 0)
    ratio = float(scheduler.min_lr_ratio)
    if scheduler.lr_scheduler_type == WSD:
        decay_start = float(plateau_update(scheduler, num_train_steps))
        progress = _progress(update_step - decay_start, scheduler.num_decay_steps)
        decaying = tf.where(update_step < total, _decay_shape(scheduler.decay_type, progress),
                            tf.zeros_like(progress))  # the final rate from N on, also if D = 0
        after_warmup = tf.where(update_step < decay_start, tf.ones_like(progress), decaying)
        warmup_from = ratio  # transformers' WSD warmup rises from the final rate
    else:
        progress = _progress(tf.minimum(update_step, total) - warmup, total - warmup)
        after_warmup = _decay_shape("cosine", progress)
        warmup_from = 0.0
    warming = warmup_from + (1.0 - warmup_from) * update_step / max(1.0, warmup)
    factor = tf.where(update_step < warmup, warming, ratio + (1.0 - ratio) * after_warmup)
    return tf.multiply(float(init_lr), factor, name="learning_rate")


def _progress(done, length):
    """done / max(1, length), within [0, 1] (float32 scalar)."""
    return tf.clip_by_value(done / max(1.0, float(length)), 0.0, 1.0)


def _decay_shape(decay_type, progress):
    """f(p) of the decay (1 at p = 0, 0 at p = 1), float32 scalar."""
    if decay_type == "linear":
        return 1.0 - progress
    if decay_type == "cosine":
        return 0.5 * (1.0 + tf.cos(math.pi * progress))
    if decay_type == "1-sqrt":
        return 1.0 - tf.sqrt(progress)
    raise ValueError(f"decay_type {decay_type!r} is not one of {DECAY_TYPES}")


def _polynomial(init_lr, update_step, num_train_steps, num_warmup_steps, poly_power):
    """google-research/bert's schedule, op for op as it was before the other types came."""
    total = float(max(int(num_train_steps), 1))
    progress = tf.minimum(update_step, total) / total
    decayed = init_lr * tf.pow(1.0 - progress, float(poly_power))
    if num_warmup_steps and num_warmup_steps > 0:
        warmup = init_lr * update_step / float(num_warmup_steps)
        return tf.where(update_step < float(num_warmup_steps), warmup, decayed,
                        name="learning_rate")
    return tf.identity(decayed, name="learning_rate")
