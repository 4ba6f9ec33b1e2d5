"""ELECTRA's outputs from our graph and random ELECTRA checkpoints, to compare with
transformers' ElectraForPreTraining / ElectraForMaskedLM.

    ours = electra_outputs(config, "out/model.ckpt", input_ids, attention_mask, token_type_ids)
    ours["disc_logits"], ours["gen_mlm_log_probs"], ...
"""
import pathlib

import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.interop import hf_electra
from pretrain.models import registry
from pretrain.models.electra import pretraining
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.electra.modeling import ElectraEncoder

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "hf_electra"


def read_config(config):
    return config if isinstance(config, ElectraConfig) else registry.read_config(str(config))


def electra_outputs(config, checkpoint, input_ids, attention_mask, token_type_ids,
                    with_generator=True):
    """Our networks on one batch (is_training=False), every variable restored from checkpoint.

    Returns float32 numpy: disc_logits [B, S], disc_sequence_output [B, S, H] and, with the
    generator, gen_mlm_log_probs [B, S, V] (its MLM head at every position) and
    gen_sequence_output [B, S, Hg]."""
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
            fetches["gen_sequence_output"] = gen.get_sequence_output()
        saver = tf.train.Saver(tf.global_variables())  # fails on any missing variable
        with tf.Session() as session:
            saver.restore(session, str(checkpoint))
            return session.run(fetches)


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
