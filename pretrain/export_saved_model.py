r"""Export a checkpoint as a TF Serving SavedModel (TF1 graph, tag `serve`).

    python -m pretrain.export_saved_model --init_checkpoint=OUT/model.ckpt-10000 \
        --bert_config_file=bert_config.json --output_dir=export/1 [--overwrite]

Signature `serving_default` (plain tensors, no tf.Example parsing):
  inputs   input_ids, input_mask, segment_ids   int32 [B, S]
           (any batch B, any length S <= max_position_embeddings, or its square with
           hierarchical_position)
  outputs  pooled_output    float32 [B, H]
           sequence_output  float32 [B, S, H]
           probabilities    float32 [B, num_labels]  (only for a checkpoint
           holding a fine-tuned classifier: classifier/output_weights and
           classifier/output_bias, pretrain.task_heads.get_classifier_output)

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
CLASSIFIER_WEIGHTS = "classifier/output_weights"
POOLER_SCOPE = "bert/pooler/"


@dataclasses.dataclass
class ExportSavedModelOptions:
    init_checkpoint: str = cli_options.required(
        "Checkpoint prefix, or a directory (its latest checkpoint).")
    bert_config_file: str = cli_options.required("The model's bert_config.json.")
    output_dir: str = cli_options.required("Directory to write (appears complete or not at all).")
    overwrite: bool = cli_options.option(False, "Replace a non-empty output_dir.")


def _build_serving_graph(config, num_labels, with_pooled_output=True):
    """Placeholders -> outputs in the default graph; returns (inputs, outputs) dicts."""
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain import modeling, task_heads  # pylint: disable=import-outside-toplevel

    inputs = {name: tf.placeholder(tf.int32, [None, None], name=name) for name in INPUT_NAMES}
    model = modeling.create_model(config, False, inputs["input_ids"],
                                  input_mask=inputs["input_mask"],
                                  token_type_ids=inputs["segment_ids"])
    outputs = {}
    if num_labels:  # the fine-tuned classifier's PREDICT graph (finetune/classifier.py)
        _, probabilities = task_heads.get_classifier_output(config, model.get_pooled_output(),
                                                       num_labels, is_training=False)
        outputs["probabilities"] = tf.identity(probabilities, name="probabilities")
    if with_pooled_output:
        outputs["pooled_output"] = tf.identity(model.get_pooled_output(), name="pooled_output")
    outputs["sequence_output"] = tf.identity(model.get_sequence_output(),
                                             name="sequence_output")
    return inputs, outputs


def _restore_map(checkpoint, shapes, variables):
    """{checkpoint name: variable}, or UserError naming what does not fit.

    shapes: {name: shape} of the checkpoint's tensors.
    """
    from pretrain import checkpoint_loading  # pylint: disable=import-outside-toplevel

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


def _write_saved_model(checkpoint, config, export_dir):
    """Builds the serving graph, restores it from `checkpoint`, saves into export_dir.

    Returns (names of the saved variables, num_labels or 0 for an encoder).
    """
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    shapes = dict(tf.train.list_variables(checkpoint))
    num_labels = shapes[CLASSIFIER_WEIGHTS][0] if CLASSIFIER_WEIGHTS in shapes else 0
    # A model imported from a *ForMaskedLM has no pooler: serve sequence_output only.
    with_pooler = num_labels > 0 or any(name.startswith(POOLER_SCOPE) for name in shapes)
    if not with_pooler:
        print("checkpoint %s has no pooler (%s*): the signature leaves pooled_output out"
              % (checkpoint, POOLER_SCOPE))
    with tf.Graph().as_default() as graph:
        inputs, outputs = _build_serving_graph(config, num_labels, with_pooler)
        unused = [v for v in tf.global_variables()
                  if not with_pooler and v.op.name.startswith(POOLER_SCOPE)]
        restore_map = _restore_map(checkpoint, shapes, [
            v for v in tf.global_variables()
            if with_pooler or not v.op.name.startswith(POOLER_SCOPE)])
        signature = tf.saved_model.signature_def_utils.predict_signature_def(inputs, outputs)
        with tf.Session(graph=graph) as session:
            session.run(tf.variables_initializer(unused))  # saved, but no output reads them
            tf.train.Saver(restore_map).restore(session, checkpoint)
            builder = tf.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(
                session, [tf.saved_model.tag_constants.SERVING],
                signature_def_map={"serving_default": signature}, strip_default_attrs=True)
            builder.save()
    return sorted(restore_map), num_labels


def export_saved_model(init_checkpoint, bert_config_file, output_dir, overwrite=False):
    """Writes the SavedModel described in the module docstring; returns output_dir."""
    from pretrain import checkpoint_loading, hf_files  # pylint: disable=import-outside-toplevel
    from pretrain.config import BertConfig, ConfigError  # pylint: disable=import-outside-toplevel

    try:
        checkpoint = checkpoint_loading.resolve_checkpoint(init_checkpoint)
    except FileNotFoundError as err:
        raise UserError("--init_checkpoint: %s" % err) from None
    try:
        config = BertConfig.from_json_file(bert_config_file)
    except ConfigError as err:
        raise UserError("--bert_config_file: %s" % err) from None
    if config.layer_norm_cond_size is not None:
        raise UserError("--bert_config_file: layer_norm_cond_size (conditional LayerNorm) is "
                        "not supported: the SavedModel's signature has no condition input")
    output_dir = os.path.abspath(os.path.expanduser(str(output_dir)))
    if os.path.abspath(checkpoint).startswith(output_dir + os.sep):
        raise UserError("--output_dir %s holds the checkpoint %s; choose another directory"
                        % (output_dir, checkpoint))
    with hf_files.output_directory(output_dir, overwrite) as temporary:
        saved, num_labels = _write_saved_model(checkpoint, config, temporary)
    print("wrote %s: %d variables from %s%s" % (
        output_dir, len(saved), checkpoint,
        ", classifier with %d labels" % num_labels if num_labels else ""))
    return output_dir


def _run(options):
    export_saved_model(options.init_checkpoint, options.bert_config_file,
                       options.output_dir, options.overwrite)


def main(argv=None):
    cli_options.run_main(ExportSavedModelOptions, _run, argv)


if __name__ == "__main__":
    main()
