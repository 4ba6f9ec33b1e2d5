"""XLNet's outputs from our graph and random XLNet checkpoints, to compare with transformers'
XLNetLMHeadModel (tests/fixtures/hf_xlnet, written by transformers).

    ours = xlnet_outputs(config, "out/model.ckpt", arrays)   # arrays: expected_outputs.npz
    ours["sequence_output"], ours["plm_logits"], ...

`xlnet_chain` counts what float32_bounds needs for their bounds (see hf_interop).
"""
import pathlib
import shutil
import struct

import numpy as np
import tensorflow.compat.v1 as tf

from tests.testutil.hf_interop import encoder_chain
from pretrain.models.xlnet import hf as hf_xlnet
from pretrain.models import registry, task_heads
from pretrain.models.xlnet.config import XLNetConfig
from pretrain.models.xlnet.modeling import XLNetModel, lm_logits

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "hf_xlnet"
LM_HEAD = FIXTURE / "lm_head"
WORDPIECE_VOCAB = FIXTURE.parent / "hf" / "vocab"  # 115 tokens
# XLNetTokenizer's pieces in xlnet-base-cased's order, then ordinary ones.
SPM_PIECES = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>",
              "\u2581", "\u2581a", "b", "c", "\u4e2d", "\u6587"]


def load_fixture_arrays():
    with np.load(FIXTURE / "expected_outputs.npz") as data:
        return {key: data[key] for key in data.files}


def read_config(config):
    return config if isinstance(config, XLNetConfig) else registry.read_config(str(config))


def xlnet_outputs(config, checkpoint, arrays, num_labels=0):
    """Our XLNet on the fixture's inputs (is_training=False), restored from `checkpoint`.

    Returns float32 numpy: sequence_output [B, S, d], lm_logits [B, S, V] (no
    permutation); perm_sequence_output [B, S, d], perm_query_output [B, P, d],
    plm_logits [B, P, V] (arrays' perm_mask and target_mapping); with num_labels also
    pooled_output [B, d] and classifier_logits [B, num_labels]. A checkpoint without
    model/lm_loss/bias (a classifier) gives no lm_logits / plm_logits."""
    config = read_config(config)
    with tf.Graph().as_default():
        feed = {key: tf.constant(arrays[key]) for key in (
            "input_ids", "attention_mask", "token_type_ids", "perm_mask", "target_mapping")}
        inputs = (feed["input_ids"], feed["attention_mask"], feed["token_type_ids"])
        permuted = XLNetModel(config, False, *inputs, perm_mask=feed["perm_mask"],
                              target_mapping=feed["target_mapping"])
        fetches = {"perm_sequence_output": permuted.get_sequence_output(),
                   "perm_query_output": permuted.get_query_output()}
        fetches["plm_logits"] = lm_logits(permuted.get_query_output(),
                                          permuted.get_embedding_table(), config)
        with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE):
            plain = XLNetModel(config, False, *inputs)
            fetches["sequence_output"] = plain.get_sequence_output()
            fetches["lm_logits"] = lm_logits(plain.get_sequence_output(),
                                             plain.get_embedding_table(), config)
        if num_labels:
            fetches["pooled_output"] = plain.get_pooled_output()
            fetches["classifier_logits"] = task_heads.get_classifier_output(
                config, fetches["pooled_output"], num_labels, False)[0]
        variables = tf.global_variables()
        lm_bias = [v for v in variables if v.op.name == "model/lm_loss/bias"]
        if "model/lm_loss/bias" not in dict(tf.train.list_variables(str(checkpoint))):
            variables = [v for v in variables if v not in lm_bias]  # a classifier's import
            fetches = {key: value for key, value in fetches.items() if "lm_logits" not in key}
        saver = tf.train.Saver(variables)  # fails on any other missing variable
        with tf.Session() as session:
            session.run(tf.variables_initializer(lm_bias))
            saver.restore(session, str(checkpoint))
            return session.run(fetches)


def xlnet_chain(config, seq_length, output):
    """(roundings, elementwise) on the longest chain of an xlnet_outputs `output` on
    [B, seq_length] inputs (hf_interop.encoder_chain): the encoder as encoder_ulps counts a
    post-LN layer, plus per layer XLNet's relative attention (the projection of the position
    encoding, d_model; the position and segment scores, d_head each, and the sum of the
    three scores) and once the encoding's sin/cos; the content and the query stream run
    the same chain. Then
    - lm_logits / plm_logits: the decoder (d_model; no transform, no softmax);
    - pooled_output: the summary (d_model) and its tanh;
    - classifier_logits: the pooled output and the classifier (d_model)."""
    config = read_config(config)
    d_model = config.d_model
    extra = [d_model, config.d_head, config.d_head, 3] * config.n_layer
    elementwise = 1
    if output.endswith("lm_logits"):
        extra += [d_model]
    elif output in ("pooled_output", "classifier_logits"):
        extra += [d_model] * (1 if output == "pooled_output" else 2)
        elementwise += 1
    return encoder_chain(d_model, config.d_inner, seq_length, config.n_head, config.n_layer,
                         extra, elementwise)


def random_xlnet_tensors(config, seed=0, summary=False, num_labels=None):
    """{name: float32 array} of every variable of the XLNet graph (hf_xlnet.variable_shapes):
    gammas 1 + N(0, 0.2), the rest N(0, 0.2)."""
    rng = np.random.RandomState(seed)
    tensors = {}
    for name, shape in sorted(hf_xlnet.variable_shapes(config, summary, num_labels).items()):
        value = rng.normal(0.0, 0.2, shape) + (1.0 if name.endswith("/gamma") else 0.0)
        tensors[name] = value.astype(np.float32)
    return tensors


def _field(number, wire, payload):
    return bytes([number << 3 | wire]) + payload


def _length_delimited(number, data):
    size, varint = len(data), b""
    while True:
        varint += bytes([(size & 0x7F) | (0x80 if size > 0x7F else 0)])
        size >>= 7
        if not size:
            return _field(number, 2, varint + data)


def write_spm_model(path, pieces=tuple(SPM_PIECES)):
    """A sentencepiece ModelProto holding only `pieces` (piece, score, type NORMAL): enough
    for the files to travel and for hf_files.read_spm_pieces; sentencepiece itself needs a
    trained model."""
    data = b"".join(_length_delimited(1, _length_delimited(1, piece.encode("utf-8"))
                                      + _field(2, 5, struct.pack("<f", -float(index)))
                                      + _field(3, 0, b"\x01"))
                    for index, piece in enumerate(pieces))
    pathlib.Path(path).write_bytes(data)
    return str(path)


def fixture_copy(target, vocab="vocab.txt", config=None, state=None):
    """A copy of the fixture's lm_head/ with a vocab.txt ("vocab.txt") or spiece.model
    ("spiece.model"), config.json fields changed and state-dict tensors replaced (a
    function of the state dict returning {key: array or None to drop})."""
    from tests.testutil import hf_interop  # pylint: disable=import-outside-toplevel
    target = pathlib.Path(target)
    shutil.copytree(LM_HEAD, target)
    if vocab == "vocab.txt":
        shutil.copyfile(WORDPIECE_VOCAB, target / "vocab.txt")
    elif vocab == "spiece.model":
        write_spm_model(target / "spiece.model")
    hf_interop.edit_model_dir(target, config, state)
    return target
