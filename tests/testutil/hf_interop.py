"""Our model's outputs for a config + checkpoint, to compare with transformers' numbers.

    log_probs, sequence = mlm_and_sequence_output(config, "out/model.ckpt",
                                                  input_ids, attention_mask, token_type_ids)

Builds the graph in a fresh tf.Graph with is_training=False and restores
every model variable from the checkpoint. Only the pooler may be missing
(transformers' *ForMaskedLM has none): pooled_output is None then. Any other
missing variable is an error, so a comparison never runs on random weights.

The bounds of those comparisons (tests/testutil/float32_bounds.py) are here too: `bert_chain` (and
electra_hf_bounds / xlnet_hf_bounds's) counts the roundings and elementwise functions
on the longest chain of an output; `interop_ulps` turns them into the bound of our graph
against transformers', `worst_case_ulps` into the bound of two TensorFlow graphs.
"""
import os
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.models import heads, registry
from pretrain.models.bert.config import BertConfig
from tests.testutil.float32_bounds import (ELEMENTWISE_ULPS, assert_close, encoder_ulps, magnitude,
                                  random_rounding_ulps)

POOLER = "bert/pooler/"


# ---- bounds (tests/testutil/float32_bounds.py) -------------------------------------------------------

def encoder_chain(hidden, intermediate, seq_length, num_heads, layers, extra_widths=(),
                  extra_elementwise=0):
    """(roundings, elementwise functions) on the longest chain float32_bounds.encoder_ulps
    describes: the roundings of its sums (summation_ulps of their widths, i.e. encoder_ulps
    without its 2 elementwise functions per layer), and those 2 per layer (GELU, exp) plus
    `extra_elementwise`."""
    roundings = encoder_ulps(hidden, intermediate, seq_length, num_heads, layers,
                             extra_widths) - 2 * layers * ELEMENTWISE_ULPS
    return roundings, 2 * layers + extra_elementwise


def worst_case_ulps(chain):
    """float32_bounds case 2 as encoder_ulps states it, for two TensorFlow evaluations of
    `chain` ((roundings, elementwise)) by other graphs, shapes or kernels: every rounding
    at its first-order worst case, ELEMENTWISE_ULPS per elementwise function."""
    roundings, elementwise = chain
    return roundings + elementwise * ELEMENTWISE_ULPS


def interop_ulps(chain):
    """Bound, in ulps of the compared magnitude, on our float32 graph against another
    library's float32 evaluation of the same outputs (transformers' torch models or the
    fixtures they wrote): float32_bounds case 2, with `chain` = (roundings, elementwise).

    The worst case (worst_case_ulps: 280-1500 ulps for the models of these tests) is within
    1.1x-4.6x of what a wrong GELU does to these outputs (700-4300 ulps of the same scale,
    tests/fixtures/*/README.md), and above it for a 2-class sentence head's log-probs, which
    the pooler's tanh shields; catching that is what these comparisons are for. So the
    roundings are bounded as case 3 bounds a reduced format's (Higham and Mary 2019): the
    2 * roundings of the two evaluations are independent with mean zero, their sum within
    random_rounding_ulps of them at 6 sigmas (fails with p < 2e-8 per output). The
    elementwise functions, which two libraries compute by different formulas (a systematic
    difference), keep their worst case, ELEMENTWISE_ULPS each. Measured: within 9 ulps,
    5% of this bound, on every CPU kernel path (tests/testutil/kernel_paths.py)."""
    roundings, elementwise = chain
    return random_rounding_ulps(2 * roundings) + elementwise * ELEMENTWISE_ULPS


def bert_chain(config, seq_length, output="sequence", num_labels=2):
    """(roundings, elementwise) of an output of our BERT/ALBERT (BertConfig or path) on
    [B, seq_length] inputs: the encoder (ALBERT adds the embedding projection, E wide) and
    - "sequence": nothing more;
    - "pooled": the pooler (H) and its tanh;
    - "mlm": the MLM transform (H) and its activation, its LayerNorm (mean and variance
      over its width T: E for Google's ALBERT, else H), brightmart's projection back to E
      (H), the decoder (E) and the log-softmax (V: max-shifted sum of exps, exp and log);
    - "sentence" / "classifier": the pooled output, the classifier (H) and the softmax over
      num_labels (2 for the sentence head; exp, and log for log-probs);
    - "token_classifier": the classifier (H) on the sequence output and the softmax."""
    if not isinstance(config, BertConfig):
        config = BertConfig.from_json_file(config)
    hidden, width = config.hidden_size, config.word_embedding_width
    extra = [width] if config.is_albert else []
    elementwise = 0
    if output in ("pooled", "sentence", "classifier"):
        extra += [hidden]
        elementwise += 1
    if output == "mlm":
        transform = width if config.is_albert and config.albert_layout == "google" else hidden
        extra += [hidden, transform, transform]
        extra += [hidden] if config.is_albert and config.albert_layout == "brightmart" else []
        extra += [width, config.vocab_size]
        elementwise += 3
    elif output in ("sentence", "classifier", "token_classifier"):
        extra += [hidden, 2 if output == "sentence" else num_labels]
        elementwise += 2
    return encoder_chain(hidden, config.intermediate_size, seq_length,
                         config.num_attention_heads, config.num_hidden_layers, extra,
                         elementwise)


def log_softmax_bound(ulps, log_probs, logits):
    """(ulps, scale) of the bound on log-probs whose chain has the bound `ulps`: the chain's
    sums end in the logits, so their rounding is in ulps of the logits' magnitude (at least
    1: the log-sum-exp's own rounding is relative to 1); the log-softmax's last two
    subtractions (z - max, then - log of the sum) round relative to the log-probs' own
    magnitude, which adds 2 of their ulps."""
    scale = max(magnitude(logits), 1.0)
    return ulps + 2 * magnitude(log_probs) / scale, scale


def assert_log_probs_close(actual, expected, logits, ulps, err_msg=""):
    """assert_close of log-probs (their logits: `logits`, either side's) to the bound of
    their chain, `ulps` (log_softmax_bound)."""
    ulps, scale = log_softmax_bound(ulps, expected, logits)
    assert_close(actual, expected, ulps, scale=scale, err_msg=err_msg)


def dense_scale(input_scale, kernel, bias):
    """The largest sum of |terms| of a dense layer (x @ kernel + bias, kernel [in, out]) on
    inputs within input_scale: the magnitude its rounding (and the inputs' error, times the
    kernel's largest column 1-norm) refers to. Past a pooler or classifier whose weights are
    not small it exceeds their outputs, which tanh or softmax bounds by 1."""
    return input_scale * np.abs(kernel).sum(0).max() + np.abs(bias).max()


def logits_of(log_probs):
    """The logits tensor a tf.nn.log_softmax `log_probs` was computed from."""
    assert log_probs.op.type == "LogSoftmax", log_probs.op.type
    return log_probs.op.inputs[0]


def model_outputs(config, checkpoint, input_ids, attention_mask=None, token_type_ids=None):
    """Our model on one batch.

    Args:
      config: BertConfig or path of a bert_config.json.
      checkpoint: checkpoint prefix holding the encoder, pooler and MLM head.
      input_ids, attention_mask, token_type_ids: int arrays [B, S].
    Returns:
      dict with mlm_log_probs [B, S, V] (MLM head at every position), mlm_logits [B, S, V]
      (the logits they come from: the scale of their bound), sequence_output [B, S, H] and
      pooled_output [B, H] (None without a pooler), float32 numpy.
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
        fetches = {"mlm_log_probs": log_probs, "mlm_logits": logits_of(log_probs),
                   "sequence_output": model.get_sequence_output()}
        if not missing:
            fetches["pooled_output"] = model.get_pooled_output()
        saver = tf.train.Saver({name: variables[name] for name in variables
                                if name in in_checkpoint})
        with tf.Session() as session:
            saver.restore(session, checkpoint)
            values = session.run(fetches)
    values["mlm_log_probs"] = values["mlm_log_probs"].reshape(batch, seq, -1)
    values["mlm_logits"] = values["mlm_logits"].reshape(batch, seq, -1)
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
    from tests.testutil.cli_runs import remove_tool_flags  # pylint: disable=import-outside-toplevel
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            module.main([module.__name__] + list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    finally:
        remove_tool_flags()  # the next tool in this process defines its own afresh
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


SKIP_REASON = ("%s is not importable: the live transformers interop tests need torch and "
               "transformers")


@pytest.fixture(scope="module")
def hf():
    """torch and transformers, or a skip with the reason."""
    torch = pytest.importorskip("torch", reason=SKIP_REASON % "torch")
    os.environ.setdefault("USE_TF", "0")  # transformers' TF models are not needed
    transformers = pytest.importorskip("transformers", reason=SKIP_REASON % "transformers")
    transformers.logging.set_verbosity_error()
    return types.SimpleNamespace(torch=torch, T=transformers)
