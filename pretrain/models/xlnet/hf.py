"""XLNet <-> transformers: configs, weights and tokenizer files both ways.

    config, notes = xlnet_config(raw_config, "hf/config.json")   # our XLNetConfig
    tensors, report, config = hf_to_ours(state_dict, config, head=None)
    [part] = export_parts(tensors, config, labels)                # one ExportPart ("" subdir)

Imported: XLNetLMHeadModel, XLNetModel, XLNetForSequenceClassification and
XLNetForTokenClassification (other heads: the encoder, their head tensors listed as
not converted). Exported: XLNetLMHeadModel, or XLNetForSequenceClassification /
XLNetForTokenClassification for a checkpoint holding classifier/* / token_classifier/*.

Name table (transformers key without "transformer." <-> zihangdai/xlnet's name):

  word_embedding.weight             model/transformer/word_embedding/lookup_table
  mask_emb                          model/transformer/mask_emb/mask_emb  (query stream only)
  layer.{L}.rel_attn.{q,k,v,o,r}    model/transformer/layer_{L}/rel_attn/{q,k,v,o,r}/kernel
  layer.{L}.rel_attn.layer_norm     model/transformer/layer_{L}/rel_attn/LayerNorm
  layer.{L}.ff.layer_1, .layer_2    model/transformer/layer_{L}/ff/layer_1, layer_2 (transposed)
  layer.{L}.ff.layer_norm           model/transformer/layer_{L}/ff/LayerNorm
  layer.{L}.rel_attn.r_w_bias, r_r_bias, r_s_bias
                                    model/transformer/r_w_bias, ... [n_layer, n_head, d_head]
                                    (untie_r), or [n_head, d_head] shared by every layer
  layer.{L}.rel_attn.seg_embed      model/transformer/seg_embed [n_layer, 2, n_head, d_head]
  lm_loss.bias                      model/lm_loss/bias (lm_loss.weight is tied, not stored)
  sequence_summary.summary          model/sequnece_summary/summary (upstream's spelling)
  logits_proj                       classifier/output_weights, output_bias
  classifier (token classification) token_classifier/output_weights, output_bias

transformers keeps each relative bias per layer whatever `untie_r` says (only its TF
loader reads the flag): an import with untie_r false whose layers differ becomes
untie_r true, which computes exactly what transformers does.

Activations: our "gelu" (zihangdai/xlnet's) is the tanh approximation, transformers'
"gelu_new"; transformers' "gelu", XLNetConfig's default and what the hub's XLNet configs
say, is the erf GELU. Both import as our "gelu", the erf one with a warning (outputs
then differ from transformers' by up to ~5e-4 per activation); the export writes
"gelu_new", so transformers computes what we do.

Tokenizer files: a checkpoint with spiece.model exports XLNetTokenizer's files (A <sep>
B <sep> <cls>, padding on the left); one with a WordPiece vocab.txt exports BertTokenizer's,
which lays pairs out as BERT does ([CLS] A [SEP] B [SEP], padding on the right): arranging
inputs as the model was trained is then the user's job.
"""
import collections
import os
import re
import shutil

import numpy as np

from common.cli_options import UserError
from pretrain.interop import hf_files, hf_weights
from pretrain.interop.hf_converter import HFConverter
from pretrain.models.config import ConfigError
from pretrain.models.xlnet.config import XLNetConfig

PREFIX = "transformer."
SUMMARY_SCOPE = "model/sequnece_summary/"
LAYER_NORM_EPS = 1e-12  # fixed in pretrain.models.layers.layer_norm
VERY_LARGE_INTEGER = int(1e30)  # transformers' "no length limit" for a tokenizer
ARCHITECTURES = {None: "XLNetLMHeadModel", "classifier": "XLNetForSequenceClassification",
                 "token_classifier": "XLNetForTokenClassification"}
_LAYER, _HF_LAYER = "model/transformer/layer_{L}/", "layer.{L}."
TABLE = (
    ("encoder", "embedding", "model/transformer/word_embedding/lookup_table", "word_embedding"),
    ("mask_emb", "tensor", "model/transformer/mask_emb/mask_emb", "mask_emb"),
) + tuple(("encoder", "tensor", _LAYER + "rel_attn/%s/kernel" % name,
           _HF_LAYER + "rel_attn." + name) for name in "qkvor") + (
    ("encoder", "layer_norm", _LAYER + "rel_attn/LayerNorm", _HF_LAYER + "rel_attn.layer_norm"),
    ("encoder", "dense", _LAYER + "ff/layer_1", _HF_LAYER + "ff.layer_1"),
    ("encoder", "dense", _LAYER + "ff/layer_2", _HF_LAYER + "ff.layer_2"),
    ("encoder", "layer_norm", _LAYER + "ff/LayerNorm", _HF_LAYER + "ff.layer_norm"),
    ("lm_head", "tensor", "model/lm_loss/bias", "lm_loss.bias"),
    ("summary", "dense", SUMMARY_SCOPE + "summary", "sequence_summary.summary"),
    ("classifier", "tensor", "classifier/output_weights", "logits_proj.weight"),
    ("classifier", "tensor", "classifier/output_bias", "logits_proj.bias"),
    ("token_classifier", "tensor", "token_classifier/output_weights", "classifier.weight"),
    ("token_classifier", "tensor", "token_classifier/output_bias", "classifier.bias"),
)
# One array of ours per name, one tensor per layer in transformers.
STACKED = ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed")
_PER_LAYER = re.compile(r"^(?:transformer\.)?layer\.(\d+)\.rel_attn\.(%s)$" % "|".join(STACKED))
TIED = {"lm_loss.weight": "word_embedding.weight"}
PREFIXED_GROUPS = ("encoder", "mask_emb")
HEAD_GROUPS = hf_weights.HEAD_GROUPS
GROUPS = {None: ("encoder", "mask_emb", "lm_head"),
          "classifier": ("encoder", "mask_emb", "summary", "classifier"),
          "token_classifier": ("encoder", "mask_emb", "token_classifier")}
FRESH = {"mask_emb": "query stream's mask embedding (model/transformer/mask_emb/mask_emb; only "
                     "the permutation LM reads it)",
         "lm_head": "LM head bias (model/lm_loss/bias)",
         "summary": "sequence summary (model/sequnece_summary/summary)",
         "classifier": "classifier (classifier/*)",
         "token_classifier": "token classifier (token_classifier/*)"}

# transformers' XLNetConfig defaults, for fields a config.json leaves out.
_HF_DEFAULTS = dict(d_model=1024, n_layer=24, n_head=16, d_inner=4096, ff_activation="gelu",
                    untie_r=True, attn_type="bi", initializer_range=0.02, layer_norm_eps=1e-12,
                    dropout=0.1, mem_len=512, reuse_len=None, bi_data=False, clamp_len=-1,
                    same_length=False, summary_type="last", summary_use_proj=True,
                    summary_activation="tanh", summary_last_dropout=0.1)
_ACTIVATIONS_FROM_HF = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu",
                        "relu": "relu"}
_ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "relu": "relu"}
# XLNetTokenizer's special tokens (its sentencepiece model must have them).
SPM_SPECIAL_TOKENS = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
                      "sep_token": "<sep>", "pad_token": "<pad>", "cls_token": "<cls>",
                      "mask_token": "<mask>"}
SPM_EXTRA_TOKENS = ("<eop>", "<eod>")

ExportPart = collections.namedtuple("ExportPart", ["network", "state_dict", "report",
                                                   "hf_config"])


# ---- configs ---------------------------------------------------------------------------------

def xlnet_config(raw, source="config.json", head=None):
    """(XLNetConfig, notes: sentences for the log) of a transformers XLNet config dict.

    UserError for what our XLNet cannot compute: attn_type "uni", bi_data, another
    LayerNorm epsilon or activation, and (head "classifier") a sequence summary other
    than the tanh projection of the last token.
    """
    values = dict(_HF_DEFAULTS)
    values.update(raw)
    for field in ("vocab_size", "d_model", "n_layer", "n_head", "d_inner"):
        if values.get(field) is None:
            raise UserError("%s: %s is missing" % (source, field))
    refusals = [
        (values.get("attn_type") != "bi", "attn_type %r: our XLNet attends bidirectionally "
         "only (attn_type \"bi\")" % values.get("attn_type")),
        (bool(values.get("bi_data")), "bi_data true: transformers then feeds half of each "
         "batch reversed relative positions, which our XLNet does not"),
        (not np.isclose(float(values.get("layer_norm_eps") or 0), LAYER_NORM_EPS, rtol=1e-6,
                        atol=0), "layer_norm_eps=%r, but our LayerNorm epsilon is fixed at "
         "1e-12" % values.get("layer_norm_eps")),
        (values.get("ff_activation") not in _ACTIVATIONS_FROM_HF, "ff_activation %r is not "
         "supported; use one of %s" % (values.get("ff_activation"),
                                       ", ".join(sorted(_ACTIVATIONS_FROM_HF)))),
    ]
    if head == "classifier":
        summary = (values.get("summary_type"), values.get("summary_use_proj"),
                   values.get("summary_activation"))
        refusals.append((summary != ("last", True, "tanh"), "summary_type, summary_use_proj, "
                         "summary_activation = %r: our pooled output is the \"last\" token's "
                         "tanh projection (\"last\", true, \"tanh\")" % (summary,)))
    for refused, what in refusals:
        if refused:
            raise UserError("%s: %s; this model cannot be imported" % (source, what))
    fields = dict(model_type="xlnet", n_token=values["vocab_size"], d_model=values["d_model"],
                  n_layer=values["n_layer"], n_head=values["n_head"],
                  d_head=values.get("d_head") or values["d_model"] // values["n_head"],
                  d_inner=values["d_inner"],
                  ff_activation=_ACTIVATIONS_FROM_HF[values["ff_activation"]],
                  untie_r=bool(values["untie_r"]), dropout=values["dropout"],
                  dropatt=values["dropout"], init_std=values["initializer_range"],
                  clamp_len=values["clamp_len"])
    try:
        config = XLNetConfig.from_dict(fields)
    except ConfigError as err:
        raise UserError("%s: %s" % (source, err)) from None
    notes = []
    if values["ff_activation"] == "gelu":
        notes.append("%s has ff_activation \"gelu\", transformers' erf GELU; our XLNet (like "
                     "zihangdai/xlnet, which trained the published XLNets) applies the tanh "
                     "approximation (transformers' \"gelu_new\"): imported as \"gelu\", its "
                     "outputs differ from transformers' slightly (up to ~5e-4 per "
                     "activation); an export writes \"gelu_new\"" % source)
    if values.get("mem_len"):
        notes.append("mem_len=%r: transformers keeps a memory of past segments only when a "
                     "call passes `mems`; our XLNet has none, which is transformers called "
                     "without mems" % values["mem_len"])
    if values.get("same_length"):
        notes.append("same_length true is ignored: it only applies to attn_type \"uni\"")
    return config, notes


def hf_config_dict(config, architecture):
    """transformers' config.json dict of our XLNetConfig (without token ids)."""
    check_exportable(config)
    return {"architectures": [architecture], "model_type": "xlnet",
            "vocab_size": config.n_token, "d_model": config.d_model, "n_layer": config.n_layer,
            "n_head": config.n_head, "d_head": config.d_head, "d_inner": config.d_inner,
            "ff_activation": _ACTIVATIONS_TO_HF[config.ff_activation],
            "untie_r": config.untie_r, "attn_type": "bi", "bi_data": False,
            "clamp_len": config.clamp_len, "same_length": False, "mem_len": None,
            "reuse_len": None, "use_mems_eval": True, "use_mems_train": False,
            "dropout": config.dropout, "initializer_range": config.init_std,
            "layer_norm_eps": LAYER_NORM_EPS, "summary_type": "last", "summary_use_proj": True,
            "summary_activation": "tanh", "summary_last_dropout": config.dropout,
            "start_n_top": 5, "end_n_top": 5, "tie_word_embeddings": True}


def check_exportable(config):
    """UserError when transformers' XLNetConfig cannot hold `config`."""
    if config.d_head * config.n_head != config.d_model:
        raise UserError("d_head=%d x n_head=%d is not d_model=%d: transformers' XLNet "
                        "requires d_head = d_model / n_head, so this model cannot be exported"
                        % (config.d_head, config.n_head, config.d_model))


def caveats(config, head=None):
    """Sentences about what the exported model does differently (training-only or heads)."""
    found = []
    if config.dropatt != config.dropout:
        found.append("transformers' XLNet has one dropout for attention probabilities and "
                     "activations: config.json says dropout=%r (our dropatt=%r applies when "
                     "training only)" % (config.dropout, config.dropatt))
    if config.init != "normal":
        found.append("init %r: transformers initialises new weights normally "
                     "(initializer_range=%r)" % (config.init, config.init_std))
    if head == "classifier":
        found.append("transformers' sequence summary takes the last position, ours the last "
                     "real token: rows padded on the left there (XLNetTokenizer's "
                     "padding_side) and on the right here give the same pooled output")
    return found


# ---- weights ---------------------------------------------------------------------------------

def mapping_entries(config):
    """hf_weights.Entry rows for `config` (transformers keys without "transformer.")."""
    return hf_weights.expand_table(TABLE, {"{L}": range(config.n_layer)})


def variable_shapes(config, summary=False, num_labels=None, num_tags=None):
    """{our name: shape} of the XLNet graph: encoder, both streams, LM head, and the
    summary / classifier / token classifier when asked."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from pretrain.models.xlnet.modeling import XLNetModel, lm_logits
    with tf.Graph().as_default():
        ids = tf.ones([1, 2], tf.int32)
        model = XLNetModel(config, False, ids, ids, 0 * ids, perm_mask=tf.zeros([1, 2, 2]),
                           target_mapping=tf.ones([1, 1, 2]))
        lm_logits(model.get_query_output(), model.get_embedding_table(), config)
        if summary:
            model.get_pooled_output()
        shapes = {v.op.name: tuple(v.shape.as_list()) for v in tf.global_variables()}
    for head, size in (("classifier", num_labels), ("token_classifier", num_tags)):
        if size:
            shapes.update({head + "/output_weights": (size, config.d_model),
                           head + "/output_bias": (size,)})
    return shapes


_as_float32 = hf_weights._as_float32  # pylint: disable=protected-access


def _stack(per_layer, config, rows, skipped):
    """Our relative biases and segment embeddings from transformers' per-layer tensors:
    (tensors, untie_r, missing keys)."""
    tensors, missing = {}, []
    arrays = {}
    for name in STACKED:
        found = per_layer.get(name, {})
        missing += ["layer.%d.rel_attn.%s" % (i, name) for i in range(config.n_layer)
                    if i not in found]
        for layer in sorted(found):
            if layer >= config.n_layer:
                skipped.append((found.pop(layer)[0], "layer beyond n_layer=%d, not imported"
                                % config.n_layer))
        arrays[name] = [(found[i][0],) + _as_float32(*found[i]) for i in sorted(found)]
    if missing:
        return tensors, config.untie_r, missing
    untie_r = config.untie_r or any(
        not np.array_equal(value, arrays[name][0][1])
        for name in STACKED[:3] for _, value, _ in arrays[name])
    for name in STACKED:
        ours = "model/transformer/" + name
        stacked = untie_r or name == "seg_embed"
        tensors[ours] = np.stack([value for _, value, _ in arrays[name]]) if stacked \
            else arrays[name][0][1]
        for layer, (key, value, note) in enumerate(arrays[name]):
            if stacked:
                note = "; ".join(filter(None, [note, "layer %d of %s" % (
                    layer, list(tensors[ours].shape))]))
                if untie_r and not config.untie_r and name != "seg_embed":
                    note += "; layers differ: untie_r true"
                rows.append((key, ours, tuple(value.shape), note))
            elif layer == 0:
                rows.append((key, ours, tuple(value.shape), "; ".join(filter(None, [
                    note, "shared by the %d layers (untie_r false)" % config.n_layer]))))
            else:
                skipped.append((key, "equal to layer 0's (untie_r false: one array)"))
    return tensors, untie_r, []


def hf_to_ours(state_dict, config, head=None):
    """(tensors {our name: float32 array}, hf_weights.Report, config) of a transformers
    XLNet state dict; `config` from xlnet_config (returned with untie_r true when the
    per-layer biases of an untie_r false model differ). head: what classifier/logits_proj
    tensors become ("classifier", "token_classifier" or None: not imported).
    Missing encoder tensors are a UserError; a missing head is Report.fresh."""
    per_layer, rest = {}, {}
    for key, value in state_dict.items():
        match = _PER_LAYER.match(key)
        if match:
            per_layer.setdefault(match.group(2), {})[int(match.group(1))] = (key, value)
        else:
            rest[key] = value
    entries = {entry.hf: entry for entry in mapping_entries(config)
               if entry.group not in HEAD_GROUPS or entry.group == head}
    tensors, rows, skipped = hf_weights.convert_state_dict(rest, entries, PREFIX, TIED)
    stacked, untie_r, missing = _stack(per_layer, config, rows, skipped)
    tensors.update(stacked)
    missing += [entry.hf for entry in entries.values()
                if entry.group == "encoder" and entry.ours not in tensors]
    if missing:
        raise UserError("the weights lack %d encoder tensor(s) the config implies, e.g. %s "
                        "(config: n_layer=%d); is config.json the one of these weights?"
                        % (len(missing), ", ".join(missing[:3]), config.n_layer))
    if untie_r != config.untie_r:
        config = XLNetConfig.from_dict(dict(config.to_dict(), untie_r=True))
    summary = any(name.startswith(SUMMARY_SCOPE) for name in tensors)
    expected = variable_shapes(config, summary, hf_weights.head_size(tensors, "classifier"),
                               hf_weights.head_size(tensors, "token_classifier"))
    hf_weights.check_shapes(tensors, expected,
                            lambda name: next(row[0] for row in rows if row[1] == name))
    groups = GROUPS[head] if head else ("mask_emb", "lm_head")
    fresh = [FRESH[group] for group in groups if group != "encoder" and not any(
        entry.ours in tensors for entry in entries.values() if entry.group == group)]
    return tensors, hf_weights.Report(rows, skipped, fresh), config


def export_parts(tensors, config, labels=None):
    """[ExportPart("", state dict, Report, config.json dict)] of a checkpoint's model
    tensors (training state removed): XLNetLMHeadModel, or the classifier the checkpoint
    holds. Unknown or misshapen tensors and a partial encoder are UserErrors."""
    check_exportable(config)
    head, size = hf_weights.checkpoint_head(tensors)
    expected = variable_shapes(config, True, *((size, None) if head == "classifier"
                                               else (None, size)))
    hf_weights.check_shapes(tensors, expected, lambda name: "checkpoint tensor %s" % name)
    unknown = sorted(set(tensors) - set(expected))
    if unknown:
        raise UserError("checkpoint tensor(s) %s are not part of the XLNet model the config "
                        "describes; cannot export them" % ", ".join(unknown[:5]))
    entries = [entry for entry in mapping_entries(config) if entry.group in GROUPS[head]]
    missing = [name for name in [entry.ours for entry in entries if entry.group == "encoder"]
               + ["model/transformer/" + name for name in STACKED] if name not in tensors]
    if missing:
        raise UserError("checkpoint lacks %d XLNet encoder variable(s), e.g. %s"
                        % (len(missing), ", ".join(missing[:3])))
    state_dict, rows, fresh = {}, [], []
    for entry in entries:
        if entry.ours not in tensors:
            if FRESH[entry.group] not in fresh:
                fresh.append(FRESH[entry.group])
            continue
        hf_weights.export_tensor(tensors, entry, PREFIX + entry.hf
                                 if entry.group in PREFIXED_GROUPS else entry.hf,
                                 state_dict, rows)
    for name in STACKED:
        ours = "model/transformer/" + name
        value = np.asarray(tensors[ours], dtype=np.float32)
        stacked = config.untie_r or name == "seg_embed"
        for layer in range(config.n_layer):
            key = "%slayer.%d.rel_attn.%s" % (PREFIX, layer, name)
            state_dict[key] = np.array(value[layer] if stacked else value)
            rows.append((key, ours, tuple(state_dict[key].shape), "layer %d" % layer
                         if stacked else "copy for layer %d (untie_r false)" % layer))
    exported = {row[1] for row in rows}
    skipped = [(name, "not part of transformers' %s" % ARCHITECTURES[head])
               for name in sorted(tensors) if name not in exported]
    hf = hf_config_dict(config, ARCHITECTURES[head])
    if head:
        labels = [str(label) for label in labels or range(size)]
        if len(labels) != size:
            raise UserError("%d labels %s for a classifier with %d outputs"
                            % (len(labels), labels, size))
        hf.update(num_labels=size, id2label=dict(enumerate(labels)),
                  label2id={label: index for index, label in enumerate(labels)})
        hf["id2label"] = {str(index): label for index, label in hf["id2label"].items()}
    return [ExportPart("", state_dict, hf_weights.Report(rows, skipped, fresh), hf)]


# ---- tokenizer files -------------------------------------------------------------------------

def write_tokenizer_files(directory, assets, do_lower_case, hf):
    """Writes the tokenizer files of an exported XLNet into `directory` and sets hf's
    pad/bos/eos token ids; returns a description for the log.

    assets: checkpoint_assets.CheckpointAssets. Its spiece.model (unless --vocab_file
    was given) -> XLNetTokenizer files; else its vocab.txt -> BertTokenizer files.
    do_lower_case: None for what fine-tuning used (task.json's do_lower_case), else the
    tokenizer's default (XLNetTokenizer false, BertTokenizer true)."""
    use_spm = assets.spm_model_file and (assets.vocab_source != "flag" or not assets.vocab_file)
    if do_lower_case is None:
        do_lower_case = (assets.task or {}).get("do_lower_case", not use_spm)
    if not use_spm:
        vocab = hf_files.write_tokenizer_files(directory, assets.vocab_file, do_lower_case,
                                               assets.tokenizer_length_limit(VERY_LARGE_INTEGER))
        _check_size(vocab, assets.vocab_file, hf)
        hf.update(pad_token_id=vocab["[PAD]"], bos_token_id=vocab["[CLS]"],
                  eos_token_id=vocab["[SEP]"])
        return "BertTokenizer (vocab.txt from %s; BERT's pair layout)" % assets.vocab_file
    pieces = hf_files.read_spm_pieces(assets.spm_model_file)
    _check_size(pieces, assets.spm_model_file, hf)
    missing = [token for token in SPM_SPECIAL_TOKENS.values() if token not in pieces]
    if missing:
        raise UserError("%s lacks XLNetTokenizer's special token(s) %s; transformers would "
                        "map them to <unk>" % (assets.spm_model_file, " ".join(missing)))
    shutil.copyfile(assets.spm_model_file, os.path.join(directory, hf_files.SPIECE))
    special = dict(SPM_SPECIAL_TOKENS, additional_special_tokens=[
        token for token in SPM_EXTRA_TOKENS if token in pieces])
    hf_files.write_json(os.path.join(directory, hf_files.TOKENIZER_CONFIG), dict(
        special, tokenizer_class="XLNetTokenizer", do_lower_case=bool(do_lower_case),
        remove_space=True, keep_accents=False, padding_side="left",
        model_max_length=assets.tokenizer_length_limit(VERY_LARGE_INTEGER)))
    hf_files.write_json(os.path.join(directory, hf_files.SPECIAL_TOKENS_MAP), special)
    hf.update(pad_token_id=pieces["<pad>"], bos_token_id=pieces["<s>"],
              eos_token_id=pieces["</s>"])
    return "XLNetTokenizer (%s, %d pieces)" % (assets.spm_model_file, len(pieces))


def _check_size(vocab, path, hf):
    if len(vocab) > hf["vocab_size"]:
        raise UserError("vocab %s has %d tokens but the config has n_token=%d"
                        % (path, len(vocab), hf["vocab_size"]))


# ---- the family's converter (ModelFamily.hf_converter) ---------------------------------------

class XLNetConverter(HFConverter):
    """transformers' XLNetLMHeadModel / XLNetModel / XLNetFor*Classification <-> a
    checkpoint under zihangdai/xlnet's names."""
    hf_model_types = ("xlnet",)
    architecture_prefixes = ("XLNet",)
    sentencepiece_vocab = True
    activation_field = "ff_activation"

    def import_config(self, raw_config, source, hf_model_type, head):
        config, notes = xlnet_config(raw_config, source, head)
        return config, config.n_token, notes

    def import_weights(self, model_dir, raw_config, config, state_dict, weights,
                       hf_model_type, head, options):
        tensors, conversion, config = hf_to_ours(state_dict, config, head)
        return config, tensors, conversion, weights, head

    def import_caveats(self, config, head, options):
        return caveats(config, head)

    def check_exportable(self, config):
        check_exportable(config)

    def export_parts(self, tensors, config, labels):
        return [(part.network, part.state_dict, part.report, part.hf_config, None)
                for part in export_parts(tensors, config, labels)]

    def needs_vocab_file(self, assets):
        return not assets.spm_model_file

    def write_tokenizer(self, directory, assets, config, hf, do_lower_case, lower_case_flag):
        return "tokenizer: " + write_tokenizer_files(directory, assets, lower_case_flag, hf)

    def export_notes(self, config, parts, output_dir):
        head = {"XLNetForSequenceClassification": "classifier"}.get(
            parts[0][3]["architectures"][0])
        return [], caveats(config, head)


CONVERTER = XLNetConverter()
