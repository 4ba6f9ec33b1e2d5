"""Old optimizer slot names (<var>/AdamWeightDecay, <var>/Lamb, ...) map to Google's adam_m/adam_v."""
import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.checkpoints import checkpoint_compat
from pretrain.training import optimization


def test_legacy_slot_map_covers_adamw_and_lamb_names():
    names = ["bert/x/kernel", "bert/x/kernel/AdamWeightDecay", "bert/x/kernel/AdamWeightDecay_1",
             "cls/b/Lamb", "cls/b/Lamb_1", "global_step", "bert/y/adam_m"]
    assert checkpoint_compat.legacy_slot_map(names) == {
        "bert/x/kernel/adam_m": "bert/x/kernel/AdamWeightDecay",
        "bert/x/kernel/adam_v": "bert/x/kernel/AdamWeightDecay_1",
        "cls/b/adam_m": "cls/b/Lamb", "cls/b/adam_v": "cls/b/Lamb_1"}


def test_both_optimizers_name_their_slots_as_google_does():
    for name in ("adamw", "lamb"):
        with tf.Graph().as_default():
            with tf.variable_scope("m"):
                w = tf.get_variable("kernel", initializer=np.array([1.0, -2.0], np.float32))
            optimization.build_train_op(tf.reduce_sum(w * w), 0.1, 10, 0, optimizer=name)
            slots = sorted(v.op.name for v in tf.global_variables()
                           if v.op.name.startswith("m/kernel/"))
            assert slots == ["m/kernel/adam_m", "m/kernel/adam_v"], name


def test_legacy_saver_restores_old_names_and_saves_new_ones(tmp_path):
    old_prefix, new_prefix = str(tmp_path / "old" / "model.ckpt-3"), str(tmp_path / "new.ckpt")
    values = {"lin/kernel": [1.0, 2.0], "lin/kernel/Lamb": [0.5, 0.25],
              "lin/kernel/Lamb_1": [0.125, 0.0625]}
    with tf.Graph().as_default():
        old = {n: tf.Variable(np.array(v, np.float32), name="v%d" % i)
               for i, (n, v) in enumerate(values.items())}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(old).save(sess, old_prefix)
    with tf.Graph().as_default():
        with tf.variable_scope("lin"):
            w = tf.get_variable("kernel", [2])
        m = tf.get_variable("lin/kernel/adam_m", [2])
        v = tf.get_variable("lin/kernel/adam_v", [2])
        assert checkpoint_compat.install_legacy_slot_saver(str(tmp_path / "old"))
        saver = tf.get_collection(tf.GraphKeys.SAVERS)[0]
        saver.build()
        with tf.Session() as sess:
            saver.restore(sess, old_prefix)
            # restored as stored: exact
            np.testing.assert_array_equal(sess.run([w, m, v]), list(values.values()))
            saver.save(sess, new_prefix, write_meta_graph=False)
    assert sorted(n for n, _ in tf.train.list_variables(new_prefix)) == [
        "lin/kernel", "lin/kernel/adam_m", "lin/kernel/adam_v"]


def test_no_saver_installed_for_new_or_missing_checkpoints(tmp_path):
    with tf.Graph().as_default():
        assert not checkpoint_compat.install_legacy_slot_saver(str(tmp_path))
        assert not tf.get_collection(tf.GraphKeys.SAVERS)
