"""Name- and shape-checked loading of released or own checkpoints.

    report = init_from_checkpoint("chinese_roberta_wwm_ext/bert_model.ckpt")

builds the assignment map (model variable -> checkpoint tensor) by name and
shape, prints a table (loaded / missing in checkpoint / unused in checkpoint /
shape mismatches), and calls `tf.train.init_from_checkpoint`, so the values
are set when the variables are initialised (Estimator, Session, Scaffold).

Because our variable names are exactly those of google-research/bert,
google-research/albert and brightmart/albert_zh, Google BERT, ymcui
RoBERTa-wwm (no `cls/predictions/*`: reported missing), Google ALBERT and
brightmart ALBERT checkpoints map by identity onto the matching config. Also
handled: an outer scope around our model (`finetune/bert/...` finds
`bert/...`), TF-Hub style `module/` prefixes, and optimizer state
(`adam_m`, `adam_v`, `global_step`, ...) which is ignored and counted.
google-research/electra's and HFL's ELECTRA checkpoints (`electra/...`,
`generator/...`, `generator_predictions/...`, `discriminator_predictions/...`,
upstream's AdamWeightDecayOptimizer slots `<var>/adam_m`, `<var>/adam_v`) map by
identity onto an ELECTRA config.

Another family's checkpoint: `SCOPE_MAPPINGS` declares which scope of ours reads
which scope of a checkpoint that has none of ours. A BERT/RoBERTa checkpoint
(`bert/...`) initialises the ELECTRA discriminator (`electra/...`, embeddings
shared with the generator); the generator's encoder and both heads start fresh.
The table shows each mapped variable's source (`<- bert/...`) and the mapping used.

Embedding surgery as bert4keras does it, on the vocab-sized variables
(`SURGERY_VARIABLES`: BERT's and ALBERT's word embeddings and output biases, and
ELECTRA's shared or generator table and generator output bias): `keep_tokens` keeps the listed rows (in
order), then `compound_tokens` appends rows that are the (weighted) mean of
rows of the kept table. The result must have the model's vocab_size rows.
"""
import atexit
import collections
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

from pretrain.checkpoints import checkpoint_io
from pretrain.models import registry

IGNORE_INVALID_WEIGHTS_HELP = ("--init_checkpoint: a variable whose shape differs from the checkpoint's keeps its "
                               "initial value (MISMATCH in the loading table) instead of stopping the run "
                               "(bert4keras's ignore_invalid_weights).")
# The vocab-sized variables of every registered family (ModelFamily.vocab_tables/_biases).
WORD_EMBEDDING_TABLES = registry.declared("vocab_tables")
SURGERY_VARIABLES = WORD_EMBEDDING_TABLES + registry.declared("vocab_biases")
_WRAPPER_PREFIXES = ("module/",)
_TRAINING_STATE = re.compile(
    r"(^|/)(global_step|bad_steps|good_steps|loss_scale|current_loss_scale|"
    r"beta1_power|beta2_power)$|"
    r"^random_seed$|^(loss_scale|gradient_accumulation|input_pipeline)/|"
    r"/(adam_m|adam_v|lamb_m|lamb_v|Adam|Adam_1|Momentum|Adagrad|RMSProp|"
    r"RMSProp_1|LAMB|LAMB_1|AdamWeightDecay|AdamWeightDecay_1|Lamb|Lamb_1|"
    r"ExponentialMovingAverage)$")



def is_training_state(name):
    """True for a checkpoint tensor that is optimizer or step state (Adam/LAMB slots,
    global_step, loss scaling, the run's seed and input position), not a model weight."""
    return bool(_TRAINING_STATE.search(name))


ScopeMapping = collections.namedtuple("ScopeMapping",
                                      ["model_scope", "checkpoint_scope", "description"])
ScopeMapping.__doc__ = """A model variable `<model_scope>/REST` reads `<checkpoint_scope>/REST`
when the checkpoint has no `<model_scope>/` variable but has `<checkpoint_scope>/` ones."""

# Another family's checkpoint that a family initialises from (its checkpoint_scope_mappings).
SCOPE_MAPPINGS = tuple(ScopeMapping(*mapping)
                       for mapping in registry.declared("checkpoint_scope_mappings"))


class CheckpointMismatchError(ValueError):
    """The checkpoint does not fit the model (shapes or surgery)."""


LoadReport = collections.namedtuple(
    "LoadReport", ["checkpoint", "loaded", "missing_in_checkpoint",
                   "unused_in_checkpoint", "shape_mismatches", "training_state",
                   "surgery", "mappings"], defaults=((),))
LoadReport.__doc__ = """Outcome of `init_from_checkpoint`.

loaded: list of (model name, checkpoint name, shape);
missing_in_checkpoint: model names left at their initial values;
unused_in_checkpoint: checkpoint names no model variable took;
shape_mismatches: list of (model name, model shape, checkpoint shape), only
  non-empty when allow_shape_mismatch=True (else an error is raised);
training_state: optimizer/step tensors of the checkpoint, ignored;
surgery: {name: description} of embedding rows rewritten;
mappings: the SCOPE_MAPPINGS entries used (another family's checkpoint)."""


def resolve_checkpoint(init_checkpoint):
    """Directory -> its latest checkpoint prefix; prefix -> itself (checked)."""
    path = os.path.expanduser(str(init_checkpoint))
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(
                "init_checkpoint %s is a directory without a `checkpoint` index file; "
                "pass the prefix, e.g. %s/model.ckpt-1000 or bert_model.ckpt" % (path, path))
        return latest
    if os.path.exists(path + ".index") or tf.io.gfile.exists(path + ".index"):
        return path
    for suffix in (".index", ".meta", ".data-00000-of-00001"):
        if path.endswith(suffix) and os.path.exists(path[:-len(suffix)] + ".index"):
            return path[:-len(suffix)]
    raise FileNotFoundError(
        "init_checkpoint %s: no checkpoint found (expected %s.index, or a directory "
        "holding a `checkpoint` file)" % (path, path))


def _variable_name(variable):
    return re.sub(r":\d+$", "", variable.name)


def _shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _find_in_checkpoint(name, checkpoint_names, mappings=()):
    """Checkpoint name for model variable `name`, or None.

    Tries the name itself, then the name without leading scopes (a model
    built under an outer scope), each also with a wrapper prefix (`module/`)
    and, for a candidate in a mapped scope, under the checkpoint's scope.
    """
    parts = name.split("/")
    for start in range(0, len(parts) - 1):
        candidate = "/".join(parts[start:])
        candidates = [candidate] + [
            mapping.checkpoint_scope + candidate[len(mapping.model_scope):]
            for mapping in mappings if candidate.startswith(mapping.model_scope + "/")]
        for prefix in ("",) + _WRAPPER_PREFIXES:
            for option in candidates:
                if prefix + option in checkpoint_names:
                    return prefix + option
    return None


def _has_scope(scope, checkpoint_names):
    return any(name.startswith(prefix + scope + "/") for name in checkpoint_names
               for prefix in ("",) + _WRAPPER_PREFIXES)


def _scope_mappings(model_names, checkpoint_names):
    """The SCOPE_MAPPINGS that apply: the model has the scope (under any outer scope),
    the checkpoint has none of it but has the mapped one."""
    def model_has(scope):
        return any(name.startswith(scope + "/") or ("/" + scope + "/") in name
                   for name in model_names)
    return tuple(mapping for mapping in SCOPE_MAPPINGS
                 if model_has(mapping.model_scope)
                 and not _has_scope(mapping.model_scope, checkpoint_names)
                 and _has_scope(mapping.checkpoint_scope, checkpoint_names))


def _surgery_kind(checkpoint_name):
    stripped = checkpoint_name
    for prefix in _WRAPPER_PREFIXES:
        if stripped.startswith(prefix):
            stripped = stripped[len(prefix):]
    return stripped if stripped in SURGERY_VARIABLES else None


def apply_embedding_surgery(value, keep_tokens=None, compound_tokens=None):
    """Rows of `value` ([V, ...]) kept and compounded as bert4keras does.

    Args:
      keep_tokens: list of row ids of the checkpoint to keep, in order.
      compound_tokens: list of entries, each a list of ids (plain mean) or a
        pair (ids, weights) (weighted mean); ids refer to the table after
        keep_tokens. Each entry appends one row.
    """
    table = np.asarray(value)
    if keep_tokens is not None:
        keep = np.asarray(keep_tokens, dtype=np.int64)
        if keep.ndim != 1 or keep.size == 0:
            raise ValueError("keep_tokens must be a non-empty list of token ids")
        bad = keep[(keep < 0) | (keep >= table.shape[0])]
        if bad.size:
            raise ValueError("keep_tokens has ids outside the checkpoint vocab of %d "
                             "rows, e.g. %d" % (table.shape[0], int(bad[0])))
        table = table[keep]
    if compound_tokens:
        rows = []
        for index, item in enumerate(compound_tokens):
            if (isinstance(item, (tuple, list)) and len(item) == 2
                    and isinstance(item[0], (list, tuple, np.ndarray))):
                ids, weights = item
            else:
                ids, weights = item, None
            ids = np.asarray(ids, dtype=np.int64)
            if ids.size == 0 or ids.min() < 0 or ids.max() >= table.shape[0]:
                raise ValueError("compound_tokens[%d] = %r: ids must be within the "
                                 "(kept) vocab of %d rows" % (index, list(ids), table.shape[0]))
            rows.append(np.average(table[ids], axis=0, weights=weights))
        table = np.concatenate([table, np.stack(rows).astype(table.dtype)], axis=0)
    return table


def _write_temporary_checkpoint(tensors, surgery_dir):
    """Saves {name: ndarray} as a checkpoint outside the current graph."""
    if surgery_dir is None:
        surgery_dir = tempfile.mkdtemp(prefix="embedding_surgery_")
        atexit.register(shutil.rmtree, surgery_dir, True)
    os.makedirs(surgery_dir, exist_ok=True)
    prefix = os.path.join(surgery_dir, "surgery.ckpt")
    checkpoint_io.write_checkpoint(tensors, prefix)
    return prefix


def _layout_hint(missing, checkpoint_names):
    """A sentence explaining a layout mix-up, or ''."""
    joined = " ".join(checkpoint_names)
    model = " ".join(missing)
    if "word_embeddings_2" in joined and "word_embeddings_2" not in model \
            and "/transformer/group_" in model:
        return ("The checkpoint has brightmart's layout (word_embeddings_2, layer_shared): "
                "set \"albert_layout\": \"brightmart\" in the config.")
    if "/transformer/group_" in joined and "/transformer/group_" not in model:
        return ("The checkpoint has Google's ALBERT layout (transformer/group_G): set "
                "\"model_type\": \"albert\", \"albert_layout\": \"google\" in the config.")
    if "/layer_shared/" in joined and "/layer_shared/" not in model:
        return ("The checkpoint has brightmart's ALBERT layout (layer_shared): set "
                "\"albert_layout\": \"brightmart\", \"sharing\": \"all\" in the config.")
    if re.search(r"encoder/layer_\d+/", joined) and "/layer_shared/" in model:
        return ("The checkpoint has unshared BERT layers (layer_N): use a BERT config "
                "or \"sharing\": \"none\".")
    return ""


def format_report(report):
    """The table printed by init_from_checkpoint, as a string."""
    lines = ["Checkpoint %s" % report.checkpoint]
    lines += ["mapped %s/ <- %s/: %s" % mapping for mapping in report.mappings]
    lines += ["%-9s %-18s %-18s %s" % ("status", "model shape", "checkpoint shape", "name")]
    for name, checkpoint_name, shape in report.loaded:
        note = "" if name == checkpoint_name else "  <- %s" % checkpoint_name
        if name in report.surgery:
            note += "  (%s)" % report.surgery[name]
        lines.append("%-9s %-18s %-18s %s%s" % ("loaded", _shape(shape), _shape(shape),
                                                 name, note))
    for name, model_shape, checkpoint_shape in report.shape_mismatches:
        lines.append("%-9s %-18s %-18s %s" % ("MISMATCH", _shape(model_shape),
                                               _shape(checkpoint_shape), name))
    for name in report.missing_in_checkpoint:
        lines.append("%-9s %-18s %-18s %s" % ("missing", "", "-", name))
    for name in report.unused_in_checkpoint:
        lines.append("%-9s %-18s %-18s %s" % ("unused", "-", "", name))
    mapped = sum(1 for name, checkpoint_name, _ in report.loaded
                 if any(name.startswith(m.model_scope + "/") or "/%s/" % m.model_scope in name
                        for m in report.mappings) and checkpoint_name != name)
    lines.append("summary: %d loaded%s, %d missing in checkpoint (left at initial values), "
                 "%d unused in checkpoint, %d shape mismatches, %d optimizer/step "
                 "tensors ignored" % (len(report.loaded),
                                      " (%d through a scope mapping)" % mapped
                                      if report.mappings else "",
                                      len(report.missing_in_checkpoint),
                                      len(report.unused_in_checkpoint),
                                      len(report.shape_mismatches),
                                      len(report.training_state)))
    return "\n".join(lines)


def _mismatch_message(mismatches, sources=None, mappings=()):
    """The error for shape mismatches; `sources`: {model name: checkpoint name} where the
    two differ (a mapped scope, an outer scope), named beside the model's."""
    sources = sources or {}
    lines = ["checkpoint does not fit the model (%d shape mismatch%s):"
             % (len(mismatches), "es" if len(mismatches) > 1 else "")]
    for name, model_shape, checkpoint_shape in mismatches:
        source = sources.get(name, name)
        line = "  %s%s: model shape %s, checkpoint shape %s" % (
            name, "" if source == name else " (checkpoint's %s)" % source,
            _shape(model_shape), _shape(checkpoint_shape))
        if name.endswith(WORD_EMBEDDING_TABLES) and model_shape[0] != checkpoint_shape[0]:
            line += ("  -- vocab_size: the model config has vocab_size=%d but the "
                     "checkpoint was trained with %d tokens; use the checkpoint's "
                     "vocab.txt and vocab_size, or pass keep_tokens to shrink it"
                     % (model_shape[0], checkpoint_shape[0]))
        lines.append(line)
    for mapping in mappings:
        lines.append("Mapped %s/ <- %s/: %s." % mapping)
    lines.append("Fix the config, or pass --ignore_invalid_weights (allow_shape_mismatch=True) "
                 "to leave these variables at their initial values.")
    return "\n".join(lines)


def init_from_checkpoint(init_checkpoint, tvars=None, allow_shape_mismatch=False,
                         keep_tokens=None, compound_tokens=None, log_fn=print,
                         surgery_dir=None):
    """Initialises `tvars` (default: trainable variables) from a checkpoint.

    Args:
      init_checkpoint: checkpoint prefix or a directory (latest checkpoint).
      tvars: variables to initialise.
      allow_shape_mismatch: leave mismatched variables at their initial values
        instead of raising CheckpointMismatchError.
      keep_tokens, compound_tokens: embedding surgery (see module docstring).
      log_fn: called with the printed table (None to stay silent).
      surgery_dir: where to write the rewritten embedding rows (default: a
        temporary directory removed at exit).
    Returns:
      LoadReport.
    """
    prefix = resolve_checkpoint(init_checkpoint)
    if tvars is None:
        tvars = tf.trainable_variables()
    checkpoint_shapes = dict(tf.train.list_variables(prefix))
    training_state = sorted(n for n in checkpoint_shapes if _TRAINING_STATE.search(n))
    checkpoint_names = set(checkpoint_shapes) - set(training_state)
    surgery_requested = keep_tokens is not None or bool(compound_tokens)
    reader = tf.train.load_checkpoint(prefix) if surgery_requested else None

    mappings = _scope_mappings([_variable_name(v) for v in tvars], checkpoint_names)

    assignment, surgery_values, surgery_notes, sources = {}, {}, {}, {}
    loaded, missing, mismatches, used = [], [], [], set()
    for variable in tvars:
        name = _variable_name(variable)
        model_shape = variable.shape.as_list()
        checkpoint_name = _find_in_checkpoint(name, checkpoint_names, mappings)
        if checkpoint_name is None:
            missing.append(name)
            continue
        used.add(checkpoint_name)
        sources[name] = checkpoint_name
        checkpoint_shape = list(checkpoint_shapes[checkpoint_name])
        if surgery_requested and _surgery_kind(checkpoint_name):
            value = apply_embedding_surgery(reader.get_tensor(checkpoint_name),
                                            keep_tokens, compound_tokens)
            surgery_notes[name] = "%d rows from %d: %s" % (
                value.shape[0], checkpoint_shape[0],
                ", ".join(filter(None, [
                    "%d kept" % len(keep_tokens) if keep_tokens is not None else "",
                    "%d compound" % len(compound_tokens) if compound_tokens else ""])))
            checkpoint_shape = list(value.shape)
            if checkpoint_shape == model_shape:
                surgery_values[checkpoint_name] = (value, variable)
        if checkpoint_shape != model_shape:
            mismatches.append((name, model_shape, checkpoint_shape))
            continue
        if checkpoint_name not in surgery_values:
            assignment[checkpoint_name] = variable
        loaded.append((name, checkpoint_name, model_shape))

    report = LoadReport(prefix, loaded, missing, sorted(checkpoint_names - used),
                        mismatches, training_state, surgery_notes, mappings)
    if mismatches and not allow_shape_mismatch:
        if log_fn is not None:
            log_fn(format_report(report))
        raise CheckpointMismatchError(_mismatch_message(mismatches, sources, mappings))
    if not loaded:
        hint = _layout_hint(missing, checkpoint_names)
        raise CheckpointMismatchError(
            "no model variable was found in checkpoint %s (model has e.g. %s; checkpoint "
            "has e.g. %s). %s" % (prefix, missing[:2], sorted(checkpoint_names)[:2], hint))
    if log_fn is not None:
        log_fn(format_report(report))
        if len(missing) > len(loaded):
            hint = _layout_hint(missing, checkpoint_names)
            if hint:
                log_fn("WARNING: most variables are missing. " + hint)

    if assignment:
        tf.train.init_from_checkpoint(prefix, assignment)
    if surgery_values:
        surgery_prefix = _write_temporary_checkpoint(
            {name: value for name, (value, _) in surgery_values.items()}, surgery_dir)
        tf.train.init_from_checkpoint(
            surgery_prefix, {name: var for name, (_, var) in surgery_values.items()})
    return report
