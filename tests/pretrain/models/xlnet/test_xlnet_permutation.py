"""XLNet's permutation features: every invariant of a factorisation order, checked on
the masks that permutation_features draws."""
import itertools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models.xlnet.permutation import permutation_features

SEP, CLS = 3, 2
IDS = np.array([10, 11, 12, 13, 14, 15, SEP, 17, 18, 19, 20, 21, 22, 23, SEP, CLS], np.int32)
MASKED = np.array([0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0], bool)
MASKED[6] = True  # a [SEP] marked to predict is never a target
REUSE, PERM, PREDICT = 8, 4, 7


def _features(seed):
    with tf.Graph().as_default(), tf.Session() as session:
        return session.run(permutation_features(tf.constant(IDS), tf.constant(MASKED), REUSE,
                                                PERM, PREDICT, (SEP, CLS), key=_key(seed)))


def _key(seed):
    return tf.constant([seed, 0], tf.int64)


@pytest.fixture(scope="module", params=[1, 2, 3])
def features(request):
    return _features(request.param)


def test_the_reuse_window_never_sees_the_new_part(features):
    assert (features["perm_mask"][:REUSE, REUSE:] == 1).all()


def test_unmasked_tokens_are_seen_by_all_and_see_no_target(features):
    mask = features["perm_mask"]
    functional = np.isin(IDS, (SEP, CLS))
    plain = ~MASKED & ~functional
    targets = MASKED & ~functional
    for j in np.flatnonzero(plain):
        seen_by = slice(0, len(IDS)) if j < REUSE else slice(REUSE, len(IDS))
        assert (mask[seen_by, j] == 0).all()  # its own part and every later one see j
        same_part_targets = [i for i in np.flatnonzero(targets) if (i < REUSE) == (j < REUSE)]
        assert (mask[j, same_part_targets] == 1).all()


def test_targets_follow_one_order_and_never_see_themselves(features):
    mask = features["perm_mask"]
    functional = np.isin(IDS, (SEP, CLS))
    targets = MASKED & ~functional
    assert (np.diag(mask)[targets] == 1).all()
    assert (np.diag(mask)[functional] == 0).all()  # [SEP]/[CLS] see themselves
    for start, stop in ((0, REUSE), (REUSE, len(IDS))):
        hidden = [i for i in range(start, stop) if targets[i] or functional[i]]
        for i, j in itertools.combinations(hidden, 2):
            sees = (mask[i, j] == 0, mask[j, i] == 0)
            assert sum(sees) == 1, (i, j)  # exactly one comes first
            if i // PERM != j // PERM:  # blocks keep their order: the earlier block first
                assert sees == (False, True), (i, j)


def test_target_mapping_lists_the_targets_in_position_order(features):
    targets = np.flatnonzero(MASKED & ~np.isin(IDS, (SEP, CLS)))
    mapping = features["target_mapping"]
    assert mapping.shape == (PREDICT, len(IDS))
    np.testing.assert_array_equal(mapping[:len(targets)].argmax(-1), targets)
    assert (mapping[:len(targets)].sum(-1) == 1).all() and not mapping[len(targets):].any()
    np.testing.assert_array_equal(features["target_ids"][:len(targets)], IDS[targets])
    np.testing.assert_array_equal(features["target_weights"],
                                  [1.0] * len(targets) + [0.0] * (PREDICT - len(targets)))


def test_orders_differ_between_draws_and_bad_sizes_are_refused():
    masks = [_features(seed)["perm_mask"] for seed in range(6)]
    assert len({mask.tobytes() for mask in masks}) > 1
    with pytest.raises(ValueError, match="perm_size 3 must divide"):
        permutation_features(tf.constant(IDS), tf.constant(MASKED), REUSE, 3, PREDICT, (SEP,))
    with tf.Graph().as_default(), tf.Session() as session:
        too_few = permutation_features(tf.constant(IDS), tf.constant(MASKED), REUSE, PERM, 2,
                                       (SEP, CLS), key=_key(1))
        with pytest.raises(tf.errors.InvalidArgumentError, match="more positions to predict"):
            session.run(too_few)
