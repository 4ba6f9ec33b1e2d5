"""Which CPU kernels TensorFlow runs: oneDNN or its default Eigen ones.

TensorFlow 2.15 picks its CPU kernels once, when it loads, from
`TF_ENABLE_ONEDNN_OPTS`. Left unset, it turns oneDNN on only for CPUs with
AVX-512 VNNI/BF16 or AMX; on AVX2-only CPUs the pretraining step then runs on
Eigen kernels and is slower (bench/pretrain_bench.py reports `onednn`).
Importing `pretrain` sets the variable to 1 when it is unset and TensorFlow
is not loaded yet, which holds for `python -m pretrain.run_pretraining` and
the finetune entry points. An explicit `TF_ENABLE_ONEDNN_OPTS=0` is kept.
"""
import os
import sys

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def default_to_onednn():
    """Sets TF_ENABLE_ONEDNN_OPTS=1 unless already chosen or too late.

    Returns True when the variable was set here. Once TensorFlow is loaded
    its kernels are fixed; changing the variable then would only make
    `onednn_enabled()` report kernels that do not run, so it is left alone.
    """
    if ONEDNN_VARIABLE in os.environ or "tensorflow" in sys.modules:
        return False
    os.environ[ONEDNN_VARIABLE] = "1"
    return True


def onednn_enabled():
    """True when TensorFlow runs its oneDNN CPU kernels in this process."""
    try:
        from tensorflow.python.util import _pywrap_util_port  # pylint: disable=import-outside-toplevel
    except ImportError:  # a TensorFlow without the probe: assume its default kernels
        return False
    return bool(_pywrap_util_port.IsMklEnabled())
