"""Code every stage shares, below data_gen, pretrain and finetune.

cli_options (the one command-line convention), file_utils (input globs,
atomic writes, remote paths), model_limits (the longest sequence a model
config allows), and for the Python behind scripts/*.sh script_runs (settings,
dry runs, refusals) and script_options (the stage scripts' options).
Plain Python: no TensorFlow at import time.
"""
