"""Records out: the feature schema, tf.train.Example encoding, TFRecord framing and
writing, shard naming and the metadata sidecar. Knows no data mode."""
