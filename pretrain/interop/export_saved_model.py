r"""Export a checkpoint as a TF Serving SavedModel (TF1 graph, tag `serve`).

    python -m pretrain.interop.export_saved_model --init_checkpoint=OUT --output_dir=export/1

--init_checkpoint is a prefix or a directory (its latest checkpoint; for a
fine-tuning output directory the one in best/). bert_config.json, vocab.txt
and task.json are taken from beside it (pretrain.checkpoints.checkpoint_assets);
--bert_config_file / --vocab_file are needed only for checkpoints without them.

Signature `serving_default` (plain tensors, no tf.Example parsing):
  inputs   input_ids, input_mask, segment_ids   int32 [B, S]
           (any batch B, any length S <= max_position_embeddings, or its square with
           hierarchical_position)
  outputs  pooled_output    float32 [B, H]
           sequence_output  float32 [B, S, H]
           probabilities    float32 [B, num_labels]  (only for a checkpoint
           holding a fine-tuned classifier: classifier/output_weights and
           classifier/output_bias, pretrain.models.task_heads.get_classifier_output)
           tag_probabilities float32 [B, S, num_tags]  (instead, for a token
           classifier (NER): token_classifier/*, get_token_classifier_output)
A model without a pooler (imported from a *ForMaskedLM) serves no pooled_output. An
ELECTRA serves its discriminator (electra/*): sequence_output and, as pooled_output, the
[CLS] token's final hidden state (ELECTRA has no pooler); its generator is left out. An
XLNet serves its content stream [B, S, d_model] (no permutation, input_mask 1 = real
token as for BERT) and, only when the checkpoint holds model/sequnece_summary/* (a
fine-tuned or XLNetForSequenceClassification import; a pretraining checkpoint has none),
pooled_output, the summary: tanh projection of the last real token.

The labels are not an output (a [N] tensor has no batch dimension, which TF
Serving's row format needs): `assets.extra/task.json` is the checkpoint's
task.json (labels in id order; copied when the checkpoint has one), and
`assets.extra/vocab.txt` the vocab (when known; `spiece.model` for a sentencepiece
XLNet), for the server to name classes and tokenize.

The graph is the Estimator's PREDICT graph (`is_training=False`). Only the
model's variables are saved; optimizer slots, global_step and MLM/SOP heads
of the checkpoint are left out. Try it:

    saved_model_cli show --all --dir export/1
    saved_model_cli run --dir export/1 --tag_set serve \
        --signature_def serving_default --input_exprs \
        'input_ids=[[101,2769,102]];input_mask=[[1,1,1]];segment_ids=[[0,0,0]]'

    import tensorflow as tf
    serve = tf.saved_model.load("export/1").signatures["serving_default"]
    out = serve(input_ids=tf.constant([[101, 2769, 102]]),
                input_mask=tf.constant([[1, 1, 1]]),
                segment_ids=tf.constant([[0, 0, 0]]))
    out["pooled_output"]  # [1, H]

The directory is built in a hidden temporary sibling and renamed at the end,
so an interrupted export leaves nothing under `--output_dir`.
"""
import dataclasses
import os

from common import cli_options
from common.cli_options import UserError

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
EXTRA_ASSETS = "assets.extra"


@dataclasses.dataclass
class ExportSavedModelOptions:
    init_checkpoint: str = cli_options.required(
        "Checkpoint prefix, or a directory (its latest checkpoint; a fine-tuning output "
        "directory: the checkpoint in best/).")
    bert_config_file: str = cli_options.option(
        None, "The model's bert_config.json (default: the one beside the checkpoint).")
    output_dir: str = cli_options.required("Directory to write (appears complete or not at all).")
    overwrite: bool = cli_options.option(False, "Replace a non-empty output_dir.")
    vocab_file: str = cli_options.option(
        None, "The model's vocab.txt (default: the one beside the checkpoint; must equal it).")


def _build_serving_graph(config, num_labels, head="classifier"):
    """Placeholders -> outputs in the default graph; returns (inputs, outputs) dicts.

    head: "classifier" (probabilities) or "token_classifier" (tag_probabilities),
    used when num_labels > 0.
    """
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain.models import registry, task_heads  # pylint: disable=import-outside-toplevel

    inputs = {name: tf.placeholder(tf.int32, [None, None], name=name) for name in INPUT_NAMES}
    model = registry.create_encoder(config, False, inputs["input_ids"],
                                    input_mask=inputs["input_mask"],
                                    token_type_ids=inputs["segment_ids"])
    outputs = {}
    if num_labels and head == "token_classifier":
        _, probabilities = task_heads.get_token_classifier_output(
            config, model.get_sequence_output(), num_labels, is_training=False)
        outputs["tag_probabilities"] = tf.identity(probabilities, name="tag_probabilities")
    elif num_labels:  # the fine-tuned classifier's PREDICT graph
        _, probabilities = task_heads.get_classifier_output(config, model.get_pooled_output(),
                                                            num_labels, is_training=False)
        outputs["probabilities"] = tf.identity(probabilities, name="probabilities")
    outputs["pooled_output"] = tf.identity(model.get_pooled_output(), name="pooled_output")
    outputs["sequence_output"] = tf.identity(model.get_sequence_output(),
                                             name="sequence_output")
    return inputs, outputs


def _restore_map(checkpoint, shapes, variables):
    """{checkpoint name: variable}, or UserError naming what does not fit.

    shapes: {name: shape} of the checkpoint's tensors.
    """
    from pretrain.checkpoints import checkpoint_loading  # pylint: disable=import-outside-toplevel

    names = {variable.op.name: variable for variable in variables}
    missing = sorted(name for name in names if name not in shapes)
    mismatched = ["%s: config %s, checkpoint %s" % (name, variable.shape.as_list(), shapes[name])
                  for name, variable in sorted(names.items())
                  if name in shapes and variable.shape.as_list() != list(shapes[name])]
    if mismatched:
        raise UserError(
            "--bert_config_file does not fit checkpoint %s: %d shape mismatch(es), e.g. %s; "
            "use the bert_config.json the checkpoint was trained with"
            % (checkpoint, len(mismatched), "; ".join(mismatched[:2])))
    if missing:
        hint = checkpoint_loading._layout_hint(  # pylint: disable=protected-access
            missing, set(shapes))
        raise UserError(
            "checkpoint %s lacks %d of the %d variables the serving graph needs, e.g. %s. %s"
            % (checkpoint, len(missing), len(names), ", ".join(missing[:3]),
               hint or "Check --bert_config_file and --init_checkpoint.")).strip()
    return names


def _write_saved_model(checkpoint, config, export_dir, task=None, task_file=None):
    """Builds the serving graph, restores it from `checkpoint`, saves into export_dir.

    Returns (names of the saved variables, head scope or None, num_labels or 0).
    """
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain.checkpoints import checkpoint_assets  # pylint: disable=import-outside-toplevel
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    pooler_scope = registry.family_of(config).pooler_scope
    shapes = dict(tf.train.list_variables(checkpoint))
    head, num_labels = checkpoint_assets.head_of_checkpoint(task, shapes, checkpoint, task_file)
    with tf.Graph().as_default() as graph:
        inputs, outputs = _build_serving_graph(config, num_labels, head)
        # A model imported from a *ForMaskedLM has no pooler: serve sequence_output only.
        # ELECTRA's pooled_output is the [CLS] state, with no variables of its own.
        with_pooler = (head == "classifier"
                       or any(name.startswith(pooler_scope) for name in shapes)
                       or not any(v.op.name.startswith(pooler_scope)
                                  for v in tf.global_variables()))
        if not with_pooler:
            print("checkpoint %s has no pooler (%s*): the signature leaves pooled_output out"
                  % (checkpoint, pooler_scope))
            del outputs["pooled_output"]
        unused = [v for v in tf.global_variables()
                  if not with_pooler and v.op.name.startswith(pooler_scope)]
        restore_map = _restore_map(checkpoint, shapes, [
            v for v in tf.global_variables()
            if with_pooler or not v.op.name.startswith(pooler_scope)])
        signature = tf.saved_model.signature_def_utils.predict_signature_def(inputs, outputs)
        with tf.Session(graph=graph) as session:
            session.run(tf.variables_initializer(unused))  # saved, but no output reads them
            tf.train.Saver(restore_map).restore(session, checkpoint)
            builder = tf.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(
                session, [tf.saved_model.tag_constants.SERVING],
                signature_def_map={"serving_default": signature}, strip_default_attrs=True)
            builder.save()
    return sorted(restore_map), head, num_labels


def export_saved_model(init_checkpoint, bert_config_file=None, output_dir=None, overwrite=False,
                       vocab_file=None):
    """Writes the SavedModel described in the module docstring; returns output_dir."""
    from pretrain.checkpoints import checkpoint_assets  # pylint: disable=import-outside-toplevel
    from pretrain.interop import hf_files  # pylint: disable=import-outside-toplevel
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    from pretrain.models.config import ConfigError  # pylint: disable=import-outside-toplevel

    if not output_dir:
        raise UserError("--output_dir is required")
    assets = checkpoint_assets.resolve(init_checkpoint, vocab_file, bert_config_file)
    checkpoint = assets.checkpoint
    if not assets.config_file:
        raise checkpoint_assets.missing_file_error("model config", checkpoint_assets.CONFIG_NAME,
                                                   "--bert_config_file", init_checkpoint,
                                                   checkpoint)
    try:
        config = registry.read_config(assets.config_file)
    except ConfigError as err:
        raise UserError("--bert_config_file: %s" % err) from None
    if getattr(config, "layer_norm_cond_size", None) is not None:
        raise UserError("--bert_config_file: layer_norm_cond_size (conditional LayerNorm) is "
                        "not supported: the SavedModel's signature has no condition input")
    output_dir = os.path.abspath(os.path.expanduser(str(output_dir)))
    if os.path.abspath(checkpoint).startswith(output_dir + os.sep):
        raise UserError("--output_dir %s holds the checkpoint %s; choose another directory"
                        % (output_dir, checkpoint))
    with hf_files.output_directory(output_dir, overwrite) as temporary:
        saved, head, num_labels = _write_saved_model(checkpoint, config, temporary, assets.task,
                                                     assets.task_file)
        if assets.task or assets.vocab_file or assets.spm_model_file:
            checkpoint_assets.write_assets(os.path.join(temporary, EXTRA_ASSETS),
                                           vocab_file=assets.vocab_file, task=assets.task,
                                           spm_model_file=assets.spm_model_file)
    print("wrote %s: %d variables from %s (config: %s, vocab: %s)%s" % (
        output_dir, len(saved), checkpoint, assets.config_source, assets.vocab_source,
        ", %s with %d labels %s" % ("token classifier" if head == "token_classifier"
                                    else "classifier", num_labels,
                                    assets.labels or "0..%d" % (num_labels - 1))
        if num_labels else ""))
    return output_dir


def _run(options):
    export_saved_model(options.init_checkpoint, options.bert_config_file,
                       options.output_dir, options.overwrite, options.vocab_file)


def main(argv=None):
    cli_options.run_main(ExportSavedModelOptions, _run, argv)


if __name__ == "__main__":
    main()
