"""Fingerprints of the encoder graphs with every model option off.

`tests/fixtures/default_graph_fingerprints.json` holds the fingerprints of
the graphs built before the bert4keras options existed (commit bd92907; the
training graphs retaken when dropout became a stateless draw keyed by seed and
step, for exact resume); the tests check that the default-off path still builds
exactly those graphs, node for node. One set per TensorFlow major.minor ("2.15", "2.21"), over the
nodes as serialised: a node carries the attributes its TensorFlow fills in with
their defaults (2.21's MatMul has grad_a/grad_b and BatchMatMulV2 grad_x/grad_y,
all false, which 2.15's lacks), so the same graph hashes differently on each
runtime. The "portable" set hashes the nodes with default-valued attributes
left out; it is one set for every runtime, so it shows that 2.21 builds the
graph 2.15 builds. Regenerate only for an intended change of the default graph,
in each runtime's environment (the portable set is written by the first):

    python -m tests.testutil.graph_fingerprint --write
"""
import hashlib
import json
import pathlib
import sys

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import op_def_registry

from pretrain.models import registry
from pretrain.models.bert import modeling

from tests.testutil.tiny_models import tiny_config

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "default_graph_fingerprints.json"
PORTABLE = "portable"

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


def _without_default_attributes(node):
    """A copy of `node` without the attributes whose value is its op's default."""
    node = type(node).FromString(node.SerializeToString())
    for attr in op_def_registry.get(node.op).attr:
        if attr.HasField("default_value") and attr.name in node.attr \
                and node.attr[attr.name] == attr.default_value:
            del node.attr[attr.name]
    return node


def _encoder_nodes(config_dict, attention_mode, is_training):
    """The nodes of the encoder graph of `config_dict`."""
    with tf.Graph().as_default() as graph:
        ids = tf.placeholder(tf.int32, [2, 8])
        mask = tf.placeholder(tf.int32, [2, 8])
        types = tf.placeholder(tf.int32, [2, 8])
        registry.create_encoder(modeling.BertConfig.from_dict(config_dict), is_training, ids,
                                mask, types, attention_mode=attention_mode)
    return graph.as_graph_def().node


def _digest(nodes, portable):
    digest = hashlib.sha256()
    for node in nodes:
        if portable:
            node = _without_default_attributes(node)
        digest.update(node.SerializeToString(deterministic=True))
    return digest.hexdigest()


def fingerprint(config_dict, attention_mode="bidirectional", is_training=False, portable=False):
    """sha256 over every node of the encoder graph (name, op, inputs, attributes; with
    `portable`, only the attributes that differ from their op's default)."""
    return _digest(_encoder_nodes(config_dict, attention_mode, is_training), portable)


def all_fingerprints(portable=False):
    return fingerprint_sets(portable,)[0]


def fingerprint_sets(*portable):
    """One {case: fingerprint} set per entry of `portable`, each graph built once."""
    sets = tuple({} for _ in portable)
    for case, (layout, mode, training) in sorted(CASES.items()):
        nodes = _encoder_nodes(LAYOUTS[layout], mode, training)
        for found, strip in zip(sets, portable):
            found[case] = _digest(nodes, strip)
    return sets


def runtime():
    """This TensorFlow's major.minor, the key of its fingerprint set ("2.15")."""
    return ".".join(tf.__version__.split(".")[:2])


def recorded_fingerprints(key=None):
    """The fixture's set for this runtime (or `key`); a clear failure when it has none."""
    key = key or runtime()
    sets = json.loads(FIXTURE.read_text(encoding="utf-8"))
    if key not in sets:
        raise LookupError(f"{FIXTURE.name} has no fingerprints for TensorFlow {key} (it has "
                          f"{', '.join(sorted(set(sets) - {PORTABLE}))}): check that the portable "
                          "set still matches, then record this runtime's set with "
                          "`python -m tests.testutil.graph_fingerprint --write`")
    return sets[key]


def write_fixture():
    """Records this runtime's set (and the portable one, if absent) in the fixture, leaving
    the other runtimes' sets as they are."""
    sets = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.exists() else {}
    sets[runtime()] = all_fingerprints()
    sets.setdefault(PORTABLE, all_fingerprints(portable=True))
    FIXTURE.write_text(json.dumps(sets, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_fixture()
        print(f"recorded TensorFlow {runtime()}'s fingerprints in {FIXTURE}")
    elif sys.argv[1:]:
        sys.exit("usage: python -m tests.testutil.graph_fingerprint [--write]  (prints, or records, this "
                 "runtime's fingerprints)")
    else:
        print(json.dumps(all_fingerprints(), indent=1, sort_keys=True))
