"""The Estimator training loop: model_fn, optimisation, strategies, input and data checks.

Imports pretrain.models and pretrain.checkpoints, never pretrain.interop.
"""
