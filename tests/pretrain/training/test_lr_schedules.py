"""The learning-rate schedules (pretrain.training.lr_schedules) against closed forms written
from their published definitions (transformers' get_wsd_schedule and
get_cosine_with_min_lr_schedule_with_warmup, google-research/bert's polynomial decay), at
every global step of short runs with and without gradient accumulation; the polynomial
schedule also bit for bit against the rates of the function it replaced."""
import hashlib
import math

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain.training import lr_schedules
from pretrain.training.lr_schedules import Scheduler

PEAK = 3e-4


def reference_factor(update, total, warmup, scheduler, poly_power=1.0):
    """The rate of update `update` as a share of the peak, in float64."""
    kind, ratio = scheduler.lr_scheduler_type, scheduler.min_lr_ratio
    if kind == "polynomial":  # Google's: the decay counts from step 0; the warmup replaces it
        if warmup > 0 and update < warmup:
            return update / warmup
        return (1.0 - min(update, total) / total) ** poly_power
    if kind == "cosine":
        if update < warmup:
            return update / max(1, warmup)
        progress = (min(update, total) - warmup) / max(1, total - warmup)
        return ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    decay = scheduler.num_decay_steps
    stable_end = total - decay
    if update < warmup:
        return ratio + (1 - ratio) * update / max(1, warmup)
    if update < stable_end:
        return 1.0
    if update >= total:
        return ratio
    progress = (update - stable_end) / max(1, decay)
    shape = {"linear": 1 - progress, "cosine": 0.5 * (1 + math.cos(math.pi * progress)),
             "1-sqrt": 1 - math.sqrt(progress)}[scheduler.decay_type]
    return ratio + (1 - ratio) * shape


def graph_rates(global_steps, total, warmup, steps_per_update, scheduler, poly_power=1.0):
    """The schedule's float32 rate at each global step (one scalar run each, as in training)."""
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        rate = lr_schedules.learning_rate(PEAK, step, total, warmup, poly_power,
                                          steps_per_update, scheduler)
        assert rate.dtype == tf.float32 and rate.shape == []
        # No graph optimizer, whatever ZH_PRETRAIN_GRAPH_OPTIMIZER says: grappler's constant
        # folding rounds differently, and OLD_POLYNOMIAL_RATES were taken without it.
        config = tf.ConfigProto()
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        with tf.Session(config=config) as session:
            return np.array([session.run(rate, {step: s}) for s in global_steps])


CASES = {  # id: (total N, warmup W, steps per update k, scheduler)
    "wsd-linear": (20, 4, 1, Scheduler("warmup_stable_decay", 6, "linear", 0.0)),
    "wsd-cosine-k3-min": (20, 4, 3, Scheduler("warmup_stable_decay", 5, "cosine", 0.1)),
    "wsd-1sqrt-min-no-warmup": (16, 0, 1, Scheduler("warmup_stable_decay", 7, "1-sqrt", 0.25)),
    "wsd-no-decay": (10, 2, 2, Scheduler("warmup_stable_decay", 0, "linear", 0.5)),
    "cosine": (20, 5, 1, Scheduler("cosine", min_lr_ratio=0.0)),
    "cosine-k2-min": (15, 3, 2, Scheduler("cosine", min_lr_ratio=0.2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_schedule_follows_its_closed_form_at_every_step(case):
    total, warmup, k, scheduler = CASES[case]
    steps = list(range((total + 3) * k))  # a few updates past the end too
    got = graph_rates(steps, total, warmup, k, scheduler)
    want = np.array([PEAK * reference_factor(s // k, total, warmup, scheduler) for s in steps])
    np.testing.assert_allclose(got, want, rtol=0, atol=PEAK * 4e-7)
    if scheduler.lr_scheduler_type == "warmup_stable_decay":
        plateau = lr_schedules.plateau_update(scheduler, total)
        assert plateau == total - scheduler.num_decay_steps
        # The stable phase holds the peak up to the decay's first update (p = 0) included.
        assert (got[warmup * k:min(plateau + 1, total) * k] == np.float32(PEAK)).all()
        assert got[(plateau + 1) * k] < PEAK
    else:
        assert lr_schedules.plateau_update(scheduler, total) is None


# sha256 of the little-endian float32 rates that optimization.learning_rate_schedule, the
# function this module replaced (at 207a5ca), gave at global steps 0 .. (N + 2) k - 1 with
# PEAK in graph_rates' session (no graph optimizer): the same on TensorFlow 2.15 and 2.21.
OLD_POLYNOMIAL_RATES = {
    (37, 5, 1, 1.0): "25fcf7fd7c34bf6504a3b81042c1f444a9b53f383732fdfac5fdbfd2f836828d",
    (29, 0, 3, 0.5): "e79a01b548a2548906e50934ad2fabbad54b27b959e29b1acb0a08ba63bc3906",
    (23, 7, 2, 2.0): "659c44413c28665d103500e9030456d16506eaf86030129bea757fc4f6453e11",
}


@pytest.mark.parametrize("total,warmup,k,power", sorted(OLD_POLYNOMIAL_RATES))
def test_polynomial_is_the_old_schedule_bit_for_bit(total, warmup, k, power):
    steps = list(range((total + 2) * k))
    got = graph_rates(steps, total, warmup, k, Scheduler(), poly_power=power)
    want = [PEAK * reference_factor(s // k, total, warmup, Scheduler(), power) for s in steps]
    np.testing.assert_allclose(got, want, rtol=0, atol=PEAK * 4e-7)
    digest = hashlib.sha256(got.astype("<f4").tobytes()).hexdigest()
    assert digest == OLD_POLYNOMIAL_RATES[(total, warmup, k, power)]


def test_resolve_fills_the_defaults():
    assert lr_schedules.resolve("polynomial", 100, 10) == Scheduler()
    assert lr_schedules.resolve("warmup_stable_decay", 98, 10) == Scheduler(
        "warmup_stable_decay", 20, "cosine", 0.0)  # 20% of 98 = 19.6 -> 20
    assert lr_schedules.resolve("warmup_stable_decay", 12, 2, decay_type="1-sqrt",
                                min_lr_ratio=0.1).num_decay_steps == 2  # 2.4 -> 2
    assert lr_schedules.resolve("cosine", 10, 10, min_lr_ratio=1) == Scheduler(
        "cosine", min_lr_ratio=1.0)


@pytest.mark.parametrize("flags,message", [
    (dict(lr_scheduler_type="warmup_stable_decay", num_warmup_steps=4, num_decay_steps=7),
     r"--num_warmup_steps=4 \+ --num_decay_steps=7 exceed --num_train_steps=10"),
    (dict(lr_scheduler_type="cosine", num_warmup_steps=11),
     r"--num_warmup_steps=11 exceeds --num_train_steps=10"),
    (dict(lr_scheduler_type="cosine", min_lr_ratio=1.5), r"--min_lr_ratio=1.5 must be within"),
    (dict(lr_scheduler_type="warmup_stable_decay", min_lr_ratio=-0.1),
     r"--min_lr_ratio=-0.1 must be within"),
    (dict(lr_scheduler_type="polynomial", num_decay_steps=2),
     r"--num_decay_steps is read by --lr_scheduler_type=warmup_stable_decay only, not "
     r"polynomial"),
    (dict(lr_scheduler_type="cosine", decay_type="linear"),
     r"--decay_type is read by --lr_scheduler_type=warmup_stable_decay only, not cosine"),
    (dict(lr_scheduler_type="polynomial", min_lr_ratio=0.1),
     r"--min_lr_ratio is read by --lr_scheduler_type=warmup_stable_decay or cosine only"),
    (dict(lr_scheduler_type="warmup_stable_decay", num_decay_steps=-1),
     r"--num_decay_steps=-1 must be >= 0"),
])
def test_resolve_refuses_what_does_not_fit_in_one_line_naming_the_flag(flags, message):
    flags = dict(dict(num_train_steps=10, num_warmup_steps=0), **flags)
    with pytest.raises(UserError, match=message) as refusal:
        lr_schedules.resolve(**flags)
    assert "\n" not in str(refusal.value)
