"""Resuming from checkpoints written before the optimizer slots took Google's names.

Up to version 0.1.0, `run_pretraining` saved the Adam moments of a variable
`V` as `V/AdamWeightDecay` and `V/AdamWeightDecay_1` (AdamW) or `V/Lamb` and
`V/Lamb_1` (LAMB). They are now `V/adam_m` and `V/adam_v`, as Google's
optimizers write them. When the checkpoint an Estimator is about to resume
from still has the old names, `install_legacy_slot_saver(model_dir, ...)`
puts a `LegacySlotSaver` in the graph's SAVERS collection: it saves under the
new names and restores an old checkpoint through a second saver that maps
each new name to the old one. Files are never rewritten; the next checkpoint
written has the new names.
"""
import copy
import re

import tensorflow.compat.v1 as tf
from absl import logging
from tensorflow.python.training.saving import saveable_object, saveable_object_util

# Checkpoint names of the moment slots, `<variable>/<name>`, as Google writes them
# (pretrain.training.optimizers creates its slots under these names).
SLOT_NAMES = {"m": "adam_m", "v": "adam_v"}
# Old slot suffix -> new slot suffix.
LEGACY_SLOT_SUFFIXES = {
    "AdamWeightDecay": SLOT_NAMES["m"], "AdamWeightDecay_1": SLOT_NAMES["v"],
    "Lamb": SLOT_NAMES["m"], "Lamb_1": SLOT_NAMES["v"],
}
_LEGACY_SLOT = re.compile(r"^(.+)/(%s)$" % "|".join(sorted(LEGACY_SLOT_SUFFIXES, key=len,
                                                           reverse=True)))


def legacy_slot_map(checkpoint_names):
    """{new name: old name} for every old-style slot among `checkpoint_names`."""
    mapping = {}
    for name in checkpoint_names:
        match = _LEGACY_SLOT.match(name)
        if match:
            mapping["%s/%s" % (match.group(1), LEGACY_SLOT_SUFFIXES[match.group(2)])] = name
    return mapping


def _checkpoint_names(prefix):
    return [name for name, _ in tf.train.list_variables(prefix)]


def _renamed(value, name):
    """`value` saved under `name`: variables take the dict key, saveables carry their own."""
    if not isinstance(value, saveable_object.SaveableObject):
        return value
    if len(value.specs) != 1:
        raise ValueError(f"cannot rename the multi-part saveable {value.name} to {name}")
    renamed = copy.copy(value)
    renamed.specs = [copy.copy(value.specs[0])]
    renamed.specs[0].name = name
    renamed.name = name
    return renamed


class LegacySlotSaver(tf.train.Saver):
    """A Saver that writes the new slot names and can restore the old ones.

    Built lazily like Estimator's own saver (`defer_build=True`); the mapped
    restore saver is built at the same time, before the graph is finalized.
    """

    def __init__(self, legacy_map, **kwargs):
        kwargs["defer_build"] = True
        super().__init__(**kwargs)
        self._legacy_map = dict(legacy_map)
        self._legacy_restorer = None

    def _build(self, checkpoint_path, build_save, build_restore):
        already_built = self._is_built
        super()._build(checkpoint_path, build_save, build_restore)
        if already_built or self._legacy_restorer is not None:
            return
        saveables = saveable_object_util.op_list_to_dict(self._var_list)
        mapped = {}
        for name, value in saveables.items():
            old_name = self._legacy_map.get(name, name)
            mapped[old_name] = value if old_name == name else _renamed(value, old_name)
        self._legacy_restorer = tf.train.Saver(var_list=mapped, sharded=True)

    def restore(self, sess, save_path):
        if self._legacy_restorer is not None and legacy_slot_map(_checkpoint_names(save_path)):
            logging.warning(
                "checkpoint %s has the optimizer slots under their old names "
                "(<var>/AdamWeightDecay, _1 or <var>/Lamb, _1); restoring them as "
                "<var>/adam_m, <var>/adam_v. Checkpoints written from now on use the new names.",
                save_path)
            return self._legacy_restorer.restore(sess, save_path)
        return super().restore(sess, save_path)


def install_legacy_slot_saver(model_dir, keep_checkpoint_max=5,
                              keep_checkpoint_every_n_hours=10000.0):
    """Registers a LegacySlotSaver when `model_dir`'s latest checkpoint has old slot names.

    Call from a model_fn in TRAIN mode, before the Estimator makes its default
    saver. Returns True when it did; a no-op (False) otherwise, or when a
    saver is already registered (model_fn runs once per replica).
    """
    latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
    if latest is None or tf.get_collection(tf.GraphKeys.SAVERS):
        return False
    legacy = legacy_slot_map(_checkpoint_names(latest))
    if not legacy:
        return False
    tf.add_to_collection(tf.GraphKeys.SAVERS, LegacySlotSaver(
        legacy, sharded=True, max_to_keep=keep_checkpoint_max,
        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
        save_relative_paths=True))
    return True
