"""Pretraining: models, heads, optimisation and the Estimator training loop.

Importing the package defaults TensorFlow's CPU kernels to oneDNN
(`TF_ENABLE_ONEDNN_OPTS=1`, see `pretrain.cpu_kernels`), which TensorFlow
leaves off on AVX2-only CPUs. Set `TF_ENABLE_ONEDNN_OPTS=0` to keep Eigen.
"""
from pretrain import cpu_kernels

cpu_kernels.default_to_onednn()
