"""Tolerances for the suite's float comparisons, each derived from a stated error bound.

One ulp of a value v is EPS * |v| (float32: EPS = 2**-23, 1.19e-7 at 1.0). The suite meets
three situations:

1. **Same operations** (same graph, same shapes, same kernels, same process): the results
   are bit-identical, so the tests assert exact equality and no tolerance exists.
2. **The same mathematics by another sequence of operations**: another blocking of a
   matmul (batch 1 against batch 2; oneDNN against Eigen; AVX2, AVX-512 or AMX kernels),
   a one-hot matmul for a gather, two devices' partial sums, NumPy or torch as the
   reference. Only rounding differs. A float32 sum of n terms evaluated in any order is
   within (n - 1) * u * sum|x_i| of the exact sum (u = EPS / 2; Higham, *Accuracy and
   Stability of Numerical Algorithms*, 2nd ed., eq. 4.4), so two orders differ by at most
   (n - 1) * EPS * sum|x_i|. A value computed through a chain of such sums differs by at
   most the sum of their bounds (first order). The suite's networks normalise their
   activations (LayerNorm, softmax), so sum|x_i| is of the order of the compared values,
   and the bound is stated in ulps of their magnitude (the largest |expected|):
   `summation_ulps(widths)` for a chain of sums, `encoder_ulps(...)` for a transformer's
   longest chain. Elementwise functions (exp, tanh, erf, rsqrt, log) add
   ELEMENTWISE_ULPS each: Eigen's float32 versions were measured within 2.7 ulps of the
   largest value against float64 on [-8, 8], and 8 leaves room for other builds.
   Our graph against another library's (transformers' torch models and their fixtures)
   bounds its sums by case 3's probabilistic rule instead (hf_interop.interop_ulps): there
   the worst case comes within 1-5x of a wrong GELU's effect, which those tests must catch.
   Training comparisons add how far two runs' weights may drift apart over their updates
   (pretrain_data.weight_drift).
3. **Reduced precision** (bf16 / fp16 compute against float32): the worst-case chain
   bound in that format's ulps is larger than the values themselves, so the bound used is
   the probabilistic one (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019): the
   rounding errors of a chain of r roundings are independent with mean zero, and their
   sum stays within sigmas * sqrt(r) * u with probability at least 1 - 2 exp(-sigmas^2 / 2)
   (`random_rounding_ulps`).

Sampling tests (shares of random draws) are not rounding: `binomial_tolerance` gives
their bound as a number of standard errors.

`FLOAT32_BOUNDS_REPORT=path.jsonl` appends, for every comparison made through
`assert_close`, the measured difference in ulps beside the bound, so the margins can be
read off each CPU kernel path (TF_ENABLE_ONEDNN_OPTS=0/1, ONEDNN_MAX_CPU_ISA=AVX2/...).
"""
import json
import os

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)   # 2**-23
EPS16 = float(np.finfo(np.float16).eps)   # 2**-10
EPS_BF16 = 2.0 ** -7                      # bfloat16 keeps 8 significand bits
ELEMENTWISE_ULPS = 8


def summation_ulps(*widths):
    """First-order bound, in ulps of the result's magnitude, on the difference between
    two evaluation orders of a chain of sums of `widths` terms each (case 2 above)."""
    return float(sum(max(int(n) - 1, 0) for n in widths))


def encoder_ulps(hidden, intermediate, seq_length, heads, layers, extra_widths=()):
    """summation_ulps of a post- or pre-LN transformer's longest chain of sums.

    Per layer: the Q/K/V projection (hidden), the scores (head size), the softmax
    denominator and the context (seq_length each), the attention output (hidden),
    LayerNorm's mean and variance (hidden, twice), the feed-forward in (hidden) and out
    (intermediate), and the second LayerNorm; plus the embedding LayerNorm. Each layer
    also has one GELU and one exp (ELEMENTWISE_ULPS each). `extra_widths` adds the sums
    of heads or a reference's own layout (e.g. an MLM output over the vocab).
    """
    head = hidden // heads
    per_layer = [hidden, head, seq_length, seq_length, hidden, hidden, hidden,
                 hidden, intermediate, hidden, hidden]
    widths = [hidden, hidden] + per_layer * layers + list(extra_widths)
    return summation_ulps(*widths) + 2 * layers * ELEMENTWISE_ULPS


def random_rounding_ulps(roundings, sigmas=6.0):
    """Probabilistic bound (case 3), in ulps, on `roundings` independent roundings to a
    format: sigmas * sqrt(roundings) * u with u = EPS / 2; 6 sigmas fail with p < 2e-8."""
    return sigmas * float(np.sqrt(roundings)) / 2.0


def magnitude(values):
    """The scale a bound in ulps refers to: the largest |value| (at least the smallest
    normal float32, so an all-zero reference still has a scale)."""
    return max(float(np.max(np.abs(np.asarray(values, dtype=np.float64)))),
               float(np.finfo(np.float32).tiny))


def tolerance(ulps, scale, eps=EPS32):
    """The absolute tolerance `ulps` ulps of `scale` make (eps: the format's EPS)."""
    return ulps * eps * scale


def assert_close(actual, expected, ulps, *, scale=None, eps=EPS32, err_msg=""):
    """|actual - expected| <= ulps * eps * scale elementwise, scale defaulting to the
    magnitude of `expected` (an array scale: a bound per element, e.g. np.abs(expected) for
    ulps of each value). Records the measured ulps under FLOAT32_BOUNDS_REPORT."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = magnitude(expected) if scale is None else scale
    _report(actual, expected, ulps, scale, eps, err_msg)
    bound = tolerance(ulps, np.asarray(scale, dtype=np.float64), eps)
    if np.ndim(bound) == 0:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=float(bound),
                                   err_msg=f"{err_msg} (bound: {ulps:g} ulps of {scale:.4g})")
        return
    worst = np.abs(actual - expected) - bound
    assert np.all(worst <= 0), (f"{err_msg}: {int(np.sum(worst > 0))} element(s) beyond "
                                f"{np.max(ulps):g} ulps of their scale, the worst by "
                                f"{np.max(worst):.3g}")


def binomial_tolerance(p, n, sigmas=5.0):
    """Half-width of `sigmas` standard errors of a share with probability p over n draws:
    a correct sampler misses it with probability below 6e-7 at 5 sigmas."""
    return sigmas * float(np.sqrt(p * (1.0 - p) / n))


def _report(actual, expected, ulps, scale, eps, what):
    path = os.environ.get("FLOAT32_BOUNDS_REPORT")
    if not path:
        return
    measured = float(np.max(np.abs(actual - expected) / (eps * np.asarray(scale)),
                            initial=0.0))
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "?"),
                              "what": what, "measured_ulps": round(measured, 2),
                              "bound_ulps": float(np.max(ulps)), "eps": eps}) + "\n")
