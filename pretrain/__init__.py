"""Pretraining, in four rooms (docs/architecture.md §5): models/, training/ (the Estimator
loop), checkpoints/ and interop/ (Hugging Face, SavedModel); run_pretraining on top.

Importing the package defaults TensorFlow's CPU kernels to oneDNN
(`TF_ENABLE_ONEDNN_OPTS=1`, see `pretrain.cpu_kernels`), which TensorFlow
leaves off on AVX2-only CPUs. Set `TF_ENABLE_ONEDNN_OPTS=0` to keep Eigen.
It also hides TensorFlow's C++ INFO lines at start-up (`TF_CPP_MIN_LOG_LEVEL=1`
unless set), so that a tool's own message is what a user reads; warnings and
errors still show.
"""
import os
import sys

from pretrain import cpu_kernels

cpu_kernels.default_to_onednn()
if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
