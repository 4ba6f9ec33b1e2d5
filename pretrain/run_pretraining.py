"""Pretraining CLI: `python -m pretrain.run_pretraining` (google-research/bert's flag names).

    python -m pretrain.run_pretraining --bert_config_file=configs/demo_tiny_bert.json \
        --input_file='output/demo/data/*.tfrecord' --output_dir=output/demo/pretrain \
        --do_train --do_eval --train_batch_size=32 --num_train_steps=300

Rerunning with the same --output_dir resumes from the last checkpoint (global
step and optimizer state). From Python: `run({"bert_config_file": ..., ...})`.
"""
import json
import os
import types

import tensorflow.compat.v1 as tf
from absl import flags, logging

from data_gen import cli_options
from pretrain import data_checks, input_pipeline, mixed_precision, modeling
from pretrain import pretraining_model_fn, training_hooks
from pretrain import strategy as strategy_lib

# (name, default, help). The type of the default picks the absl flag type.
FLAG_TABLE = [
    ("bert_config_file", None, "Model config JSON (bert_config.json format)."),
    ("input_file", None, "Comma-separated TFRecord globs for training (and eval by default)."),
    ("eval_input_file", None, "Comma-separated TFRecord globs for --do_eval (default: --input_file)."),
    ("output_dir", None, "Checkpoints, summaries and eval_results.txt go here."),
    ("init_checkpoint", None, "Initial weights (weights only; optimizer state starts fresh)."),
    ("max_seq_length", 128, "Sequence length of the data (must equal the data's)."),
    ("max_predictions_per_seq", 20, "Masked positions per sequence (must equal the data's)."),
    ("do_train", False, "Train."),
    ("do_eval", False, "Evaluate on the eval input, writing eval_results.txt."),
    ("train_batch_size", 32, "GLOBAL training batch per micro-step (split across replicas)."),
    ("eval_batch_size", 8, "Eval batch."),
    ("learning_rate", 5e-5, "Peak learning rate (after warmup)."),
    ("num_train_steps", 100000, "Optimizer updates to train for (total, across resumes)."),
    ("num_warmup_steps", 10000, "Linear warmup updates."),
    ("save_checkpoints_steps", 1000, "Save a checkpoint every this many updates."),
    ("iterations_per_loop", 1000, "TPU: steps per TPUEstimator host loop."),
    ("max_eval_steps", 100, "Maximum eval batches."),
    ("use_tpu", False, "Train on TPU (implies --strategy=tpu)."),
    ("tpu_name", None, "Cloud TPU name or grpc:// address."),
    ("tpu_zone", None, "GCE zone of the TPU (optional)."),
    ("gcp_project", None, "GCP project of the TPU (optional)."),
    ("master", None, "Unused (kept for google-research/bert scripts)."),
    ("num_tpu_cores", 8, "TPU cores (shards)."),
    ("strategy", "auto", "auto|cpu|gpu|mirrored|multi_worker|tpu."),
    ("optimizer", "adamw", "adamw|lamb."),
    ("poly_power", 1.0, "Power of the polynomial learning-rate decay."),
    ("weight_decay_rate", 0.01, "Decoupled weight decay (not on LayerNorm and bias)."),
    ("gradient_accumulation_steps", 1, "Micro-batches per optimizer update."),
    ("precision", "auto", "fp32|fp16|bf16; auto = bf16 on TPU, else fp32."),
    ("use_xla", False, "Enable XLA JIT compilation."),
    ("keep_checkpoint_max", 5, "Checkpoints to keep."),
    ("log_every_n_steps", 100, "Log and write summaries every this many steps."),
    ("sentence_head", "auto", "auto|true|false: train the SOP/NSP head (auto: from the data's "
                              "metadata; roberta data -> off; no metadata -> on)."),
    ("compression", "auto", "auto|none|gzip for the input TFRecords (auto: sidecar/extension)."),
    ("num_cpu_threads", 4, "Parallel file readers."),
    ("shuffle_buffer", 1000, "Training records shuffle buffer (0: files shuffled only)."),
    ("random_seed", None, "Graph-level seed (also makes the input order deterministic)."),
]


def define_flags():
    for name, default, help_text in FLAG_TABLE:
        if name in flags.FLAGS:
            continue
        if isinstance(default, bool):
            flags.DEFINE_bool(name, default, help_text)
        elif isinstance(default, int) or name in ("random_seed",):
            flags.DEFINE_integer(name, default, help_text)
        elif isinstance(default, float):
            flags.DEFINE_float(name, default, help_text)
        else:
            flags.DEFINE_string(name, default, help_text)


def options_from(values):
    """Namespace of all options: FLAG_TABLE defaults overlaid with `values`."""
    known = {name: default for name, default, _ in FLAG_TABLE}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {sorted(known)}")
    known.update(values)
    return types.SimpleNamespace(**known)


def _parse_bool_choice(value, flag):
    text = str(value).lower()
    if text == "auto":
        return None
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"--{flag}={value!r} must be auto, true or false")


def _validate(opts):
    for name in ("bert_config_file", "output_dir", "input_file"):
        if not getattr(opts, name) and (name != "input_file" or opts.do_train):
            raise ValueError(f"--{name} is required")
    if not opts.do_train and not opts.do_eval:
        raise ValueError("nothing to do: give --do_train and/or --do_eval")
    if opts.do_eval and not (opts.eval_input_file or opts.input_file):
        raise ValueError("--do_eval needs --eval_input_file or --input_file")
    for name in ("train_batch_size", "eval_batch_size", "num_train_steps",
                 "gradient_accumulation_steps", "save_checkpoints_steps"):
        if int(getattr(opts, name)) < 1:
            raise ValueError(f"--{name} must be >= 1, got {getattr(opts, name)}")


def run(values):
    """Runs training and/or eval from a dict of options; returns a result dict.

    Result: {"strategy", "global_step", "eval_results" (dict or None),
    "sentence_head", "precision"}.
    """
    opts = options_from(values)
    _validate(opts)
    config = modeling.BertConfig.from_json_file(opts.bert_config_file)
    strategy_name = strategy_lib.resolve_strategy(opts.strategy, use_tpu=opts.use_tpu)
    # Before anything runs eagerly (the data checks do): MultiWorkerMirrored
    # must configure collective ops before the eager context starts.
    distribution = (None if strategy_name == "tpu"
                    else strategy_lib.make_distribution_strategy(strategy_name))
    precision = opts.precision
    if precision == "auto":
        precision = "bf16" if strategy_name == "tpu" else "fp32"
    mixed_precision.compute_dtype(precision)  # validates the name
    eval_input = opts.eval_input_file or opts.input_file
    if strategy_name == "tpu":
        if opts.use_tpu and not opts.tpu_name:
            raise ValueError("--use_tpu needs --tpu_name (the Cloud TPU name or grpc:// "
                             "address; --tpu_zone/--gcp_project if it is not in the default "
                             "zone/project)")
        strategy_lib.check_tpu_paths(input_file=opts.input_file if opts.do_train else None,
                                     eval_input_file=eval_input if opts.do_eval else None,
                                     output_dir=opts.output_dir,
                                     init_checkpoint=opts.init_checkpoint)
    compression = None if opts.compression == "auto" else opts.compression
    head_flag = _parse_bool_choice(opts.sentence_head, "sentence_head")

    metas = []
    checked = {}
    for enabled, pattern in ((opts.do_train, opts.input_file), (opts.do_eval, eval_input)):
        if enabled and pattern not in checked:
            files, file_metas = data_checks.check_input_data(
                pattern, opts.max_seq_length, opts.max_predictions_per_seq, config,
                use_sentence_head=head_flag, compression=compression)
            checked[pattern] = files
            metas.extend(file_metas)
    use_sentence_head = head_flag
    if use_sentence_head is None:
        task = data_checks.infer_sentence_task(metas)
        use_sentence_head = task != "none"
        logging.info("sentence head %s (data sentence_task=%s)",
                     "on" if use_sentence_head else "off", task or "unknown")

    k = int(opts.gradient_accumulation_steps)
    tf.io.gfile.makedirs(opts.output_dir)
    with tf.io.gfile.GFile(os.path.join(opts.output_dir, "bert_config.json"), "w") as writer:
        writer.write(config.to_json_string())
    run_config = strategy_lib.make_run_config(
        strategy_name, opts.output_dir, save_checkpoints_steps=opts.save_checkpoints_steps * k,
        keep_checkpoint_max=opts.keep_checkpoint_max, log_step_count_steps=opts.log_every_n_steps,
        iterations_per_loop=opts.iterations_per_loop, tpu_name=opts.tpu_name,
        tpu_zone=opts.tpu_zone, gcp_project=opts.gcp_project, num_tpu_cores=opts.num_tpu_cores,
        use_xla=opts.use_xla, tf_random_seed=opts.random_seed,
        save_summary_steps=opts.log_every_n_steps, distribution=distribution)
    model_fn = pretraining_model_fn.model_fn_builder(
        config, init_checkpoint=opts.init_checkpoint, learning_rate=opts.learning_rate,
        num_train_steps=opts.num_train_steps, num_warmup_steps=opts.num_warmup_steps,
        use_one_hot_embeddings=strategy_name == "tpu", optimizer=opts.optimizer,
        poly_power=opts.poly_power, weight_decay_rate=opts.weight_decay_rate,
        gradient_accumulation_steps=k, precision=precision,
        use_sentence_head=use_sentence_head)
    estimator = strategy_lib.build_estimator(
        strategy_name, model_fn, run_config, train_batch_size=opts.train_batch_size,
        eval_batch_size=opts.eval_batch_size, use_tpu=opts.use_tpu)
    logging.info("strategy=%s replicas=%s precision=%s optimizer=%s accumulation=%d",
                 strategy_name, estimator.params.get("num_replicas"), precision, opts.optimizer, k)

    def make_input_fn(pattern, is_training):
        return input_pipeline.input_fn_builder(
            checked[pattern], opts.max_seq_length, opts.max_predictions_per_seq, is_training,
            num_cpu_threads=opts.num_cpu_threads, compression=compression,
            shuffle_buffer=opts.shuffle_buffer, seed=opts.random_seed)

    result = {"strategy": strategy_name, "precision": precision,
              "sentence_head": use_sentence_head, "eval_results": None}
    if opts.do_train:
        train_input_fn = make_input_fn(opts.input_file, True)
        max_steps = opts.num_train_steps * k
        hooks = [] if opts.use_tpu else [training_hooks.PretrainingLoggingHook(
            every_n_steps=opts.log_every_n_steps, examples_per_step=opts.train_batch_size,
            last_step=max_steps, output_dir=opts.output_dir, gradient_accumulation_steps=k)]
        if strategy_name == "multi_worker":
            eval_fn = make_input_fn(eval_input, False) if opts.do_eval else train_input_fn
            tf.estimator.train_and_evaluate(
                estimator, tf.estimator.TrainSpec(train_input_fn, max_steps=max_steps, hooks=hooks),
                tf.estimator.EvalSpec(eval_fn, steps=1, start_delay_secs=0, throttle_secs=0))
        else:
            estimator.train(input_fn=train_input_fn, max_steps=max_steps, hooks=hooks)
    if opts.do_eval:
        eval_input_fn = make_input_fn(eval_input, False)
        eval_results = estimator.evaluate(input_fn=eval_input_fn, steps=opts.max_eval_steps)
        write_eval_results(opts.output_dir, eval_results)
        result["eval_results"] = {k_: _plain(v) for k_, v in eval_results.items()}
    result["global_step"] = int(estimator.get_variable_value("global_step"))
    return result


def _plain(value):
    try:
        return value.item()
    except AttributeError:
        return value


def write_eval_results(output_dir, results):
    """eval_results.txt: one `key = value` line per metric, sorted (Google's format)."""
    path = os.path.join(output_dir, "eval_results.txt")
    with tf.io.gfile.GFile(path, "w") as writer:
        logging.info("***** Eval results (%s) *****", path)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
            writer.write(f"{key} = {results[key]}\n")
    return path


def main(argv=None):
    """Console-script entry (`zh-run-pretraining`) and `python -m` entry."""
    define_flags()

    def _main(_argv):
        logging.set_verbosity(logging.INFO)
        # Estimator's TF1 API prints a deprecation notice per class; they drown the logs.
        from tensorflow.python.util import deprecation  # pylint: disable=import-outside-toplevel
        deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
        values = {name: getattr(flags.FLAGS, name) for name, _, _ in FLAG_TABLE}
        try:
            result = run(values)
        except (ValueError, data_checks.DataCheckError, modeling.ConfigError) as err:
            raise SystemExit(f"error: {err}") from None
        logging.info("done: %s", json.dumps(result, default=str))

    cli_options.run_app(_main, argv, flag_module=__name__)


if __name__ == "__main__":
    main()
