"""Code every stage shares, below data_gen, pretrain and finetune.

cli_options (the one command-line convention), file_utils (input globs,
atomic writes, remote paths) and model_limits (the longest sequence a model
config allows). Plain Python: no TensorFlow at import time.
"""
