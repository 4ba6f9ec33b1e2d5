"""A tiny XLNet trained on the permutation LM learns: the loss on predicted positions falls
far below the uniform guess and the accuracy far above chance.

Toy language: each sequence counts up from a random start by a random step (mod V), so
a position's token follows from any two visible neighbours, but not from the position
alone. The features are made at input time by permutation_features, as training will.
"""
import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.models.xlnet.config import XLNetConfig
from pretrain.models.xlnet.permutation import permutation_features
from pretrain.models.xlnet.pretraining import xlnet_pretraining_losses

VOCAB, LENGTH, REUSE, PERM, PREDICT, BATCH = 24, 16, 8, 4, 4, 32
SEP, CLS = 1, 2  # never drawn: tokens start at 3


def _records(seed):
    rng = np.random.RandomState(seed)
    while True:
        start, step = rng.randint(0, VOCAB - 3), rng.randint(1, 4)
        ids = 3 + (start + step * np.arange(LENGTH)) % (VOCAB - 3)
        masked = np.zeros(LENGTH, bool)
        masked[rng.choice(LENGTH, PREDICT, replace=False)] = True
        yield ids.astype(np.int32), masked


def _dataset(seed):
    dataset = tf.data.Dataset.from_generator(
        lambda: _records(seed), (tf.int32, tf.bool), ([LENGTH], [LENGTH]))

    def features(ids, masked):
        ids.set_shape([LENGTH])
        made = permutation_features(ids, masked, REUSE, PERM, PREDICT, (SEP, CLS))
        made.update(input_ids=ids, segment_ids=tf.zeros([LENGTH], tf.int32),
                    input_mask=tf.ones([LENGTH], tf.int32))
        return made
    return dataset.map(features).batch(BATCH, drop_remainder=True)


def test_a_tiny_xlnet_learns_the_permutation_lm():
    config = XLNetConfig(n_token=VOCAB, d_model=32, n_layer=2, n_head=2, d_head=16, d_inner=64,
                         ff_activation="gelu", untie_r=True, dropout=0.0, dropatt=0.0)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        batch = tf.data.make_one_shot_iterator(_dataset(0)).get_next()
        outputs = xlnet_pretraining_losses(config, batch, is_training=True)
        predicted = tf.argmax(outputs["plm_log_probs"], -1, output_type=tf.int32)
        accuracy = tf.reduce_sum(tf.cast(tf.equal(predicted, outputs["plm_ids"]), tf.float32)
                                 * outputs["plm_weights"]) / tf.reduce_sum(outputs["plm_weights"])
        train = tf.train.AdamOptimizer(3e-3).minimize(outputs["loss"])
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            first = session.run(outputs["loss"])
            for _ in range(300):
                session.run(train)
            late = [session.run([outputs["loss"], accuracy]) for _ in range(10)]
    loss, acc = np.mean(late, axis=0)
    uniform = np.log(VOCAB)
    assert first > 0.7 * uniform  # it starts near the uniform guess
    assert loss < 0.35 * uniform, (first, loss)
    assert acc > 0.6, acc  # chance is 1/21
