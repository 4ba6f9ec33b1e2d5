"""ELECTRA <-> transformers: the discriminator as `ElectraForPreTraining`, the generator as
`ElectraForMaskedLM`, configs and weights both ways.

    parts = export_parts(tensors, config)            # [ExportPart] "discriminator", "generator"
    config, tensors, report = import_pair(disc_dir, disc_config, disc_state,
                                          gen_dir, gen_config, gen_state)

Name tables (hf_weights' row format; {L} every layer, {EMB} the scope of the embedding
tables the network reads):

  ElectraForPreTraining   electra.embeddings.*          electra/embeddings/*
                          electra.embeddings_project    electra/embeddings_project (E != H)
                          electra.encoder.layer.N.*     electra/encoder/layer_N/*
                          discriminator_predictions.dense / .dense_prediction
                                                        discriminator_predictions/dense / dense_1
  ElectraForMaskedLM      electra.embeddings.*          electra/embeddings/* (shared), or
                                                        generator/embeddings/* (untied)
                          electra.embeddings_project    generator/embeddings_project (E != Hg)
                          electra.encoder.layer.N.*     generator/encoder/layer_N/*
                          generator_predictions.dense / .LayerNorm
                                                        generator_predictions/dense / LayerNorm
                          generator_lm_head.bias        generator_predictions/output_bias
                          generator_lm_head.weight      tied to the word embeddings, not written

These are the names transformers' own `load_tf_weights_in_electra` gives our variables
(tests/fixtures/hf_electra records its mapping of upstream's names). transformers'
`ElectraGeneratorPredictions` applies the erf GELU whatever `hidden_act` says, where ours
(and google-research/electra) apply `hidden_act`: with hidden_act other than
"gelu_exact" the generator's MLM outputs differ slightly (`caveats`).
"""
import collections
import os

import numpy as np

from common.cli_options import UserError
from pretrain.interop import hf_config, hf_files, hf_weights
from pretrain.interop.hf_converter import HFConverter
from pretrain.models.config import ConfigError
from pretrain.models.electra.config import ElectraConfig

# Values transformers' ElectraConfig assumes when a field is absent.
HF_DEFAULTS = {"embedding_size": 128, "hidden_size": 256, "num_hidden_layers": 12,
               "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
               "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02}
PREFIX = "electra."
NETWORKS = ("discriminator", "generator")
ARCHITECTURES = {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"}
_SCOPES = {"discriminator": "electra", "generator": "generator"}


def _encoder_rows(scope):
    """BERT's encoder rows under `scope`, the embedding tables under {EMB}."""
    rows = [(group, kind, ours.replace("bert/embeddings/", "{EMB}/embeddings/")
             .replace("bert/encoder/", scope + "/encoder/"), hf)
            for group, kind, ours, hf in hf_weights.BERT_TABLE if group == "encoder"]
    return tuple(rows) + (("encoder", "dense", scope + "/embeddings_project",
                           "embeddings_project"),)


TABLES = {
    "discriminator": _encoder_rows("electra") + (
        ("discriminator_head", "dense", "discriminator_predictions/dense",
         "discriminator_predictions.dense"),
        ("discriminator_head", "dense", "discriminator_predictions/dense_1",
         "discriminator_predictions.dense_prediction"),
    ),
    "generator": _encoder_rows("generator") + (
        ("generator_head", "dense", "generator_predictions/dense", "generator_predictions.dense"),
        ("generator_head", "layer_norm", "generator_predictions/LayerNorm",
         "generator_predictions.LayerNorm"),
        ("generator_head", "tensor", "generator_predictions/output_bias", "generator_lm_head.bias"),
    ),
}
TIED = {"discriminator": {},
        "generator": {"generator_lm_head.weight": "embeddings.word_embeddings.weight"}}
HEADS = {"discriminator": "discriminator head (discriminator_predictions/*)",
         "generator": "generator head (generator_predictions/*)"}

ExportPart = collections.namedtuple("ExportPart", ["network", "state_dict", "report",
                                                   "hf_config"])


def network_config(config, network):
    """The BertConfig of one of the two networks."""
    return (config.discriminator_config() if network == "discriminator"
            else config.generator_config())


def embedding_scope_and_width(config, network):
    """(scope of the embedding tables `network` reads, their width E)."""
    if network == "generator" and config.untied_generator_embeddings:
        return "generator", config.generator_config().hidden_size
    return "electra", config.embedding_width


def mapping_entries(config, network):
    """hf_weights.Entry rows of `network` for this config (transformers keys without the
    "electra." prefix in the group "encoder")."""
    bert = network_config(config, network)
    scope, width = embedding_scope_and_width(config, network)
    entries = hf_weights.expand_table(TABLES[network], {
        "{L}": range(bert.num_hidden_layers), "{EMB}": [scope]})
    return [entry for entry in entries
            if width != bert.hidden_size or "/embeddings_project/" not in entry.ours]


def variable_shapes(config):
    """{our variable name: shape} of the ELECTRA pretraining graph of `config`."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from pretrain.models.electra.pretraining import electra_pretraining_losses
    with tf.Graph().as_default():
        ones = tf.ones([1, 2], tf.int32)
        features = {"input_ids": ones, "input_mask": ones, "segment_ids": 0 * ones,
                    "masked_lm_positions": ones[:, :1], "masked_lm_ids": ones[:, :1],
                    "masked_lm_weights": tf.ones([1, 1])}
        electra_pretraining_losses(config, features, False)
        return {v.op.name: tuple(v.shape.as_list()) for v in tf.global_variables()}


def hf_configs(config):
    """{network: transformers config dict} of the two exported models."""
    out = {}
    for network in NETWORKS:
        bert = network_config(config, network)
        hf = hf_config.hf_fields(bert, "electra", ARCHITECTURES[network])
        hf.update(embedding_size=embedding_scope_and_width(config, network)[1],
                  classifier_dropout=None, use_cache=True)
        out[network] = hf
    return out


def caveats(config):
    """Sentences about what the exported pair computes differently (empty if nothing)."""
    found = hf_config.transformers_caveats(config)  # e.g. hierarchical positions
    if str(config.hidden_act).lower() == "gelu_exact":
        return found
    return found + ["transformers' ElectraGeneratorPredictions applies the erf GELU whatever "
                    "hidden_act says, our generator head applies hidden_act %r: the two "
                    "generators' MLM outputs differ slightly (the discriminators agree)"
                    % config.hidden_act]


# ---- export ----------------------------------------------------------------------------------

def export_parts(tensors, config):
    """[ExportPart] for a checkpoint's model tensors (training state removed): always the
    discriminator, and the generator when the checkpoint holds one. Unknown or misshapen
    tensors, a partial network and fine-tuned heads are UserErrors."""
    hf_config.exported_model_type(config)
    heads = sorted({name.split("/")[0] for name in tensors
                    if name.startswith(hf_weights.HEAD_GROUPS)})
    if heads:
        raise UserError("checkpoint holds %s/*: a fine-tuned ELECTRA cannot be exported to "
                        "transformers yet; export its pretraining checkpoint" % heads[0])
    expected = variable_shapes(config)
    hf_weights.check_shapes(tensors, expected, lambda name: "checkpoint tensor %s" % name)
    unknown = sorted(set(tensors) - set(expected))
    if unknown:
        raise UserError("checkpoint tensor(s) %s are not part of the ELECTRA model the config "
                        "describes; cannot export them" % ", ".join(unknown[:5]))
    configs = hf_configs(config)
    parts = []
    for network in NETWORKS:
        entries = mapping_entries(config, network)
        encoder = [entry.ours for entry in entries if entry.group == "encoder"]
        missing = [name for name in encoder if name not in tensors]
        if network == "generator" and not any(name.startswith("generator/")
                                              for name in tensors):
            break  # e.g. imported without --generator_model_dir
        if missing:
            raise UserError("checkpoint lacks %d %s variable(s), e.g. %s" % (
                len(missing), network, ", ".join(missing[:3])))
        state_dict, rows, fresh = {}, [], []
        for entry in entries:
            if entry.ours not in tensors:
                if HEADS[network] not in fresh:
                    fresh.append(HEADS[network])
                continue
            key = PREFIX + entry.hf if entry.group == "encoder" else entry.hf
            value = np.asarray(tensors[entry.ours], dtype=np.float32)
            state_dict[key] = np.ascontiguousarray(value.T if entry.transpose else value)
            rows.append((key, entry.ours, tuple(state_dict[key].shape),
                         "transposed" if entry.transpose else ""))
        parts.append(ExportPart(network, state_dict, hf_weights.Report(rows, [], fresh),
                                configs[network]))
    return parts


# ---- import ----------------------------------------------------------------------------------

def _check_role(raw_config, state_dict, source, network):
    """UserError when a generator is given as the discriminator or the other way round."""
    architectures = [str(name) for name in raw_config.get("architectures") or []]
    is_generator = ("ElectraForMaskedLM" in architectures
                    or any(key.startswith("generator_") for key in state_dict))
    if network == "discriminator" and is_generator:
        raise UserError("%s is an ELECTRA generator (ElectraForMaskedLM): pass the "
                        "discriminator (ElectraForPreTraining) as --model_dir and this "
                        "directory as --generator_model_dir" % source)
    if network == "generator" and not is_generator:
        raise UserError("--generator_model_dir: %s is not an ELECTRA generator "
                        "(ElectraForMaskedLM; architectures %s)" % (source, architectures))


def electra_config(disc_raw, disc_source, gen_raw=None, gen_source=None, untied=False):
    """Our ElectraConfig for a transformers discriminator config (and its generator's)."""
    model_type, fields, values = hf_config.bert_fields_from_hf(disc_raw, disc_source,
                                                               HF_DEFAULTS)
    if model_type != "electra":
        raise UserError("%s: model_type %r is not ELECTRA" % (disc_source, model_type))
    width = values["embedding_size"]  # None: the hidden size, as upstream writes it
    fields.update(model_type="electra",
                  embedding_size=None if width == fields["hidden_size"] else width)
    if gen_raw is not None:
        gen_type, gen_fields, _ = hf_config.bert_fields_from_hf(gen_raw, gen_source,
                                                                HF_DEFAULTS)
        if gen_type != "electra":
            raise UserError("--generator_model_dir: %s: model_type %r is not ELECTRA"
                            % (gen_source, gen_type))
        for field in ("vocab_size", "max_position_embeddings", "type_vocab_size",
                      "hidden_act"):
            if gen_fields[field] != fields[field]:
                raise UserError("%s has %s=%r but the discriminator's %s has %r; the two "
                                "networks of an ELECTRA share it" % (
                                    gen_source, field, gen_fields[field], disc_source,
                                    fields[field]))
        fields.update(generator_hidden_size=gen_fields["hidden_size"] / fields["hidden_size"],
                      generator_layers=(gen_fields["num_hidden_layers"]
                                        / fields["num_hidden_layers"]),
                      untied_generator_embeddings=untied)
    try:
        config = ElectraConfig.from_dict(fields)
    except ConfigError as err:
        raise UserError("%s: %s" % (gen_source or disc_source, err)) from None
    if gen_raw is not None:
        generator = config.generator_config()
        for field in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                      "intermediate_size"):
            if getattr(generator, field) != gen_fields[field]:
                raise UserError(
                    "%s: %s=%r, but ELECTRA sizes a generator of hidden_size %d as %d layers, "
                    "%d head(s) (hidden_size // 64), intermediate_size %d (4 x hidden_size); "
                    "this generator cannot be represented" % (
                        gen_source, field, gen_fields[field], generator.hidden_size,
                        generator.num_hidden_layers, generator.num_attention_heads,
                        generator.intermediate_size))
    return config


def _convert(network, config, state_dict):
    entries = {entry.hf: entry for entry in mapping_entries(config, network)}
    tensors, rows, skipped = hf_weights.convert_state_dict(state_dict, entries, PREFIX,
                                                           TIED[network])
    missing = [entry for entry in entries.values() if entry.ours not in tensors]
    missing_encoder = [entry.hf for entry in missing if entry.group == "encoder"]
    if missing_encoder:
        raise UserError("the %s's weights lack %d encoder tensor(s) its config implies, e.g. "
                        "%s; is config.json the one of these weights?"
                        % (network, len(missing_encoder), ", ".join(missing_encoder[:3])))
    return tensors, rows, skipped, [HEADS[network]] if missing else []


def _embeddings_differ(disc, gen):
    return [name for name in gen if name.startswith("electra/embeddings/")
            and not np.array_equal(gen[name], disc[name])]


def import_pair(disc_source, disc_raw, disc_state, gen_source=None, gen_raw=None,
                gen_state=None):
    """(ElectraConfig, our tensors, hf_weights.Report) of a transformers ELECTRA: the
    discriminator's config.json dict and state dict, and optionally the generator's. Without
    a generator, one of the configured size starts fresh (Report.fresh says so)."""
    _check_role(disc_raw, disc_state, disc_source, "discriminator")
    if gen_raw is None:
        config = electra_config(disc_raw, disc_source)
    else:
        _check_role(gen_raw, gen_state, gen_source, "generator")
        gen_width = gen_raw.get("embedding_size", 128)
        untied = gen_width != disc_raw.get("embedding_size", 128)
        config = electra_config(disc_raw, disc_source, gen_raw, gen_source, untied)
    tensors, rows, skipped, fresh = _convert("discriminator", config, disc_state)
    if gen_raw is None:
        generator = config.generator_config()
        fresh.append("generator (generator/*, generator_predictions/*; no "
                     "--generator_model_dir): one of the configured size starts fresh, "
                     "hidden_size %d, %d layer(s), %d head(s), generator_hidden_size=%r and "
                     "generator_layers=%r of the discriminator in bert_config.json" % (
                         generator.hidden_size, generator.num_hidden_layers,
                         generator.num_attention_heads, config.generator_hidden_size,
                         config.generator_layers))
    else:
        gen_tensors, gen_rows, gen_skipped, gen_fresh = _convert("generator", config, gen_state)
        differ = _embeddings_differ(tensors, gen_tensors)
        if differ and config.generator_config().hidden_size == gen_width:
            values = dict(config.to_dict(), untied_generator_embeddings=True)
            config = ElectraConfig.from_dict(values)
            gen_tensors = {name.replace("electra/embeddings/", "generator/embeddings/"): value
                           for name, value in gen_tensors.items()}
            gen_rows = [(key, ours.replace("electra/embeddings/", "generator/embeddings/"),
                         shape, "; ".join(filter(None, [note, "differs from the "
                                                        "discriminator's: untied"])))
                        for key, ours, shape, note in gen_rows]
        elif differ:
            raise UserError("%s's embeddings (e.g. %s) differ from the discriminator's in %s, "
                            "and its embedding_size %d is not its hidden_size, so they cannot "
                            "be its own either: are the two from the same model?" % (
                                gen_source, differ[0], disc_source, gen_width))
        for key, ours, shape, note in gen_rows:
            if ours.startswith("electra/embeddings/"):
                skipped.append(("generator:" + key, "equal to the discriminator's %s "
                                "(shared)" % ours))
            else:
                rows.append(("generator:" + key, ours, shape, note))
                tensors[ours] = gen_tensors[ours]
        skipped += [("generator:" + key, reason) for key, reason in gen_skipped]
        fresh += gen_fresh
    hf_weights.check_shapes(tensors, variable_shapes(config),
                            lambda name: next(row[0] for row in rows if row[1] == name))
    return config, tensors, hf_weights.Report(rows, skipped, fresh)


# ---- the family's converter (ModelFamily.hf_converter) ---------------------------------------

class ElectraConverter(HFConverter):
    """A discriminator directory (ElectraForPreTraining) and optionally its generator's
    (ElectraForMaskedLM) <-> one ELECTRA checkpoint."""
    hf_model_types = ("electra",)
    architecture_prefixes = ("Electra",)
    import_options = {"generator_model_dir": (
        "the generator (ElectraForMaskedLM) of the --model_dir discriminator "
        "(ElectraForPreTraining); without it a fresh generator of the configured size is "
        "trained from scratch")}

    def import_config(self, raw_config, source, hf_model_type, head):
        # the ElectraConfig waits for the generator's config
        fields = hf_config.bert_fields_from_hf(raw_config, source, HF_DEFAULTS)[1]
        return None, fields["vocab_size"], []

    def import_weights(self, model_dir, raw_config, config, state_dict, weights,
                       hf_model_type, head, options):
        source = os.path.join(model_dir, hf_files.CONFIG)
        generator_model_dir = options.get("generator_model_dir")
        if not generator_model_dir:
            config, tensors, conversion = import_pair(source, raw_config, state_dict)
            return config, tensors, conversion, weights, None
        generator_model_dir = os.path.expanduser(str(generator_model_dir))
        if not os.path.isdir(generator_model_dir):
            raise UserError("--generator_model_dir %s does not exist or is not a directory"
                            % generator_model_dir)
        gen_raw = hf_files.read_config(generator_model_dir)
        gen_state, gen_weights = hf_files.read_weights(generator_model_dir)
        config, tensors, conversion = import_pair(
            source, raw_config, state_dict, os.path.join(generator_model_dir, hf_files.CONFIG),
            gen_raw, gen_state)
        return config, tensors, conversion, "%s + %s/%s" % (
            weights, generator_model_dir, gen_weights), None

    def import_caveats(self, config, head, options):
        return caveats(config) if options.get("generator_model_dir") else []

    def export_parts(self, tensors, config, labels):
        return [(part.network, part.state_dict, part.report, part.hf_config, None)
                for part in export_parts(tensors, config)]

    def export_notes(self, config, parts, output_dir):
        info = []
        if len(parts) == 1:
            info.append("the checkpoint holds no generator (generator/*): wrote %s only"
                        % os.path.join(output_dir, "discriminator"))
        return info, caveats(config)


CONVERTER = ElectraConverter()
