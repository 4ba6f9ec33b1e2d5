"""Other formats: Hugging Face model directories and TF Serving SavedModels.

Imports pretrain.models and pretrain.checkpoints, never pretrain.training.
"""
