"""XLNet's permutation features, made at input time from one pretraining record.

A record gives the tokens `input` [S] and `is_masked` [S] (the positions to predict,
whole words chosen by data_gen). The factorisation order is drawn here, anew each
time a record is read (a stateless draw keyed by the run's seed and the record's position in
the input stream, so that a resumed run draws the orders an unkilled one does):

  * the sequence is cut into the reuse window [0, R) and the rest [R, S); every
    position of the window comes before every position of the rest, so the window
    never sees the new part;
  * within each part, blocks of `perm_size` positions keep their order and the
    offsets inside a block are shuffled, the same shuffle for every block (upstream's
    local permutation);
  * positions not to predict (and not [SEP]/[CLS]) come first: everyone sees them,
    they see no position to predict;
  * a position to predict sees only the positions before it in the order, never
    itself; [SEP]/[CLS] (never predicted) see themselves and what comes before.

Returns perm_mask [S, S] float32 (1: position i may not see position j),
target_mapping [P, S] float32 (one-hot rows of the predicted positions, in
position order, zero rows after them), target_ids [P] int (the token at each) and
target_weights [P] float32 (1 for a real prediction, 0 for padding), P =
num_predict.
"""
import dataclasses

import tensorflow.compat.v1 as tf


def _local_order(length, perm_size, key):
    """[length] int64: each position's rank in the order of one part (see above); a
    stateless shuffle of `key` ([2] int64), a stateful one when None."""
    index = tf.reshape(tf.range(length, dtype=tf.int64), [-1, perm_size])  # [blocks, perm]
    offsets = tf.transpose(index)
    shuffled = (tf.random.shuffle(offsets) if key is None  # shuffles offsets
                else tf.random.experimental.stateless_shuffle(offsets, seed=key))
    return tf.reshape(tf.transpose(shuffled), [-1])


def _part_mask(ids, is_masked, order, functional_ids):
    """perm_mask [L, L] of one part and its targets [L] bool."""
    functional = tf.zeros_like(is_masked)
    for token in functional_ids:
        functional = tf.logical_or(functional, tf.equal(ids, token))
    visible_to_all = tf.logical_and(tf.logical_not(is_masked), tf.logical_not(functional))
    hidden = tf.logical_not(visible_to_all)  # to predict, or [SEP]/[CLS]
    targets = tf.logical_and(hidden, tf.logical_not(functional))
    rank = tf.where(visible_to_all, -tf.ones_like(order), order)
    # A target does not see itself; every other position does.
    own_rank = tf.where(targets, rank, rank + 1)
    blocked = tf.logical_and(own_rank[:, None] <= rank[None, :], hidden[None, :])
    return tf.cast(blocked, tf.float32), targets


def permutation_features(input_ids, is_masked, reuse_length, perm_size, num_predict,
                         functional_ids, key=None):
    """See the module docstring. input_ids [S] int, is_masked [S] bool/int; S, reuse_length
    static with reuse_length and S - reuse_length multiples of perm_size; key: [2] int64,
    the seed of the order's stateless draw (None: a stateful draw)."""
    length = int(input_ids.shape[0])
    rest = length - reuse_length
    if perm_size <= 0 or reuse_length % perm_size or rest % perm_size:
        raise ValueError("perm_size %d must divide the reuse length %d and the rest %d"
                         % (perm_size, reuse_length, rest))
    is_masked = tf.cast(is_masked, tf.bool)
    masks, targets = [], []
    for start, size in ((0, reuse_length), (reuse_length, rest)):
        if size == 0:
            continue
        part_key = (None if key is None
                    else tf.random.experimental.stateless_fold_in(key, start))
        mask, part_targets = _part_mask(
            input_ids[start:start + size], is_masked[start:start + size],
            _local_order(size, perm_size, part_key), functional_ids)
        masks.append(tf.pad(mask, [[0, 0], [start, length - start - size]],
                            constant_values=1.0 if start == 0 else 0.0))
        targets.append(part_targets)
    perm_mask = tf.concat(masks, 0)
    positions = tf.boolean_mask(tf.range(length), tf.concat(targets, 0))
    check = tf.debugging.assert_less_equal(
        tf.shape(positions)[0], num_predict,
        message="a record has more positions to predict (is_masked, not [SEP]/[CLS]) than "
                "--num_predict; make the data with --max_predictions_per_seq <= num_predict")
    with tf.control_dependencies([check]):
        padding = tf.maximum(num_predict - tf.shape(positions)[0], 0)
    target_mapping = tf.pad(tf.one_hot(positions, length, dtype=tf.float32),
                            [[0, padding], [0, 0]])
    target_ids = tf.pad(tf.gather(input_ids, positions), [[0, padding]])
    target_weights = tf.pad(tf.ones_like(positions, tf.float32), [[0, padding]])
    return {"perm_mask": tf.reshape(perm_mask, [length, length]),
            "target_mapping": tf.reshape(target_mapping, [num_predict, length]),
            "target_ids": tf.reshape(target_ids, [num_predict]),
            "target_weights": tf.reshape(target_weights, [num_predict])}


@dataclasses.dataclass(frozen=True)
class PermutationInput:
    """How run_pretraining turns XLNet records into model features (record_features).

    reuse_length: the records' reuse window (their sidecar's reuse_length);
    perm_size: the local permutation's block (run_pretraining --perm_size);
    num_predict: P, the records' max_predictions_per_seq;
    functional_ids: <sep>, <cls> ids (the sidecar's xlnet_special_ids), never targets.
    """
    reuse_length: int
    perm_size: int
    num_predict: int
    functional_ids: tuple


def record_features(record, options, key=None):
    """One parsed record of data_gen's xlnet mode (input, seg_id, is_masked [S], ...)
    -> the objective's features: input_ids, input_mask (all real: records are full),
    segment_ids [S] and permutation_features' perm_mask, target_mapping, target_ids,
    target_weights. `target` and `label` are not read (upstream's pretraining does not
    train on them either). key: [2] int64, the seed of this record's order (None: stateful)."""
    input_ids = record["input"]
    features = permutation_features(input_ids, record["is_masked"], options.reuse_length,
                                    options.perm_size, options.num_predict,
                                    options.functional_ids, key)
    features.update(input_ids=input_ids, input_mask=tf.ones_like(input_ids),
                    segment_ids=record["seg_id"])
    return features
