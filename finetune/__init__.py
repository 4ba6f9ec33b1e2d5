"""The task layer: fine-tuning on classification, sentence-pair and NER tasks, and comparisons.

`pretrain` is imported first so that its CPU kernel setting (oneDNN, see
pretrain/__init__.py) is in place before any module here loads TensorFlow.
"""
import pretrain  # noqa: F401
