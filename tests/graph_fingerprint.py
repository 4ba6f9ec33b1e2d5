"""Fingerprints of the encoder graphs with every model option off.

`tests/fixtures/default_graph_fingerprints.json` holds the fingerprints of
the graphs built before the bert4keras options existed (commit bd92907); the
tests check that the default-off path still builds exactly those graphs,
node for node. Regenerate only for an intended change of the default graph:

    python -m tests.graph_fingerprint > tests/fixtures/default_graph_fingerprints.json
"""
import hashlib
import json

import tensorflow.compat.v1 as tf

from pretrain.models import registry
from pretrain.models.bert import modeling

from tests.modeling_helpers import tiny_config

LAYOUTS = {
    "bert": tiny_config(model_type="bert"),
    "google_groups": tiny_config(model_type="albert", albert_layout="google", embedding_size=8,
                                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "brightmart": tiny_config(model_type="albert", albert_layout="brightmart", embedding_size=8),
    "brightmart_preln": tiny_config(model_type="albert", albert_layout="brightmart",
                                    embedding_size=8, layer_norm_position="pre"),
}
CASES = {f"{layout}/{mode}/{'train' if training else 'eval'}": (layout, mode, training)
         for layout in LAYOUTS
         for mode, training in (("bidirectional", True), ("causal", False), ("unilm", False))}


def fingerprint(config_dict, attention_mode="bidirectional", is_training=False):
    """sha256 over every node of the encoder graph (name, op, inputs, attributes)."""
    with tf.Graph().as_default() as graph:
        ids = tf.placeholder(tf.int32, [2, 8])
        mask = tf.placeholder(tf.int32, [2, 8])
        types = tf.placeholder(tf.int32, [2, 8])
        registry.create_encoder(modeling.BertConfig.from_dict(config_dict), is_training, ids,
                                mask, types, attention_mode=attention_mode)
    digest = hashlib.sha256()
    for node in graph.as_graph_def().node:
        digest.update(node.SerializeToString(deterministic=True))
    return digest.hexdigest()


def all_fingerprints():
    return {case: fingerprint(LAYOUTS[layout], mode, training)
            for case, (layout, mode, training) in sorted(CASES.items())}


if __name__ == "__main__":
    print(json.dumps(all_fingerprints(), indent=1, sort_keys=True))
