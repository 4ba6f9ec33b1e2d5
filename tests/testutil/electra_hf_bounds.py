"""ELECTRA's outputs from our graph and random ELECTRA checkpoints, to compare with
transformers' ElectraForPreTraining / ElectraForMaskedLM.

    ours = electra_outputs(config, "out/model.ckpt", input_ids, attention_mask, token_type_ids)
    ours["disc_logits"], ours["gen_mlm_log_probs"], ...

`electra_chain` counts what float32_bounds needs for their bounds, `electra_bound` gives them
(see hf_interop).
"""
import pathlib

import numpy as np
import tensorflow.compat.v1 as tf

from tests.testutil.hf_interop import encoder_chain, interop_ulps, log_softmax_bound
from pretrain.models.electra import hf as hf_electra
from pretrain.models import registry
from pretrain.models.electra import pretraining
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.electra.modeling import ElectraEncoder
from tests.testutil.float32_bounds import magnitude

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "hf_electra"


def read_config(config):
    return config if isinstance(config, ElectraConfig) else registry.read_config(str(config))


def electra_outputs(config, checkpoint, input_ids, attention_mask, token_type_ids,
                    with_generator=True):
    """Our networks on one batch (is_training=False), every variable restored from checkpoint.

    Returns float32 numpy: disc_logits [B, S], disc_sequence_output [B, S, H] and, with the
    generator, gen_mlm_log_probs [B, S, V] (its MLM head at every position), gen_mlm_logits
    [B, S, V] (the logits they come from) and gen_sequence_output [B, S, Hg]."""
    # pylint: disable=protected-access
    config = read_config(config)
    batch, seq = np.shape(input_ids)
    with tf.Graph().as_default():
        ids, mask, types = (tf.constant(np.asarray(a, np.int32))
                            for a in (input_ids, attention_mask, token_type_ids))
        disc = ElectraEncoder(config.discriminator_config(), False, ids, mask, types,
                              embedding_size=config.embedding_width)
        fetches = {"disc_logits": pretraining._discriminator_logits(config, disc),
                   "disc_sequence_output": disc.get_sequence_output()}
        if with_generator:
            untied = config.untied_generator_embeddings
            gen = ElectraEncoder(config.generator_config(), False, ids, mask, types,
                                 scope="generator",
                                 embedding_size=None if untied else config.embedding_width,
                                 untied_embeddings=untied)
            positions = tf.constant(np.tile(np.arange(seq, dtype=np.int32), [batch, 1]))
            logits = pretraining._generator_logits(config, gen, positions)
            fetches["gen_mlm_log_probs"] = tf.reshape(tf.nn.log_softmax(logits),
                                                      [batch, seq, -1])
            fetches["gen_mlm_logits"] = tf.reshape(logits, [batch, seq, -1])
            fetches["gen_sequence_output"] = gen.get_sequence_output()
        saver = tf.train.Saver(tf.global_variables())  # fails on any missing variable
        with tf.Session() as session:
            saver.restore(session, str(checkpoint))
            return session.run(fetches)


def electra_chain(config, seq_length, output):
    """(roundings, elementwise) on the longest chain of an electra_outputs `output` on
    [B, seq_length] inputs (hf_interop.encoder_chain): the network's encoder, after the
    projection of the E wide embeddings where E is not its width, and
    - disc_logits: the discriminator head's dense (H) and activation, and its dense_1 (H);
    - gen_mlm_log_probs: the generator head's dense (Hg) and activation, its LayerNorm over
      E (mean, variance), the decoder (E) and the log-softmax over V (sum, exp, log)."""
    config = read_config(config)
    network = "generator" if output.startswith("gen_") else "discriminator"
    bert = config.generator_config() if network == "generator" else \
        config.discriminator_config()
    hidden, width = bert.hidden_size, hf_electra.embedding_scope_and_width(config, network)[1]
    extra, elementwise = ([width] if width != hidden else []), 0
    if output == "disc_logits":
        extra, elementwise = extra + [hidden, hidden], 1
    elif output == "gen_mlm_log_probs":
        extra, elementwise = extra + [hidden, width, width, width, config.vocab_size], 3
    return encoder_chain(hidden, bert.intermediate_size, seq_length,
                         bert.num_attention_heads, bert.num_hidden_layers, extra, elementwise)


def electra_bound(config, ours, key, expected, real):
    """(ulps, scale): the bound of our graph against transformers' (hf_interop.interop_ulps
    of electra_chain) on electra_outputs' `key` at the `real` positions ([B, S] bool) where
    `expected` (already selected) is compared, and the magnitude it refers to: for the
    log-probs as log_softmax_bound says; for disc_logits the discriminator's sequence
    output, which the head's two dense layers sum (a logit of 0.9 is a sum of terms of about
    the hidden state's size, 3 here); else `expected`'s."""
    ulps = interop_ulps(electra_chain(config, real.shape[1], key))
    if key == "gen_mlm_log_probs":
        return log_softmax_bound(ulps, expected, ours["gen_mlm_logits"][real])
    if key == "disc_logits":
        return ulps, max(magnitude(expected), magnitude(ours["disc_sequence_output"][real]))
    return ulps, magnitude(expected)


def random_electra_tensors(config, seed=0, skip=()):
    """{name: float32 array} of every variable of the ELECTRA pretraining graph (names
    starting with a prefix in `skip` left out): gammas 1 + N(0, 0.2), the rest N(0, 0.2)."""
    config = read_config(config)
    rng = np.random.RandomState(seed)
    tensors = {}
    for name, shape in sorted(hf_electra.variable_shapes(config).items()):
        if not name.startswith(tuple(skip)):
            value = rng.normal(0.0, 0.2, shape) + (1.0 if name.endswith("/gamma") else 0.0)
            tensors[name] = value.astype(np.float32)
    return tensors


def load_fixture_arrays():
    with np.load(FIXTURES / "expected_outputs.npz") as data:
        return {key: data[key] for key in data.files}
