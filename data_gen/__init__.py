"""Corpus text -> pretraining TFRecords, in rooms (docs/architecture.md, "data_gen's rooms"):
text/ (tokenizers, segmentation, vocab, corpus reading), modes/ (the data modes and
their registry: mlm/, xlnet/), records/ (features, sidecar, Example and TFRecord
writing), runner/ (chunks, worker pool, Beam), native/ (C accelerators) and tools/;
config and create_pretraining_data, the stage's entry, on top.
"""
