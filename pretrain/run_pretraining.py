"""Pretraining CLI: `python -m pretrain.run_pretraining` (google-research/bert's flag names).

    python -m pretrain.run_pretraining --bert_config_file=configs/demo_tiny_bert.json \
        --input_file='output/demo/data/*.tfrecord' --output_dir=output/demo/pretrain \
        --do_train --do_eval --train_batch_size=32 --num_train_steps=300

Rerunning with the same --output_dir resumes from the last checkpoint (global
step and optimizer state). From Python: `run({"bert_config_file": ..., ...})`.

--output_dir gets bert_config.json and vocab.txt beside the checkpoints
(pretrain.checkpoints.checkpoint_assets), so later stages need only --init_checkpoint.
vocab.txt is --vocab_file, else the vocab the data's sidecars name (when that
file is here and unchanged: its sha256 is the sidecar's vocab_sha256), else
the --init_checkpoint's. A --vocab_file or an --init_checkpoint's vocab.txt
that is not the data's vocab is refused before training, as is data made
with two vocabs.
"""
import collections
import dataclasses
import json
import os

import tensorflow.compat.v1 as tf
from absl import logging

from common import cli_options
from common.cli_options import UserError
from common.file_utils import write_text_atomically
from pretrain import pretraining_options
from pretrain.checkpoints import checkpoint_assets, checkpoint_loading, vocab_choice
from pretrain.models import registry
from pretrain.models.config import ConfigError
from pretrain.models.family import RecordInputError
from pretrain.training import (continued_eval, data_checks, input_pipeline, learning_check,
                               input_state, mixed_precision, plateau_checkpoint,
                               pretraining_model_fn, train_time_masking, training_hooks)
from pretrain.training import strategy as strategy_lib

# TensorFlow's words for a failed write (its error classes vary by cause and file system).
OUTPUT_WRITE_FAILURES = ("No space left on device", "File too large", "Disk quota exceeded",
                         "Read-only file system", "Permission denied")


def run(values):
    """Runs training and/or eval from a dict of options; returns a result dict.

    Result: {"strategy", "training_loop", "global_step", "eval_results" (dict or None),
    "sentence_head", "span_boundary_objective", "precision", and with an eval
    "not_learned": pretrain.training.learning_check's warning lines, empty when every head
    is clearly above its baseline}.
    """
    opts = pretraining_options.options_from(values)
    opts = pretraining_options.validate(opts)
    opts, assets, config = _resolve_model(opts)
    opts, runtime = _resolve_runtime(opts)
    opts, data = _check_data(opts, config)
    vocab = _write_model_files(opts, config, assets, data.sidecars)
    opts, input_seed, params = _resume(opts, runtime, data)
    trainer, make_eval_trainer, make_input_fn = _build_trainers(opts, config, runtime, data,
                                                                input_seed, params)
    result = {"strategy": runtime.strategy, "training_loop": runtime.loop,
              "precision": runtime.precision, "sentence_head": data.use_sentence_head,
              "span_boundary_objective": opts.span_boundary_objective, "eval_results": None,
              "vocab_file": vocab, "config_file": opts.bert_config_file,
              "data_warnings": data.warnings if opts.do_eval else []}
    if opts.skip_corrupt_records:
        result["skipped_records"] = data_checks.account_for_damage(data.files, data.compression)
    _train_and_evaluate(opts, trainer, runtime, make_input_fn, result, make_eval_trainer, data)
    if result.get("global_step") is None:  # no training session ended in this process
        if tf.train.latest_checkpoint(opts.output_dir):
            result["global_step"] = int(trainer.get_variable_value("global_step"))
        else:  # --do_eval alone of an --init_checkpoint's weights: nothing saved here
            result["global_step"] = int(result["eval_results"]["global_step"])
    return result


def _resolve_model(opts):
    """(opts naming the config file and checkpoint found, their CheckpointAssets, the model
    config); refuses a config pretraining cannot train."""
    assets = checkpoint_assets.resolve(opts.init_checkpoint, opts.vocab_file,
                                       opts.bert_config_file)
    if not assets.config_file:
        raise UserError("--bert_config_file is required (or an --init_checkpoint with a "
                        f"{checkpoint_assets.CONFIG_NAME} beside it)")
    if assets.config_source == "checkpoint":
        logging.info("model config %s (beside --init_checkpoint)", assets.config_file)
    opts = dataclasses.replace(opts, bert_config_file=assets.config_file,
                               init_checkpoint=assets.checkpoint)
    config = registry.read_config(opts.bert_config_file)
    if getattr(config, "layer_norm_cond_size", None) is not None:
        raise UserError(f"--bert_config_file={opts.bert_config_file} sets layer_norm_cond_size "
                        "(conditional LayerNorm), but pretraining records carry no condition: "
                        "pretrain without it and add it to the config when fine-tuning")
    return opts, assets, config


Runtime = collections.namedtuple("Runtime", "strategy loop distribution precision tpu_cluster")


def _resolve_runtime(opts):
    """(opts, Runtime): the strategy, the training loop, the tf.distribute strategy, the
    precision and, for a TPU, its cluster (found before any data is read)."""
    strategy_name = strategy_lib.resolve_strategy(opts.strategy, use_tpu=opts.use_tpu)
    loop = strategy_lib.resolve_training_loop(opts.training_loop, strategy_name)
    # Before anything runs eagerly (the data checks do): MultiWorkerMirrored
    # must configure collective ops before the eager context starts.
    distribution = (None if strategy_name == "tpu"
                    else strategy_lib.make_distribution_strategy(strategy_name))
    precision = opts.precision
    if precision == "auto":
        precision = "bf16" if strategy_name == "tpu" else "fp32"
    mixed_precision.compute_dtype(precision)  # validates the name
    tpu_cluster = None
    if strategy_name == "tpu":
        # --strategy=tpu and --use_tpu are one choice: TPUEstimator(use_tpu=True) on the TPU
        # named by --tpu_name or the environment (refused without one).
        opts = dataclasses.replace(opts, use_tpu=True,
                                   tpu_name=strategy_lib.resolve_tpu_name(opts.tpu_name))
        strategy_lib.check_tpu_paths(
            input_file=opts.input_file if opts.do_train else None,
            eval_input_file=(opts.eval_input_file or opts.input_file) if opts.do_eval else None,
            output_dir=opts.output_dir, init_checkpoint=opts.init_checkpoint)
        # Before the data checks read gs://: a TPU that cannot be found fails fast.
        tpu_cluster = strategy_lib.tpu_cluster_resolver(opts.tpu_name, opts.tpu_zone,
                                                        opts.gcp_project)
    return opts, Runtime(strategy_name, loop, distribution, precision, tpu_cluster)


def _resume(opts, runtime, data):
    """(opts with the run's --random_seed, the training input's seed, the trainer's params)
    of pretrain.training.input_state.resume. TPUEstimator and the Estimator's distributed
    path save neither seed nor position: their seed is --random_seed. A --resume_from
    checkpoint is checked, then copied in (pretrain.training.plateau_checkpoint)."""
    if not opts.do_train or runtime.strategy == "tpu" or (
            runtime.loop == "estimator" and runtime.distribution is not None):
        plateau_checkpoint.start_from(opts.resume_from, opts.output_dir)
        return opts, opts.random_seed, {}
    setup = input_state.setup_json(
        {"--train_batch_size": opts.train_batch_size, "--shuffle_buffer": opts.shuffle_buffer,
         "--input_file": data.checked[opts.input_file],
         "--strategy's replicas": strategy_lib.num_replicas(runtime.distribution)},
        {name: getattr(opts, name[2:]) for name in input_state.SCHEDULE_FLAGS
         + tuple("--" + flag for flag in train_time_masking.FLAGS)})
    try:
        seed, input_seed, params = plateau_checkpoint.start_from(
            opts.resume_from, opts.output_dir, check=lambda model_dir: input_state.resume(
                model_dir, opts.random_seed, setup, runtime.distribution is None,
                opts.ignore_data_skip, opts.allow_schedule_change))
    except input_state.ResumeError as err:
        raise UserError(str(err)) from None
    return dataclasses.replace(opts, random_seed=seed), input_seed, params


RunData = collections.namedtuple(
    "RunData", "checked sidecars files compression eval_input extra_evals warnings "
               "use_sentence_head reader prepared heads_line")


def _check_data(opts, config):
    """(opts with the data's lengths, RunData): every input checked against the model and
    the heads (pretrain.training.data_checks), the sentence head decided, the eval's
    warnings, the family's record reader prepared."""
    compression = None if opts.compression == "auto" else opts.compression
    eval_input = opts.eval_input_file or opts.input_file
    head_flag = pretraining_options.parse_bool_choice(opts.sentence_head, "sentence_head")
    family = registry.family_of(config)
    if not family.sentence_and_span_heads:
        for flag, value in (("--sentence_head", head_flag is True),
                            ("--span_boundary_objective", opts.span_boundary_objective)):
            if value:
                raise UserError(f"{flag}: model_type {family.model_type!r} ({family.description}) "
                                "has no sentence or span boundary head; leave it off")
        head_flag = None  # any data: its sentence labels, if it has them, are not read

    opts = dataclasses.replace(opts, **data_checks.lengths_from_data(
        opts.input_file if opts.do_train else eval_input, max_seq_length=opts.max_seq_length,
        max_predictions_per_seq=opts.max_predictions_per_seq))
    extra_evals = continued_eval.parse_extra_evals(opts.extra_eval_input_file)
    if extra_evals and not opts.do_eval:
        raise UserError("--extra_eval_input_file needs --do_eval")
    patterns = [pattern for enabled, pattern in (
        (opts.do_train, opts.input_file), (opts.do_eval, eval_input),
        *((True, extra) for _, extra in extra_evals)) if enabled]
    opts, masking_reader = _masking_reader(opts, patterns, compression)
    metas, sidecars, checked = [], [], {}
    for pattern in patterns:
        if pattern not in checked:
            files, file_metas = data_checks.check_input_data(
                pattern, opts.max_seq_length, opts.max_predictions_per_seq, config,
                use_sentence_head=head_flag, compression=compression,
                span_boundary_objective=opts.span_boundary_objective,
                bert_config_file=opts.bert_config_file, record_reader=masking_reader)
            checked[pattern] = files
            metas.extend(file_metas)
            sidecars.extend(zip(files, file_metas))
    warnings = _eval_warnings(opts, checked, eval_input, extra_evals, dict(sidecars))
    use_sentence_head = head_flag
    if not family.sentence_and_span_heads:
        use_sentence_head = False
        task = data_checks.infer_sentence_task(metas)
        if task != "none":
            logging.info("model_type %s has no sentence head: the data's %s labels are not "
                         "read", family.model_type, task or "sentence")
    elif use_sentence_head is None:
        task = data_checks.infer_sentence_task(metas)
        use_sentence_head = task != "none"
        logging.info("sentence head %s (data sentence_task=%s)",
                     "on" if use_sentence_head else "off", task or "unknown")

    reader, prepared = masking_reader or family.record_reader, None
    if reader is not None:
        try:
            prepared, described = reader.prepare(sidecars, opts)
        except RecordInputError as err:
            raise data_checks.DataCheckError(str(err)) from None
        logging.info(described)
    for flag, readers in _record_reader_flags().items():
        if getattr(opts, flag) is not None and family.model_type not in readers:
            raise UserError(f"--{flag} is read by model_type {', '.join(readers)} only; "
                            f"model_type {family.model_type!r} does not use it")
    files = sorted({path for found in checked.values() for path in found})
    return opts, RunData(checked, sidecars, files, compression, eval_input, extra_evals,
                         warnings, use_sentence_head, reader, prepared, family.heads_line)


def _masking_reader(opts, patterns, compression):
    """(opts with the prediction slots, train_time_masking.RECORDS or None): whether the
    inputs are train-time-masked records, all of them or none, and the flags that fit."""
    unmasked = {pattern: data_checks.unmasked_inputs(pattern, compression)
                for pattern in dict.fromkeys(patterns)}
    if len(set(unmasked.values())) > 1:
        drawn = next(pattern for pattern, value in unmasked.items() if value)
        static = next(pattern for pattern, value in unmasked.items() if not value)
        raise UserError(f"{drawn} holds records to mask at train time but {static} holds "
                        "static masks: make every input of a run with the same data_gen "
                        "--train_time_masking setting")
    if not any(unmasked.values()):
        train_time_masking.refuse_flags_for_static(opts)
        return opts, None
    if opts.span_boundary_objective:
        raise UserError("--span_boundary_objective needs the span boundaries data_gen "
                        "--masking=span draws when the data is made; records made with "
                        "--train_time_masking have none: drop the flag or remake the data")
    if opts.max_predictions_per_seq is None:
        opts = dataclasses.replace(opts,
                                   max_predictions_per_seq=train_time_masking.slots_default(opts))
    return opts, train_time_masking.RECORDS


def _eval_warnings(opts, checked, eval_input, extra_evals, by_file):
    """What the evals measure (continued_eval.data_warnings), logged; [] without --do_eval."""
    if not opts.do_eval:
        return []
    warnings = continued_eval.data_warnings(checked.get(opts.input_file, []),
                                            checked[eval_input], by_file)
    for _, extra in extra_evals:
        warnings += [f"--extra_eval_input_file={extra}: {line}" for line in
                     continued_eval.data_warnings(checked.get(opts.input_file, []),
                                                  checked[extra], by_file)]
    for line in warnings:
        logging.warning("run_pretraining: %s", line)
    return warnings


def _write_model_files(opts, config, assets, sidecars):
    """bert_config.json and the vocab (vocab_choice.pretraining_vocab) into --output_dir, so
    later stages find them beside the checkpoints; returns the vocab copied (or None)."""
    vocab, no_vocab_reason = vocab_choice.pretraining_vocab(opts, assets, sidecars)
    try:
        tf.io.gfile.makedirs(opts.output_dir)
        with tf.io.gfile.GFile(os.path.join(opts.output_dir, checkpoint_assets.CONFIG_NAME),
                               "w") as writer:
            writer.write(config.to_json_string())
        if vocab:
            name = vocab_choice.vocab_asset_name(sidecars)
            checkpoint_assets.write_assets(opts.output_dir, **{
                "spm_model_file" if name == checkpoint_assets.SPM_NAME else "vocab_file": vocab})
            logging.info("%s in --output_dir from %s", name, vocab)
        else:
            logging.warning("no vocab.txt written to --output_dir=%s: %s", opts.output_dir,
                            no_vocab_reason)
    except tf.errors.OpError as err:
        raise UserError(f"--output_dir={opts.output_dir}: cannot write there ({err.message}); "
                        "choose a writable directory") from None
    return vocab


def _build_trainers(opts, config, runtime, data, input_seed, params):
    """(the trainer, make_eval_trainer(model_dir), make_input_fn(pattern, is_training)):
    the model function, run settings and trainer (with `params`) of
    pretrain.training.strategy; training input is shuffled with `input_seed`."""
    k = int(opts.gradient_accumulation_steps)
    run_config = strategy_lib.make_run_config(
        runtime.strategy, opts.output_dir, save_checkpoints_steps=opts.save_checkpoints_steps * k,
        keep_checkpoint_max=opts.keep_checkpoint_max, log_step_count_steps=opts.log_every_n_steps,
        iterations_per_loop=opts.iterations_per_loop, tpu_cluster=runtime.tpu_cluster,
        num_tpu_cores=opts.num_tpu_cores, use_xla=opts.use_xla, tf_random_seed=opts.random_seed,
        save_summary_steps=opts.log_every_n_steps, distribution=runtime.distribution)
    model_fn = pretraining_model_fn.model_fn_builder(
        config, init_checkpoint=opts.init_checkpoint, learning_rate=opts.learning_rate,
        num_train_steps=opts.num_train_steps, num_warmup_steps=opts.num_warmup_steps,
        use_one_hot_embeddings=runtime.strategy == "tpu", optimizer=opts.optimizer,
        bias_correction=opts.adam_bias_correction,
        poly_power=opts.poly_power, weight_decay_rate=opts.weight_decay_rate,
        gradient_accumulation_steps=k, precision=runtime.precision,
        use_sentence_head=data.use_sentence_head,
        span_boundary_objective=opts.span_boundary_objective,
        ignore_invalid_weights=opts.ignore_invalid_weights,
        lr_scheduler=pretraining_options.lr_scheduler(opts))

    def make_trainer(settings):
        return strategy_lib.build_trainer(runtime.strategy, model_fn, settings, params=params,
                                          train_batch_size=opts.train_batch_size,
                                          eval_batch_size=opts.eval_batch_size,
                                          training_loop=runtime.loop)

    def make_eval_trainer(model_dir):
        """The trainer of an eval (continued_eval): seeded, over --output_dir or model_dir."""
        return make_trainer(run_config.replace(
            model_dir=model_dir or opts.output_dir,
            tf_random_seed=continued_eval.eval_seed(opts.random_seed)))

    def make_input_fn(pattern, is_training):
        return input_pipeline.input_fn_builder(
            data.checked[pattern], opts.max_seq_length, opts.max_predictions_per_seq,
            is_training, num_cpu_threads=opts.num_cpu_threads, compression=data.compression,
            shuffle_buffer=opts.shuffle_buffer,
            seed=input_seed if is_training else opts.random_seed,
            skip_corrupt_records=opts.skip_corrupt_records,
            span_boundaries=opts.span_boundary_objective, record_reader=data.reader,
            prepared=data.reader and data.reader.prepared_for(data.prepared, is_training))

    trainer = make_trainer(run_config)
    logging.info("strategy=%s training_loop=%s replicas=%s precision=%s optimizer=%s "
                 "accumulation=%d", runtime.strategy, runtime.loop,
                 trainer.params.get("num_replicas"), runtime.precision, opts.optimizer, k)
    return trainer, make_eval_trainer, make_input_fn


def _record_reader_flags():
    """{flag: model_types whose record reader takes it} (ModelFamily.record_input)."""
    readers = {}
    for name in registry.model_types():
        reader = registry.family(name).record_reader
        for flag in getattr(reader, "flags", ()):
            readers.setdefault(flag, []).append(name)
    return readers


def _train_and_evaluate(opts, trainer, runtime, make_input_fn, result, make_eval_trainer,
                        data):
    """trainer.train (the Estimator's train_and_evaluate for its multi_worker), then the evals
    of pretrain.training.continued_eval (the start's too, with --init_checkpoint); fills
    `result`. A corrupt input or a failed write stops with one line."""
    try:
        if opts.do_train:
            result["global_step"] = _train(opts, trainer, runtime, make_input_fn, data)
        if opts.do_eval:
            eval_sets = [("", data.eval_input)] + [(name + "/", pattern)
                                                   for name, pattern in data.extra_evals]
            eval_results = continued_eval.evaluate_all(
                make_eval_trainer, make_input_fn, eval_sets, opts.init_checkpoint,
                opts.max_eval_steps, continued_eval.scratch_parent(opts.output_dir))
            write_eval_results(opts.output_dir, eval_results)
            result["eval_results"] = {key: _plain(value) for key, value in eval_results.items()}
            result["not_learned"] = learning_check.not_learned_warnings(result["eval_results"])
            result["continuing"] = learning_check.continuing_warnings(result["eval_results"])
    except tf.errors.DataLossError as err:
        raise data_checks.DataCheckError(
            data_checks.describe_corrupt_input(data.files, data.compression, err)) from None
    except tf.errors.OpError as err:
        if not any(reason in err.message for reason in OUTPUT_WRITE_FAILURES):
            raise
        raise UserError(f"writing under --output_dir={opts.output_dir} failed: "
                        f"{err.message.splitlines()[0]}; free space or choose another "
                        "--output_dir (rerunning resumes from the last complete checkpoint)"
                        ) from None


def _train(opts, trainer, runtime, make_input_fn, data):
    """Trains to --num_train_steps; returns the global step this process's session ended at
    (None on TPU, when nothing was left to train, or when the input ran out)."""
    k = int(opts.gradient_accumulation_steps)
    train_input_fn = make_input_fn(opts.input_file, True)
    max_steps = opts.num_train_steps * k
    hooks = [] if opts.use_tpu else [training_hooks.PretrainingLoggingHook(
        every_n_steps=opts.log_every_n_steps, examples_per_step=opts.train_batch_size,
        last_step=max_steps, output_dir=opts.output_dir, gradient_accumulation_steps=k,
        heads_line=data.heads_line)]
    final_step = training_hooks.FinalStepHook()
    hooks += [] if opts.use_tpu else [final_step]
    hooks += plateau_checkpoint.saver_hooks(opts.output_dir, pretraining_options.lr_scheduler(
        opts), opts.num_train_steps, k, runtime.distribution, opts.use_tpu)
    if runtime.strategy == "multi_worker" and runtime.loop == "estimator":
        from pretrain.training import estimator_runtime  # pylint: disable=import-outside-toplevel
        eval_fn = make_input_fn(data.eval_input, False) if opts.do_eval else train_input_fn
        estimator_runtime.train_and_evaluate(trainer, train_input_fn, max_steps, hooks, eval_fn)
    else:
        trainer.train(input_fn=train_input_fn, max_steps=max_steps, hooks=hooks)
    return final_step.step


def _plain(value):
    try:
        return value.item()
    except AttributeError:
        return value


def write_eval_results(output_dir, results):
    """eval_results.txt: one `key = value` line per metric, sorted (Google's format)."""
    path = os.path.join(output_dir, "eval_results.txt")
    logging.info("***** Eval results (%s) *****", path)
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
    # whole or absent under its name (a kill; two workers each write their own temporary)
    write_text_atomically(path, [f"{key} = {results[key]}" for key in sorted(results)])
    return path


def _run_from_options(opts):
    # Estimator's TF1 API prints a deprecation notice per class; they drown the logs.
    from tensorflow.python.util import deprecation  # pylint: disable=import-outside-toplevel
    deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
    result = run(dataclasses.asdict(opts))
    logging.info("done: %s", json.dumps(result, default=str))
    for line in (result.get("not_learned") or []) + (result.get("continuing") or []):
        logging.warning("run_pretraining: %s", line)


def main(argv=None):
    """Console-script entry (`zh-run-pretraining`) and `python -m` entry."""
    cli_options.run_main(
        pretraining_options.PretrainingOptions, _run_from_options, argv,
        expected=(data_checks.DataCheckError, ConfigError,
                  checkpoint_loading.CheckpointMismatchError, training_hooks.NonFiniteLossError, tf.errors.PermissionDeniedError,
                  tf.errors.NotFoundError))


if __name__ == "__main__":
    main()
