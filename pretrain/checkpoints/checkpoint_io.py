"""TF checkpoints as plain {name: numpy array} dicts, read and written.

    tensors = read_checkpoint("model.ckpt")            # every tensor, slots included
    write_checkpoint(tensors, "out/model.ckpt", write_state=True)

`write_checkpoint` saves exactly the given names (no scopes added, no
variables of any graph involved) with one SaveV2 op fed through
placeholders, so large arrays are not embedded in a graph. It writes under a
hidden temporary prefix in the same directory and renames the data file,
then the index file, so `PREFIX.index` appears only once the checkpoint is
complete. With `write_state=True` it also writes the directory's
`checkpoint` state file (a relative path), so the directory itself works as
`--init_checkpoint`.
"""
import os

import numpy as np
import tensorflow.compat.v1 as tf

_DATA_SUFFIX = ".data-00000-of-00001"
_INDEX_SUFFIX = ".index"


def read_checkpoint(prefix, names=None):
    """{name: ndarray} of the checkpoint at `prefix` (all tensors, or only `names`)."""
    reader = tf.train.load_checkpoint(prefix)
    if names is None:
        names = reader.get_variable_to_shape_map()
    return {name: reader.get_tensor(name) for name in names}


def _save_v2(tensors, prefix):
    """Writes PREFIX.index and PREFIX.data-00000-of-00001 (one shard)."""
    names = sorted(tensors)
    with tf.Graph().as_default():
        placeholders = [tf.placeholder(tf.as_dtype(np.asarray(tensors[name]).dtype),
                                       np.shape(tensors[name])) for name in names]
        save = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                                 shape_and_slices=[""] * len(names), tensors=placeholders)
        with tf.Session() as session:
            session.run(save, {placeholder: tensors[name]
                               for placeholder, name in zip(placeholders, names)})


def write_state_file(directory, checkpoint_name):
    """Writes DIRECTORY/checkpoint naming `checkpoint_name` (relative to DIRECTORY)."""
    path = os.path.join(directory, "checkpoint")
    temporary = os.path.join(directory, ".checkpoint.tmp-%d" % os.getpid())
    with open(temporary, "w", encoding="utf-8") as writer:
        writer.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n'
                     % (checkpoint_name, checkpoint_name))
    os.replace(temporary, path)


def write_checkpoint(tensors, prefix, write_state=False):
    """Saves {name: ndarray} as a TF checkpoint at `prefix`, atomically.

    Args:
      tensors: {checkpoint name: array-like}; names are written as given.
      prefix: checkpoint prefix, e.g. "out/model.ckpt" (its directory is created).
      write_state: also write the directory's `checkpoint` file pointing here.
    Returns:
      prefix.
    """
    if not tensors:
        raise ValueError("write_checkpoint: no tensors to write to %s" % prefix)
    directory, base = os.path.split(os.path.abspath(prefix))
    prefix = os.path.join(directory, base)
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, ".%s.tmp-%d" % (base, os.getpid()))
    try:
        _save_v2(tensors, temporary)
        os.replace(temporary + _DATA_SUFFIX, prefix + _DATA_SUFFIX)
        os.replace(temporary + _INDEX_SUFFIX, prefix + _INDEX_SUFFIX)
    finally:
        for suffix in (_DATA_SUFFIX, _INDEX_SUFFIX):
            if os.path.exists(temporary + suffix):
                os.remove(temporary + suffix)
    if write_state:
        write_state_file(directory, base)
    return prefix
