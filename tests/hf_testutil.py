"""Our model's outputs for a config + checkpoint, to compare with transformers' numbers.

    log_probs, sequence = mlm_and_sequence_output(config, "out/model.ckpt",
                                                  input_ids, attention_mask, token_type_ids)

Builds the graph in a fresh tf.Graph with is_training=False and restores
every model variable from the checkpoint. Only the pooler may be missing
(transformers' *ForMaskedLM has none): pooled_output is None then. Any other
missing variable is an error, so a comparison never runs on random weights.
"""
import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.models import heads, registry
from pretrain.models.config import BertConfig

POOLER = "bert/pooler/"


def model_outputs(config, checkpoint, input_ids, attention_mask=None, token_type_ids=None):
    """Our model on one batch.

    Args:
      config: BertConfig or path of a bert_config.json.
      checkpoint: checkpoint prefix holding the encoder, pooler and MLM head.
      input_ids, attention_mask, token_type_ids: int arrays [B, S].
    Returns:
      dict with mlm_log_probs [B, S, V] (MLM head at every position),
      sequence_output [B, S, H] and pooled_output [B, H] (None without a
      pooler), float32 numpy.
    """
    if not isinstance(config, BertConfig):
        config = BertConfig.from_json_file(config)
    input_ids = np.asarray(input_ids, dtype=np.int32)
    batch, seq = input_ids.shape
    if attention_mask is None:
        attention_mask = np.ones_like(input_ids)
    if token_type_ids is None:
        token_type_ids = np.zeros_like(input_ids)
    with tf.Graph().as_default():
        model = registry.create_encoder(
            config, False, tf.constant(input_ids),
            input_mask=tf.constant(np.asarray(attention_mask, np.int32)),
            token_type_ids=tf.constant(np.asarray(token_type_ids, np.int32)))
        positions = tf.constant(np.tile(np.arange(seq, dtype=np.int32), [batch, 1]))
        _, _, log_probs = heads.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(), positions,
            tf.zeros_like(positions), tf.ones([batch, seq]), model.get_embedding_projection())
        in_checkpoint = {name for name, _ in tf.train.list_variables(checkpoint)}
        variables = {v.op.name: v for v in tf.global_variables()}
        missing = sorted(set(variables) - in_checkpoint)
        if any(not name.startswith(POOLER) for name in missing):
            raise ValueError("checkpoint %s lacks %s" % (checkpoint, missing))
        fetches = {"mlm_log_probs": log_probs, "sequence_output": model.get_sequence_output()}
        if not missing:
            fetches["pooled_output"] = model.get_pooled_output()
        saver = tf.train.Saver({name: variables[name] for name in variables
                                if name in in_checkpoint})
        with tf.Session() as session:
            saver.restore(session, checkpoint)
            values = session.run(fetches)
    values["mlm_log_probs"] = values["mlm_log_probs"].reshape(batch, seq, -1)
    values.setdefault("pooled_output", None)
    return values


def mlm_and_sequence_output(config, checkpoint, input_ids, attention_mask=None,
                            token_type_ids=None):
    """(mlm_log_probs [B, S, V], sequence_output [B, S, H]) of our model; see model_outputs."""
    values = model_outputs(config, checkpoint, input_ids, attention_mask, token_type_ids)
    return values["mlm_log_probs"], values["sequence_output"]


def sample_batch(seed=0, vocab_size=50, batch=2, seq=12):
    """input_ids (from 5..vocab_size-1), attention_mask (row 1 padded from 8 on),
    token_type_ids (1 from position 6 on): int32 [batch, seq]."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, vocab_size, size=(batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1:, 8:] = 0
    types = np.zeros_like(ids)
    types[:, 6:] = 1
    return ids, mask, types


def write_tiny_vocab(path, size=50):
    """A vocab.txt of `size` lines: the five special tokens, then t0, t1, ..."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += ["t%d" % index for index in range(size - len(tokens))]
    with open(path, "w", encoding="utf-8") as writer:
        writer.write("\n".join(tokens) + "\n")
    return str(path)


def random_checkpoint(config, prefix, seed=0, num_labels=None, skip=(), extra=None):
    """Writes every model variable of `config` (encoder, pooler, both heads, the
    classifier when num_labels; none starting with a prefix in `skip`) with
    random values, plus the `extra` {name: array}; returns the model {name: array}.

    LayerNorm gammas are 1 + N(0, 0.2), everything else N(0, 0.2), so a
    swapped, transposed or dropped tensor changes the outputs.
    """
    from pretrain.checkpoints import checkpoint_io  # pylint: disable=import-outside-toplevel
    from pretrain.interop import hf_weights  # pylint: disable=import-outside-toplevel
    if not isinstance(config, BertConfig):
        config = BertConfig.from_json_file(config)
    rng = np.random.RandomState(seed)
    tensors = {}
    for name, shape in sorted(hf_weights.model_variable_shapes(config, num_labels).items()):
        if any(name.startswith(prefix_) for prefix_ in skip):
            continue
        value = rng.normal(0.0, 0.2, shape) + (1.0 if name.endswith("/gamma") else 0.0)
        tensors[name] = value.astype(np.float32)
    checkpoint_io.write_checkpoint(dict(tensors, **(extra or {})), prefix, write_state=True)
    return tensors


def run_main(module, *args):
    """(exit code, stderr) of `python -m MODULE ARGS` (an absl CLI), run in this process."""
    import contextlib  # pylint: disable=import-outside-toplevel
    import io  # pylint: disable=import-outside-toplevel
    from absl import flags  # pylint: disable=import-outside-toplevel
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            module.main([module.__name__] + list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    finally:
        flags.FLAGS.unparse_flags()
    return code, err.getvalue()


def edit_model_dir(target, config=None, state=None):
    """Changes a transformers model directory in place: config.json fields updated from
    `config`; `state`, a function of the state dict returning {key: array, or None to
    drop it}, applied to model.safetensors. Returns `target`."""
    import json  # pylint: disable=import-outside-toplevel
    import pathlib  # pylint: disable=import-outside-toplevel
    from safetensors.numpy import load_file, save_file  # pylint: disable=import-outside-toplevel
    target = pathlib.Path(target)
    if config:
        raw = json.loads((target / "config.json").read_text())
        raw.update(config)
        (target / "config.json").write_text(json.dumps(raw))
    if state:
        weights = load_file(str(target / "model.safetensors"))
        for key, value in state(weights).items():
            if value is None:
                weights.pop(key, None)
            else:
                weights[key] = value
        save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    return target
