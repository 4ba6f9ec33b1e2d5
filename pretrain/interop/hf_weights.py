"""Weights both ways: our (Google) variable names <-> transformers state-dict keys.

    tensors, report = hf_to_google(state_dict, config)      # import
    state_dict, report = google_to_hf(tensors, config)      # export

One declarative table per architecture maps our names to transformers' keys.
A row is (group, kind, our name, transformers name) where kind says how the
tensors correspond:
  dense       <ours>/kernel [in, out] <-> <hf>.weight [out, in] (transposed),
              <ours>/bias <-> <hf>.bias
  layer_norm  <ours>/gamma, <ours>/beta <-> <hf>.weight, <hf>.bias
  embedding   <ours> <-> <hf>.weight
  tensor      <ours> <-> <hf> (same array; Google's output_weights are [out, in] already)
{L} stands for every layer, {G}/{I} for every ALBERT group / inner group.
Rows of the groups "encoder" and "pooler" carry the model prefix in
transformers ("bert." / "albert."; absent in BertModel / AlbertModel state
dicts), the heads do not. The MLM decoder is tied to the word embeddings on
both sides and is not written; on import a decoder present in the state
dict must equal the tensor it is tied to.

A brightmart ALBERT exports as the BERT it computes exactly: word table
word_embeddings @ word_embeddings_2 [V, H] (tied decoder included, since
brightmart's MLM head projects back with word_embeddings_2^T), and the
shared block copied into each of the N layers.
"""
import collections
import itertools

import numpy as np

from pretrain.models import encoder
from common.cli_options import UserError
from pretrain.interop.hf_config import exported_model_type
from pretrain.models.bert.config import BertConfig

# The fine-tuning heads (pretrain.models.task_heads): transformers' *ForSequenceClassification and
# *ForTokenClassification both call theirs `classifier`.
CLASSIFIER_ROWS = (
    ("classifier", "tensor", "classifier/output_weights", "classifier.weight"),
    ("classifier", "tensor", "classifier/output_bias", "classifier.bias"),
    ("token_classifier", "tensor", "token_classifier/output_weights", "classifier.weight"),
    ("token_classifier", "tensor", "token_classifier/output_bias", "classifier.bias"),
)
HEAD_GROUPS = ("classifier", "token_classifier")
_LAYER = "bert/encoder/layer_{L}/"
_HF_LAYER = "encoder.layer.{L}."
BERT_TABLE = (
    ("encoder", "embedding", "bert/embeddings/word_embeddings", "embeddings.word_embeddings"),
    ("encoder", "embedding", "bert/embeddings/token_type_embeddings",
     "embeddings.token_type_embeddings"),
    ("encoder", "embedding", "bert/embeddings/position_embeddings",
     "embeddings.position_embeddings"),
    ("encoder", "layer_norm", "bert/embeddings/LayerNorm", "embeddings.LayerNorm"),
    ("encoder", "dense", _LAYER + "attention/self/query", _HF_LAYER + "attention.self.query"),
    ("encoder", "dense", _LAYER + "attention/self/key", _HF_LAYER + "attention.self.key"),
    ("encoder", "dense", _LAYER + "attention/self/value", _HF_LAYER + "attention.self.value"),
    ("encoder", "dense", _LAYER + "attention/output/dense", _HF_LAYER + "attention.output.dense"),
    ("encoder", "layer_norm", _LAYER + "attention/output/LayerNorm",
     _HF_LAYER + "attention.output.LayerNorm"),
    ("encoder", "dense", _LAYER + "intermediate/dense", _HF_LAYER + "intermediate.dense"),
    ("encoder", "dense", _LAYER + "output/dense", _HF_LAYER + "output.dense"),
    ("encoder", "layer_norm", _LAYER + "output/LayerNorm", _HF_LAYER + "output.LayerNorm"),
    ("pooler", "dense", "bert/pooler/dense", "pooler.dense"),
    ("mlm_head", "dense", "cls/predictions/transform/dense", "cls.predictions.transform.dense"),
    ("mlm_head", "layer_norm", "cls/predictions/transform/LayerNorm",
     "cls.predictions.transform.LayerNorm"),
    ("mlm_head", "tensor", "cls/predictions/output_bias", "cls.predictions.bias"),
    ("sentence_head", "tensor", "cls/seq_relationship/output_weights",
     "cls.seq_relationship.weight"),
    ("sentence_head", "tensor", "cls/seq_relationship/output_bias", "cls.seq_relationship.bias"),
) + CLASSIFIER_ROWS

_BLOCK = "bert/encoder/transformer/group_{G}/inner_group_{I}/"
_HF_BLOCK = "encoder.albert_layer_groups.{G}.albert_layers.{I}."
ALBERT_TABLE = BERT_TABLE[:4] + (
    ("encoder", "dense", "bert/encoder/embedding_hidden_mapping_in",
     "encoder.embedding_hidden_mapping_in"),
    ("encoder", "dense", _BLOCK + "attention_1/self/query", _HF_BLOCK + "attention.query"),
    ("encoder", "dense", _BLOCK + "attention_1/self/key", _HF_BLOCK + "attention.key"),
    ("encoder", "dense", _BLOCK + "attention_1/self/value", _HF_BLOCK + "attention.value"),
    ("encoder", "dense", _BLOCK + "attention_1/output/dense", _HF_BLOCK + "attention.dense"),
    ("encoder", "layer_norm", _BLOCK + "LayerNorm", _HF_BLOCK + "attention.LayerNorm"),
    ("encoder", "dense", _BLOCK + "ffn_1/intermediate/dense", _HF_BLOCK + "ffn"),
    ("encoder", "dense", _BLOCK + "ffn_1/intermediate/output/dense", _HF_BLOCK + "ffn_output"),
    ("encoder", "layer_norm", _BLOCK + "LayerNorm_1", _HF_BLOCK + "full_layer_layer_norm"),
    ("pooler", "dense", "bert/pooler/dense", "pooler"),
    ("mlm_head", "dense", "cls/predictions/transform/dense", "predictions.dense"),
    ("mlm_head", "layer_norm", "cls/predictions/transform/LayerNorm", "predictions.LayerNorm"),
    ("mlm_head", "tensor", "cls/predictions/output_bias", "predictions.bias"),
    ("sentence_head", "tensor", "cls/seq_relationship/output_weights",
     "sop_classifier.classifier.weight"),
    ("sentence_head", "tensor", "cls/seq_relationship/output_bias",
     "sop_classifier.classifier.bias"),
) + CLASSIFIER_ROWS

Architecture = collections.namedtuple("Architecture", ["table", "prefix", "tied"])
ARCHITECTURES = {
    "bert": Architecture(BERT_TABLE, "bert.", {
        "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
        "cls.predictions.decoder.bias": "cls.predictions.bias"}),
    "albert": Architecture(ALBERT_TABLE, "albert.", {
        "predictions.decoder.weight": "embeddings.word_embeddings.weight",
        "predictions.decoder.bias": "predictions.bias"}),
}
PREFIXED_GROUPS = ("encoder", "pooler")
GROUP_NAMES = {"pooler": "pooler (bert/pooler/dense)",
               "mlm_head": "MLM head (cls/predictions/*)",
               "sentence_head": "sentence head (cls/seq_relationship/*)",
               "classifier": "classifier (classifier/*)",
               "token_classifier": "token classifier (token_classifier/*)"}
TASKS = {"classifier": "sequence_classification", "token_classifier": "token_classification",
         None: "pretraining"}
_PARTS = {"dense": (("kernel", "weight", True), ("bias", "bias", False)),
          "layer_norm": (("gamma", "weight", False), ("beta", "bias", False)),
          "embedding": (("", "weight", False),),
          "tensor": (("", "", False),)}

Entry = collections.namedtuple("Entry", ["group", "ours", "hf", "transpose"])
HfExport = collections.namedtuple("HfExport", ["state_dict", "report", "task", "num_labels",
                                               "config"])
Report = collections.namedtuple("Report", ["rows", "skipped", "fresh"])
Report.__doc__ = """What a conversion did.

rows: (transformers key, our name, shape, note) of every tensor converted;
skipped: (name, reason) of tensors left out (buffers, tied copies, unknown);
fresh: descriptions of heads/pooler absent, which start from a new initialisation."""


def _join(base, part, separator):
    return base + separator + part if part else base


def expand_table(table, ranges):
    """Every Entry of a name table, its placeholders ({L}, ...) replaced by each value of
    ranges[placeholder] (a range of ints, or of strings such as a scope name)."""
    entries = []
    for group, kind, ours, hf in table:
        names = [name for name in ranges if name in ours]
        for values in itertools.product(*(ranges[name] for name in names)):
            our_name, hf_name = ours, hf
            for name, value in zip(names, values):
                our_name = our_name.replace(name, str(value))
                hf_name = hf_name.replace(name, str(value))
            for our_part, hf_part, transpose in _PARTS[kind]:
                entries.append(Entry(group, _join(our_name, our_part, "/"),
                                     _join(hf_name, hf_part, "."), transpose))
    return entries


def mapping_entries(config, model_type):
    """Every (group, our name, transformers key without model prefix, transpose) for config."""
    return expand_table(ARCHITECTURES[model_type].table, {
        "{L}": range(config.num_hidden_layers), "{G}": range(config.num_hidden_groups),
        "{I}": range(config.inner_group_num)})


def model_variable_shapes(config, num_labels=None, num_tags=None):
    """{our variable name: shape} of the encoder, pooler, both heads, and the classifier
    (num_labels) or token classifier (num_tags) when given."""
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain.models import heads, registry  # pylint: disable=import-outside-toplevel
    with tf.Graph().as_default():
        ids = tf.zeros([1, 2], tf.int32)
        model = registry.create_encoder(config, False, ids)
        heads.get_masked_lm_output(config, model.get_sequence_output(),
                                   model.get_embedding_table(), tf.zeros([1, 1], tf.int32),
                                   tf.zeros([1, 1], tf.int32), tf.ones([1, 1]),
                                   model.get_embedding_projection())
        heads.get_sentence_output(config, model.get_pooled_output(), tf.zeros([1], tf.int32))
        shapes = {v.op.name: tuple(v.shape.as_list()) for v in tf.global_variables()}
    if num_labels:
        shapes["classifier/output_weights"] = (num_labels, config.hidden_size)
        shapes["classifier/output_bias"] = (num_labels,)
    if num_tags:
        shapes["token_classifier/output_weights"] = (num_tags, config.hidden_size)
        shapes["token_classifier/output_bias"] = (num_tags,)
    return shapes


def export_tensor(tensors, entry, key, state_dict, rows):
    """state_dict[key] = our tensor of name-table `entry` as float32 (transposed when the
    entry says so); appends its (key, our name, shape, note) row to the export table."""
    value = np.asarray(tensors[entry.ours], dtype=np.float32)
    state_dict[key] = np.ascontiguousarray(value.T if entry.transpose else value)
    rows.append((key, entry.ours, tuple(state_dict[key].shape),
                 "transposed" if entry.transpose else ""))


def head_size(tensors, head):
    """Number of labels of the `head` group's output layer in `tensors`, or None."""
    name = "%s/output_weights" % head
    return tensors[name].shape[0] if name in tensors else None


def checkpoint_head(tensors):
    """(head group or None, its number of labels or None) of a checkpoint's tensors; a
    UserError when it holds both a sequence and a token classifier."""
    heads = [group for group in HEAD_GROUPS if head_size(tensors, group)]
    if len(heads) > 1:
        raise UserError("checkpoint holds both classifier/* and token_classifier/*; a "
                        "transformers model has one head: cannot export both")
    head = heads[0] if heads else None
    return head, head_size(tensors, head) if head else None


def check_shapes(tensors, expected, what):
    for name, value in sorted(tensors.items()):
        if name in expected and tuple(np.shape(value)) != expected[name]:
            raise UserError("%s has shape %s but the config implies %s for %s: the config "
                            "does not describe these weights" % (
                                what(name), list(np.shape(value)), list(expected[name]), name))


def _fresh(missing_groups):
    return [GROUP_NAMES[group] for group in ("pooler", "mlm_head", "sentence_head")
            if group in missing_groups]


def _as_float32(key, value):
    """(float32 array, note): float16/bfloat16/float64 tensors are converted."""
    value = np.asarray(value)
    if value.dtype == np.float32:
        return value, ""
    if value.dtype.kind == "f" or value.dtype.name == "bfloat16":
        return value.astype(np.float32), "%s -> float32" % value.dtype.name
    raise UserError("tensor %s has dtype %s; model weights must be floats" % (key, value.dtype))


def _normalise_keys(state_dict, prefix):
    """Strips the model prefix and renames legacy LayerNorm gamma/beta keys -> (dict, notes)."""
    normalised, notes = {}, {}
    for key, value in state_dict.items():
        name = key[len(prefix):] if key.startswith(prefix) else key
        for old, new in ((".gamma", ".weight"), (".beta", ".bias")):
            if name.endswith(old):
                name = name[:-len(old)] + new
                notes[name] = "legacy name %s" % key
        if name in normalised:
            raise UserError("state dict has %s twice (with and without %r or as gamma/beta)"
                            % (name, prefix))
        normalised[name] = (key, value)
    return normalised, notes


def convert_state_dict(state_dict, entries_by_key, prefix, tied):
    """(tensors {our name: float32 array}, rows, skipped) of a transformers state dict.

    entries_by_key: {transformers key without `prefix`: Entry}; tied: {key of a tied
    copy: key it must equal}. Buffers, equal tied copies and keys no entry names are
    skipped (listed with the reason); a tied copy that differs is a UserError.
    """
    available, notes = _normalise_keys(state_dict, prefix)
    skipped = []
    for name in sorted(available):
        if name.endswith("position_ids"):
            skipped.append((available.pop(name)[0], "buffer, not a weight"))
    for copy, target in tied.items():
        if copy in available:
            key, value = available.pop(copy)
            if target not in available:
                available[target] = (key, value)
                notes[target] = "from %s (tied)" % key
            elif not np.array_equal(_as_float32(key, value)[0],
                                    _as_float32(*available[target])[0]):
                raise UserError("%s differs from %s: the MLM decoder is not tied to it, and our "
                                "model ties them" % (key, available[target][0]))
            else:
                skipped.append((key, "tied to %s (equal)" % available[target][0]))

    order = {key: index for index, key in enumerate(entries_by_key)}
    tensors, rows = {}, []
    for name, (key, value) in sorted(available.items(),
                                     key=lambda item: (order.get(item[0], len(order)), item[0])):
        entry = entries_by_key.get(name)
        if entry is None:
            skipped.append((key, "not a sequence or token classifier's head, not imported"
                            if name.startswith("classifier.") else "unknown, not imported"))
            continue
        value, dtype_note = _as_float32(key, value)
        tensors[entry.ours] = np.ascontiguousarray(value.T if entry.transpose else value)
        note = "; ".join(filter(None, [notes.get(name, ""), dtype_note,
                                       "transposed" if entry.transpose else ""]))
        rows.append((key, entry.ours, tuple(tensors[entry.ours].shape), note))
    return tensors, rows, skipped


def hf_to_google(state_dict, config, model_type, head="classifier"):
    """Our {name: float32 array} from a transformers state dict.

    Args:
      state_dict: {key: ndarray} as read from model.safetensors / pytorch_model.bin.
      config: our BertConfig (from `hf_config.bert_config_from_hf`).
      model_type: "bert" or "albert".
      head: what classifier.{weight,bias} become: "classifier" (a
        *ForSequenceClassification), "token_classifier" (*ForTokenClassification),
        or None (listed as not imported).
    Returns:
      (tensors, Report). Missing encoder tensors are an error; a missing pooler,
      MLM or sentence head is reported in Report.fresh.
    """
    architecture = ARCHITECTURES[model_type]
    entries_by_key = {entry.hf: entry for entry in mapping_entries(config, model_type)
                      if entry.group not in HEAD_GROUPS or entry.group == head}
    tensors, rows, skipped = convert_state_dict(state_dict, entries_by_key,
                                                architecture.prefix, architecture.tied)
    check_shapes(tensors, model_variable_shapes(config, head_size(tensors, "classifier"),
                                                 head_size(tensors, "token_classifier")),
                  lambda name: next(row[0] for row in rows if row[1] == name))
    missing = [entry for entry in entries_by_key.values()
               if entry.ours not in tensors and entry.group not in HEAD_GROUPS]
    missing_encoder = [entry.hf for entry in missing if entry.group == "encoder"]
    if missing_encoder:
        raise UserError("the weights lack %d encoder tensor(s) the config implies, e.g. %s "
                        "(config: num_hidden_layers=%d); is config.json the one of these "
                        "weights?" % (len(missing_encoder), ", ".join(missing_encoder[:3]),
                                      config.num_hidden_layers))
    return tensors, Report(rows, skipped, _fresh({entry.group for entry in missing}))


def brightmart_to_bert(tensors, config):
    """(BERT tensors, BERT config) computing exactly what the brightmart ALBERT computes."""
    values = config.to_dict()
    for field in ("embedding_size", "albert_layout", "sharing", "num_hidden_groups",
                  "inner_group_num", "ln_type"):
        values.pop(field, None)
    values["model_type"] = "bert"
    bert_config = BertConfig.from_dict(values)
    out = {name: value for name, value in tensors.items()
           if not name.startswith("bert/encoder/") and name != "bert/embeddings/word_embeddings_2"}
    words = tensors.get("bert/embeddings/word_embeddings")
    projection = tensors.get("bert/embeddings/word_embeddings_2")
    if words is None or projection is None:
        raise UserError("a brightmart ALBERT checkpoint needs bert/embeddings/word_embeddings "
                        "and word_embeddings_2")
    out["bert/embeddings/word_embeddings"] = (
        words.astype(np.float64) @ projection.astype(np.float64)).astype(np.float32)
    for layer in range(config.num_hidden_layers):
        source, _ = encoder.block_scopes(config, layer)
        target, _ = encoder.block_scopes(bert_config, layer)
        for role, scope in source.items():
            suffixes = ("gamma", "beta") if role.endswith("layer_norm") else ("kernel", "bias")
            for suffix in suffixes:
                name = "bert/encoder/%s/%s" % (scope, suffix)
                if name not in tensors:
                    raise UserError("brightmart checkpoint lacks %s (sharing %r)"
                                    % (name, config.sharing))
                out["bert/encoder/%s/%s" % (target[role], suffix)] = tensors[name]
    return out, bert_config


def google_to_hf(tensors, config):
    """transformers {key: float32 array} from our model tensors (training state removed).

    A checkpoint holding classifier/* exports as ...ForSequenceClassification,
    one holding token_classifier/* as ...ForTokenClassification (which has no
    pooler); their cls/* heads, if any, are left out. Else ...ForPreTraining.
    Returns HfExport(state_dict, Report, task "pretraining" |
    "sequence_classification" | "token_classification", num_labels, the
    BertConfig exported: a BERT one for a brightmart ALBERT).
    Unknown names and missing encoder tensors are errors.
    """
    model_type = exported_model_type(config)
    head, num_labels = checkpoint_head(tensors)
    expected = model_variable_shapes(config, *((num_labels, None) if head == "classifier"
                                               else (None, num_labels)))
    check_shapes(tensors, expected, lambda name: "checkpoint tensor %s" % name)
    from pretrain.models.bert import span_boundary  # pylint: disable=import-outside-toplevel
    unknown = sorted(name for name in set(tensors) - set(expected)
                     if not span_boundary.is_span_boundary_variable(name))
    if unknown:
        raise UserError("checkpoint tensor(s) %s are not part of the model the config "
                        "describes; cannot export them" % ", ".join(unknown[:5]))
    missing_encoder = sorted(name for name in expected if name.startswith("bert/")
                             and not name.startswith("bert/pooler/") and name not in tensors)
    if missing_encoder:
        raise UserError("checkpoint lacks encoder variable(s) %s" % ", ".join(missing_encoder[:3]))
    if config.is_albert and config.albert_layout == "brightmart":
        tensors, config = brightmart_to_bert(tensors, config)
    groups = {"classifier": ("encoder", "pooler", "classifier"),
              "token_classifier": ("encoder", "token_classifier"),
              None: ("encoder", "pooler", "mlm_head", "sentence_head")}[head]
    prefix = ARCHITECTURES[model_type].prefix
    state_dict, rows, missing = {}, [], set()
    for entry in mapping_entries(config, model_type):
        if entry.group not in groups:
            continue
        if entry.ours not in tensors:
            missing.add(entry.group)
            continue
        export_tensor(tensors, entry, prefix + entry.hf if entry.group in PREFIXED_GROUPS
                      else entry.hf, state_dict, rows)
    exported = {row[1] for row in rows}
    skipped = [(name, "SpanBERT span boundary head; transformers has no such head"
                if span_boundary.is_span_boundary_variable(name)
                else "pooler; transformers' token classifier has none"
                if name.startswith("bert/pooler/")
                else "head of the pretraining model, not part of a classifier")
               for name in sorted(tensors) if name.startswith(("cls/", "bert/pooler/"))
               and name not in exported]
    return HfExport(state_dict, Report(rows, skipped, _fresh(missing)), TASKS[head],
                    num_labels or 2, config)


def format_report(report, title):
    """The printed table: converted tensors, skipped ones, heads that start fresh."""
    lines = [title, "%-58s %-56s %s" % ("transformers key", "our name", "shape")]
    for key, ours, shape, note in report.rows:
        lines.append("%-58s %-56s %-14s %s" % (key, ours, list(shape), note))
    for name, reason in report.skipped:
        lines.append("not converted: %s (%s)" % (name, reason))
    for description in report.fresh:
        lines.append("starts fresh: %s is not in the weights and will be newly "
                     "initialised" % description)
    lines.append("summary: %d tensors converted, %d not converted, %d part(s) start fresh"
                 % (len(report.rows), len(report.skipped), len(report.fresh)))
    return "\n".join(lines)
