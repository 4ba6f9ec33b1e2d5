"""Corpus text -> pretraining TFRecords, in rooms (docs/architecture.md, "data_gen's rooms"):
text/ (tokenizers, segmentation, vocab, corpus reading), modes/ (the data modes and
their registry: mlm/, xlnet/), records/ (features, sidecar, Example and TFRecord
writing), runner/ (chunks, worker pool, Beam), native/ (C accelerators) and tools/;
config and create_pretraining_data, the stage's entry, on top.

Modules imported from their old flat paths (`from data_gen import tokenization`)
still load, through the aliases of data_gen.moved_modules.
"""
from data_gen import moved_modules

moved_modules.install()


def __getattr__(name):
    """`from data_gen import tokenization` (and the other modules that moved into rooms)."""
    return moved_modules.alias(name)
