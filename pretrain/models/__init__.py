"""Model code over shared layers: config, encoder, pretraining and task heads.

Imports nothing from pretrain.training, pretrain.checkpoints or pretrain.interop.
"""
