"""--precision=fp32|fp16|bf16 and --use_xla.

Variables always stay float32; the model computes in `compute_type`
(passed to `pretrain.models.registry.create_encoder`) and the loss is float32.
fp16 needs dynamic loss scaling: the loss is multiplied by a scale before
differentiation and gradients divided by it; an optimizer update whose
gradients are not finite is skipped and the scale halved; after
`growth_interval` finite updates in a row the scale doubles. The scale changes
only on update steps: with gradient accumulation a non-finite micro-batch
anywhere in the cycle skips the whole update and halves the scale once.
bf16 has fp32's exponent range and needs no scaling.
"""
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain.training.variable_utils import replica_safe_variable

PRECISIONS = {"fp32": tf.float32, "fp16": tf.float16, "bf16": tf.bfloat16}
# CPU flags (Linux /proc/cpuinfo names) of instructions that compute in bf16.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def compute_dtype(precision):
    """tf dtype for a --precision value; an unknown value is refused with the choices."""
    key = str(precision).lower()
    if key not in PRECISIONS:
        raise UserError(f"--precision={precision!r} is not supported; choose one of "
                        f"{sorted(PRECISIONS)}")
    return PRECISIONS[key]


def native_bf16_flags(cpuinfo="/proc/cpuinfo"):
    """The flags of NATIVE_BF16_FLAGS this CPU reports; [] where it reports none or the file
    is unreadable (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in NATIVE_BF16_FLAGS if flag in present]
    except OSError:
        pass
    return []


def bf16_hint(precision, flags):
    """One line for a float32 run on a CPU that computes bf16 natively (flags from
    native_bf16_flags), else None."""
    if str(precision).lower() != "fp32" or not flags:
        return None
    return (f"note: this CPU computes bf16 natively ({', '.join(flags)}): --precision=bf16 "
            "trains faster here, at the same accuracy in docs/finetuning.md's measurements")


def needs_loss_scaling(precision):
    return str(precision).lower() == "fp16"


class DynamicLossScale:
    """Loss scale held in variables (checkpointed, so resume keeps it)."""

    def __init__(self, initial_scale=2.0 ** 15, growth_interval=2000, factor=2.0,
                 min_scale=1.0):
        self.growth_interval = int(growth_interval)
        self.factor = float(factor)
        self.min_scale = float(min_scale)
        with tf.variable_scope("loss_scale", reuse=tf.AUTO_REUSE):
            self.scale_var = replica_safe_variable(
                "scale", [], tf.float32, tf.constant_initializer(initial_scale))
            self.good_steps = replica_safe_variable(
                "good_steps", [], tf.int64, tf.zeros_initializer())

    def current_scale(self):
        return tf.identity(self.scale_var.read_value(), name="loss_scale_value")

    def scale(self, loss):
        return tf.cast(loss, tf.float32) * self.scale_var.read_value()

    def unscale(self, grads):
        inv = 1.0 / self.scale_var.read_value()
        return [tf.cast(g, tf.float32) * inv for g in grads]

    def update(self, finite):
        """Op: grow after `growth_interval` finite updates, shrink on overflow."""
        good = self.good_steps.read_value() + 1
        grow = tf.logical_and(finite, good >= self.growth_interval)
        scale = self.scale_var.read_value()
        new_scale = tf.where(finite,
                             tf.where(grow, scale * self.factor, scale),
                             tf.maximum(scale / self.factor, self.min_scale))
        new_good = tf.where(tf.logical_and(finite, tf.logical_not(grow)), good,
                            tf.zeros_like(good))
        return tf.group(self.scale_var.assign(new_scale), self.good_steps.assign(new_good))


def session_config(use_xla=False):
    """ConfigProto with XLA JIT (global level ON_1) when asked."""
    config = tf.ConfigProto(allow_soft_placement=True)
    if use_xla:
        config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    return config
