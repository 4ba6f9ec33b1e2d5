r"""Fine-tune an encoder on any classification, sentence-pair or NER task.

    python -m finetune.run_finetune --task=classification \
        --train_file=chnsenticorp/train.tsv --dev_file=chnsenticorp/dev.tsv \
        --test_file=chnsenticorp/test.tsv --init_checkpoint=output/pretrain \
        --output_dir=runs/sentiment

Tasks (finetune.tasks): `classification` (one text), `pair` (two texts),
`ner` (a tag per character). Formats are detected from the files
(finetune.formats; `--input_format` overrides). Labels are any strings; their
set comes from the training file. The model config and vocab come from
beside `--init_checkpoint` when not given (pretrain.checkpoints.checkpoint_assets), and a
given vocab that differs from the checkpoint's is refused. An XLNet whose vocab is a
sentencepiece model (spiece.model beside it, or `--spm_model_file`; the optional spm
extra) is tokenised with it (data_gen.text.spm_tokenization.SpmFullTokenizer);
pretrain.checkpoints.vocab_choice says which of the two a run uses.

Trains for `--num_train_epochs`, scores dev after every `--eval_every_steps`
steps, keeps the best checkpoint by `--selection_metric` in OUTPUT_DIR/best/,
scores test with it, and writes into OUTPUT_DIR: results.json, eval_results.txt
(`key = value`), test_predictions.jsonl (one line per test example, input
order) and bert_config.json, vocab.txt (or spiece.model), task.json (also in best/), so that
export_hf / export_saved_model need only `--init_checkpoint=OUTPUT_DIR`.
`run(settings)` is the plain-Python entry (a dict of FinetuneOptions' names).
"""
import dataclasses
import json
import math
import os
import time

import tensorflow.compat.v1 as tf

from common import cli_options, model_limits
from common.cli_options import option
from common.file_utils import input_exists, write_json_atomically, write_text_atomically
from data_gen.tools import lcqmc_format
from finetune import features as records
from finetune import output_dir as output_dir_lib
from finetune import splits as splits_lib
from finetune import tasks, vocab_files
from finetune.best_checkpoint import (DevEvaluationListener, disk_bytes,
                                      remove_training_checkpoints)
from finetune.formats import DATA_EXTENSIONS
from finetune.model_fn import model_fn_builder
from finetune.progress import ProgressHook, TrainingClock
from finetune.tasks import layout as layout_lib
from pretrain.checkpoints import checkpoint_assets, checkpoint_loading, vocab_choice
from pretrain.models import registry
from pretrain.models.config import ConfigError
from pretrain.training import mixed_precision, optimizers
from pretrain.training import strategy as strategies

# Pretraining's strategies but the TPU (no TPU path for fine-tuning).
STRATEGIES = tuple(name for name in strategies.STRATEGIES if name != "tpu")
SPLITS = ("train", "dev", "test")
# Why a run collapses, most likely first (bench/finetune_parity.py and docs/experiments.md,
# "Fine-tuning parity with transformers").
COLLAPSE_ADVICE = (
    "its scores are not a result. Check that the starting checkpoint left the unigram "
    "plateau (python -m pretrain.training.learning_check --eval_results=<its "
    "eval_results.txt>): from a plateau the encoder gives the head nothing to learn from. "
    "Keep Adam's bias correction on (--adam_bias_correction, the default): without it the "
    "first few hundred updates are 2-3x the learning rate. Else lower --learning_rate")


@dataclasses.dataclass
class FinetuneSettings:
    """Data, model and training settings; shared with finetune.compare (one flag each)."""
    task: str = option("pair", "classification | pair | ner.", choices=tuple(tasks.TASKS))
    train_file: str = option("", "Training data (format detected; see --input_format).")
    dev_file: str = option("", "Dev data: chooses the best checkpoint.")
    test_file: str = option("", "Test data (optional; unlabelled rows are predicted only).")
    data_dir: str = option("", "Folder with train.*, dev.* and test.* (.txt .tsv .csv .json "
                               ".jsonl); used for the files not given by name.")
    input_format: str = option("", "tsv|csv|jsonl|lcqmc|conll|cluener (default: detected).")
    text_fields: str = option("", "Comma-separated text columns/keys (default text_a[,text_b]; "
                                  "CLUE JSON: sentence or sentence1,sentence2).")
    label_field: str = option("", "Label column/key (default label).")
    tag_scheme: str = option("", "NER: BIO|IOB2|BIOES|BMES (default: detected from train).")
    allow_unseen_labels: bool = option(False, "Score dev/test labels that training never saw "
                                              "as errors instead of stopping.")
    max_malformed_share: float = option(lcqmc_format.MAX_MALFORMED_SHARE, "LCQMC-format files: stop if more than this "
                                              "share of lines are malformed (they are dropped "
                                              "and counted below it).")
    selection_metric: str = option("", "Dev metric that picks the best checkpoint (default: "
                                       "accuracy; f1 for ner).")
    vocab_file: str = option(None, "Vocab; default: the vocab.txt beside --init_checkpoint.")
    spm_model_file: str = option(None, "A sentencepiece model (model_type "
                                       f"{vocab_choice.sentencepiece_families()}), instead of a "
                                       "vocab; default: the spiece.model beside "
                                       "--init_checkpoint.")
    bert_config_file: str = option(None, "Model config JSON (a path or a shipped config's "
                                         "name); default: the bert_config.json beside "
                                         "--init_checkpoint.")
    cache_dir: str = option(None, "Feature cache folder (default OUTPUT_DIR/feature_cache).")
    do_lower_case: bool = option(True, "Lower-case input (match the pretraining data).")
    max_seq_length: int = option(128, "Tokens per record incl. [CLS]/[SEP]; longer NER "
                                      "sentences are split into windows.")
    pad_to_max_length: bool = option(False, "Pad every batch to --max_seq_length; by default "
                                            "each is padded to its longest record (the "
                                            "results are the same, the work is not).")
    pad_to_multiple_of: int = option(1, "Round each batch's padded length up to a multiple "
                                        "of N (fewer distinct shapes; 1 = not rounded).")
    group_by_length: bool = option(False, "Training: sort each group of "
                                         f"{records.GROUP_BATCHES} batches by length, so that "
                                         "a batch holds similar lengths (transformers' "
                                         "group_by_length): faster on short texts, but off by "
                                         "default: where length goes with the label (ChnSentiCorp) "
                                         "it kept both ours and transformers' Trainer at chance. "
                                         "Dev and test are always scored longest first.")
    precision: str = option("fp32", "The encoder's compute type, as in pretraining: fp32, "
                                    "bf16 (native on CPUs with AMX/AVX512-BF16) or fp16 (with "
                                    "dynamic loss scaling); variables, heads and loss stay "
                                    "float32.", choices=tuple(mixed_precision.PRECISIONS))
    train_batch_size: int = option(32, "Global training batch size.")
    eval_batch_size: int = option(128, "Batch size for dev/test.")
    learning_rate: float = option(5e-5, "Peak AdamW learning rate.")
    num_train_epochs: float = option(3.0, "Epochs over the (limited) training set.")
    max_train_examples: int = option(0, "Use only the first N training examples (0 = all).")
    max_dev_examples: int = option(0, "Use only the first N dev examples (0 = all).")
    eval_every_steps: int = option(500, "Save and score dev every N steps.")
    warmup_proportion: float = option(0.1, "Fraction of steps with linear warmup.")
    adam_bias_correction: bool = option(True, optimizers.BIAS_CORRECTION_HELP)
    random_seed: int = option(12345, "Seed for initialisation, dropout, shuffling.")
    ignore_invalid_weights: bool = option(False, checkpoint_loading.IGNORE_INVALID_WEIGHTS_HELP)
    strategy: str = option("cpu", "Device strategy, as in pretraining: " + "|".join(STRATEGIES)
                           + ".")
    training_loop: str = option("auto", "What runs the model functions: session (the "
                                "toolkit's own loop, any TensorFlow 2.x; dev's predict graph "
                                "built once) or estimator (tf.estimator, TensorFlow <= 2.15); "
                                f"auto: ${strategies.TRAINING_LOOP_VARIABLE} when set, else "
                                "session.", choices=strategies.TRAINING_LOOPS)
    keep_checkpoint_max: int = option(2, "Recent checkpoints kept during training (best/ is "
                                         "separate).")
    keep_checkpoints: bool = option(False, "Keep the training checkpoints (with optimizer "
                                           "slots) after the run; by default only best/, "
                                           "weights only, stays.")
    log_every_n_steps: int = option(100, "Loss logging interval.")


@dataclasses.dataclass
class FinetuneOptions(FinetuneSettings):
    """The flags of `python -m finetune.run_finetune`."""
    init_checkpoint: str = option(None, "Checkpoint prefix or directory (its latest checkpoint; "
                                        "a fine-tuning output: its best); empty = random "
                                        "initialisation.")
    output_dir: str = cli_options.required("Where checkpoints, best/, results.json go.")
    overwrite_output_dir: bool = option(False, "Delete a previous run in --output_dir (an "
                                        "unfinished run of the same settings is otherwise "
                                        "resumed).")


DEFAULTS = {field.name: field.default for field in dataclasses.fields(FinetuneOptions)}


class SettingsError(cli_options.UserError):
    """A fine-tuning setting that cannot work (missing file, mismatch)."""


def data_files(settings):
    """{split: path or None}: --train_file/--dev_file/--test_file, else DATA_DIR/split.*."""
    files = {split: settings.get(f"{split}_file") or None for split in SPLITS}
    folder = settings.get("data_dir")
    if folder and not os.path.isdir(folder):
        raise SettingsError(f"--data_dir={folder}: no such folder (it should hold train.*, "
                            "dev.* and optionally test.*)")
    for split in SPLITS:
        if files[split] or not folder:
            continue
        found = [os.path.join(folder, split + ext) for ext in DATA_EXTENSIONS
                 if os.path.isfile(os.path.join(folder, split + ext))]
        if len(found) > 1:
            raise SettingsError(f"--data_dir={folder} holds {', '.join(found)}: give "
                                f"--{split}_file to say which")
        files[split] = found[0] if found else None
    for split in ("train", "dev"):
        if not files[split]:
            raise SettingsError(f"no {split} data: pass --{split}_file (or --data_dir holding "
                                f"{split}" + "|".join(DATA_EXTENSIONS) + ")")
    for split, path in files.items():
        if path and not os.path.isfile(path):
            raise SettingsError(f"--{split}_file={path}: no such file")
    return files


def resolve_model(settings):
    """(model config of its family, CheckpointAssets) from the flags and the files beside
    --init_checkpoint. Of the assets' vocab_file and spm_model_file exactly one is set: the
    vocab the run tokenises with (pretrain.checkpoints.vocab_choice.finetuning_vocab)."""
    init = settings["init_checkpoint"] or None
    vocab_flag = settings["vocab_file"] or None
    spm_flag = settings.get("spm_model_file") or None
    if vocab_flag and spm_flag:
        raise SettingsError(f"--vocab_file={vocab_flag} and --spm_model_file={spm_flag}: give "
                            "one, the vocab the model was pretrained with (a WordPiece vocab.txt, "
                            "or a sentencepiece model)")
    # The checkpoint's own files first; a given --vocab_file must then list its vocab's tokens.
    assets = checkpoint_assets.resolve(init, bert_config_file=settings["bert_config_file"] or None)
    if vocab_flag:
        checkpoint_assets.resolve(init, vocab_file=vocab_flag)  # refuses another vocab.txt
    if not assets.config_file:
        raise SettingsError("no model config: pass --bert_config_file (or put a bert_config.json "
                            f"beside --init_checkpoint={settings['init_checkpoint']!r})")
    if assets.config_source == "flag" and not input_exists(assets.config_file):
        raise SettingsError(f"--bert_config_file={assets.config_file!r} does not exist")
    try:
        config = registry.read_config(assets.config_file)
    except ConfigError as error:  # unreadable or invalid: one error line, not a traceback
        raise SettingsError(str(error)) from None
    try:
        return config, vocab_choice.finetuning_vocab(config, assets, vocab_flag, spm_flag, init)
    except vocab_choice.VocabChoiceError as error:
        raise SettingsError(str(error)) from None


def check_settings(settings, bert_config, tokenizer, assets):
    """Stops with a clear message when vocab or sequence length do not fit the model."""
    if len(tokenizer.vocab) > bert_config.vocab_size:
        raise SettingsError(
            f"vocab {tokenizer.vocab_file} has {len(tokenizer.vocab)} entries but the model "
            f"config {assets.config_file} has vocab_size={bert_config.vocab_size}: use the "
            "vocab the model was pretrained with")
    source = (f"--bert_config_file={assets.config_file}" if assets.config_source == "flag"
              else f"{assets.config_file}, beside --init_checkpoint")
    too_long = model_limits.length_error(settings["max_seq_length"], bert_config.to_dict(),
                                         source)
    if too_long:
        raise SettingsError(too_long)
    metric = settings["selection_metric"]
    task_metrics = tasks.get_task(settings["task"]).metrics
    if metric and metric not in task_metrics:
        raise SettingsError(f"--selection_metric={metric}: for --task={settings['task']} use "
                            + " or ".join(task_metrics))
    if settings["pad_to_multiple_of"] < 1:
        raise SettingsError(f"--pad_to_multiple_of={settings['pad_to_multiple_of']}: use a "
                            "positive number of tokens (1: batches padded to their longest)")
    if settings["strategy"] not in STRATEGIES:
        raise SettingsError(f"--strategy={settings['strategy']!r}: use one of "
                            + ", ".join(STRATEGIES))


def build_trainer(model_fn, settings, save_checkpoints_steps):
    """The trainer for --strategy and --training_loop, through pretraining's strategy module
    (TPU not supported here). Fine-tuning's `auto` is the session loop (unless
    $ZH_PRETRAIN_TRAINING_LOOP says otherwise), on every TensorFlow: it builds dev's predict graph
    once and reuses it at every save, where the Estimator builds one per scoring."""
    name = strategies.resolve_strategy(settings["strategy"])
    run_config = strategies.make_run_config(
        name, settings["output_dir"], save_checkpoints_steps=save_checkpoints_steps,
        keep_checkpoint_max=settings["keep_checkpoint_max"],
        log_step_count_steps=None,  # ProgressHook logs loss, rate and ETA: no second loss line
        tf_random_seed=settings["random_seed"])
    # No graph.pbtxt or .meta files: nothing reads them, and writing the graph as text
    # cost 2.3 s of a 20 s run (BERT L4 H256).
    run_config = run_config.replace(save_graph_def=False)
    return strategies.build_trainer(name, model_fn, run_config,
                                    params={"input_setup": output_dir_lib.run_setup(settings)},
                                    train_batch_size=settings["train_batch_size"],
                                    eval_batch_size=settings["eval_batch_size"],
                                    training_loop=settings["training_loop"],
                                    auto_loop="session")


def _scalar_metrics(scores):
    return {name: value for name, value in (scores or {}).items()
            if isinstance(value, float) or value is None}


def eval_results_lines(results):
    """Google's eval_results.txt form: `key = value`, sorted."""
    values = {"best_step": results["best_step"], "num_train_steps": results["num_train_steps"]}
    for split in ("dev", "test"):
        for name, value in _scalar_metrics(results.get(split)).items():
            if value is not None:
                values[f"{split}_{name}"] = value
    return [f"{key} = {values[key]}" for key in sorted(values)]


def run(settings, log_fn=print):
    """Fine-tunes and tests; returns the results dict also written to results.json."""
    settings = dataclasses.asdict(cli_options.make_options(FinetuneOptions, settings))
    started = time.time()
    task = tasks.get_task(settings["task"])
    files = data_files(settings)
    bert_config, assets = resolve_model(settings)
    try:
        tokenizer = vocab_files.make_tokenizer(assets, settings["do_lower_case"])
    except vocab_choice.VocabChoiceError as error:
        raise SettingsError(str(error)) from None
    check_settings(settings, bert_config, tokenizer, assets)
    selection_metric = settings["selection_metric"] or task.metrics[0]
    seconds = {"setup": time.time() - started}  # phase -> wall seconds: where the time went
    phase_started = time.time()
    splits = splits_lib.load(task, files, settings, log_fn)
    labels = task.label_list(splits["train"].examples, settings, splits["train"].path)
    if len(labels) < 2 and task.metric_kind == "classification":
        raise SettingsError(f"{files['train']}: only one label ({labels}) in the training data: "
                            "a classifier needs at least two")
    unseen = {split.name: task.check_labels(split.examples, labels, split.path,
                                            settings["allow_unseen_labels"])
              for split in splits.values()}
    ill_formed = getattr(task, "sequence_problems", {})
    for split in splits.values():
        if ill_formed.get(split.path):
            log_fn(f"{split.path}: {ill_formed[split.path]} ill-formed tag transition(s) in the "
                   f"{task.scheme} scheme (e.g. an E- with no B- before it); entities are read "
                   "as conlleval reads them")
    resumed_step = output_dir_lib.prepare(settings)
    output_dir = settings["output_dir"]
    description = task.description(labels, settings)
    model_files = checkpoint_assets.write_assets(  # also copied into best/ (the listener)
        output_dir, config_file=assets.config_file, vocab_file=assets.vocab_file,
        spm_model_file=assets.spm_model_file, task=description)
    cache_dir = settings["cache_dir"] or os.path.join(output_dir, "feature_cache")
    condition_size = bert_config.layer_norm_cond_size if task.record_kind == "sequence" else None
    spec = records.record_spec(task.record_kind, settings["max_seq_length"], condition_size,
                               layout_lib.pad_id(tokenizer))
    batching = records.Batching(settings["pad_to_max_length"], settings["pad_to_multiple_of"],
                                settings["group_by_length"])
    for split in splits.values():
        splits_lib.build_records(task, split, labels, tokenizer, settings, spec, cache_dir,
                                 log_fn, registry.family_of(bert_config).input_layout)
    seconds["reading_and_features"] = time.time() - phase_started

    num_train = splits["train"].counts["records"]
    num_train_steps = max(1, math.ceil(num_train * settings["num_train_epochs"]
                                       / settings["train_batch_size"]))
    num_warmup_steps = int(num_train_steps * settings["warmup_proportion"])
    eval_every = max(1, min(settings["eval_every_steps"], num_train_steps))
    log_fn(f"fine-tuning ({task.name}, {len(labels)} labels): {num_train} training records, "
           f"{num_train_steps} steps ({num_warmup_steps} warmup), dev scored every {eval_every} "
           f"steps by {selection_metric}, init: {assets.checkpoint or 'random'}")

    hint = mixed_precision.bf16_hint(settings["precision"], mixed_precision.native_bf16_flags())
    if hint:
        log_fn(hint)
    init_summary = {}
    clock = TrainingClock()
    model_fn = model_fn_builder(task, bert_config, len(labels), assets.checkpoint,
                                settings["learning_rate"], num_train_steps, num_warmup_steps,
                                log_fn=log_fn, init_summary=init_summary,
                                ignore_invalid_weights=settings["ignore_invalid_weights"],
                                bias_correction=settings["adam_bias_correction"],
                                precision=settings["precision"],
                                training_hooks_fn=lambda loss: [clock.hook(), ProgressHook(
                                    loss, num_train_steps, settings["log_every_n_steps"], log_fn)])
    trainer = build_trainer(model_fn, settings, save_checkpoints_steps=eval_every)
    dev = splits["dev"]

    dev_predictions = {}  # step -> the task's collected dev predictions at that checkpoint
    predictors = {}  # the session loop's predict graphs, built once per split

    def evaluate_dev(checkpoint):
        collected = splits_lib.predict(trainer, task, dev, spec, labels, settings, checkpoint,
                                       batching, predictors, seconds)
        dev_predictions[int(checkpoint.rsplit("-", 1)[1])] = collected
        return _scalar_metrics(task.score(dev.examples, collected, labels))

    listener = DevEvaluationListener(
        trainer, evaluate_dev, output_dir, selection_metric=selection_metric, log_fn=log_fn,
        extra_best_files=model_files)
    if resumed_step is not None:
        listener.resume(resumed_step)
        log_fn(f"resuming the unfinished run in {output_dir} at step {resumed_step} (its "
               f"weights, optimizer, input position and {len(listener.curve)} dev scorings)")
    train_input_fn = records.input_fn_builder(splits["train"].record_path, spec,
                                              settings["train_batch_size"], is_training=True,
                                              seed=settings["random_seed"], batching=batching)
    clock.start()
    trainer.train(train_input_fn, max_steps=num_train_steps,
                  saving_listeners=[clock.listener(), listener])
    for predictor in predictors.values():
        predictor.close()
    training = clock.finish(listener.eval_seconds + listener.copy_seconds)
    seconds.update(training_graph=training["graph"], training_steps=training["steps"],
                   checkpoints=training["checkpoints"], copies_to_best=listener.copy_seconds,
                   dev_scoring=listener.eval_seconds - seconds.get("predict_graphs", 0.0))
    if listener.best is None:
        raise RuntimeError("training finished without any dev evaluation; no checkpoint was saved")

    best = listener.best["checkpoint"]
    dev_collected = dev_predictions.get(listener.best["step"])  # scored already: not again
    if dev_collected is None:  # scored before a resume: again, from best/
        dev_collected = splits_lib.predict(trainer, task, dev, spec, labels, settings, best,
                                           batching)
    dev_scores = task.score(dev.examples, dev_collected, labels)
    collapse = _collapse(task, dev, dev_collected, log_fn)
    _write_predictions(task, dev, dev_collected, labels, output_dir)
    test_scores = None
    if "test" in splits:
        test = splits["test"]
        phase_started = time.time()
        test_collected = splits_lib.predict(trainer, task, test, spec, labels, settings, best,
                                            batching)
        seconds["test_scoring"] = time.time() - phase_started
        test_scores = task.score(test.examples, test_collected, labels)
        _write_predictions(task, test, test_collected, labels, output_dir)
    results = {
        "task": task.name, "labels": labels, "tag_scheme": description.get("tag_scheme"),
        "selection_metric": selection_metric, "dev": dev_scores, "test": test_scores,
        "best_step": listener.best["step"], "best_checkpoint": best,
        "num_train_steps": num_train_steps, "num_warmup_steps": num_warmup_steps,
        "resumed_from_step": resumed_step,
        "dev_curve": listener.curve, "collapsed": collapse["collapsed"], "collapse": collapse,
        "data": {split.name: {"file": os.path.abspath(split.path), "read": split.account,
                              "records": split.counts,
                              "unseen_labels": unseen.get(split.name, {}),
                              "ill_formed_tag_transitions": ill_formed.get(split.path)}
                 for split in splits.values()},
        "wall_time_seconds": round(time.time() - started, 2),
        "seconds": time_account(seconds, time.time() - started),
        "dev_eval_seconds": round(listener.eval_seconds, 2),
        "dev_scoring_seconds": [round(value, 3) for value in listener.scoring_seconds],
        "batching": dataclasses.asdict(batching),
        "bert_config_file": os.path.abspath(assets.config_file),
        "vocab_file": assets.vocab_file and os.path.abspath(assets.vocab_file),
        "spm_model_file": assets.spm_model_file and os.path.abspath(assets.spm_model_file),
        "assets": {"config": assets.config_source, "vocab": assets.vocab_source},
        "bert_config": bert_config.to_dict(),
        "init": (dict(init_summary, fingerprint=checkpoint_assets.checkpoint_fingerprint(
            assets.checkpoint)) if init_summary
                 else {"checkpoint": None, "note": "random initialisation"}),
        "settings": settings,
    }
    for split, scores in (("dev", dev_scores), ("test", test_scores)):
        for name, value in _scalar_metrics(scores).items():
            results[f"{split}_{name}"] = value  # flat keys: dev_accuracy, test_f1, ...
    freed = 0 if settings["keep_checkpoints"] else remove_training_checkpoints(output_dir)
    results["disk"] = {"output_dir_bytes": disk_bytes(output_dir),
                       "best_bytes": disk_bytes(os.path.dirname(best)),
                       "training_checkpoints_removed_bytes": freed}
    write_text_atomically(os.path.join(output_dir, "eval_results.txt"),
                          eval_results_lines(results))
    write_json_atomically(os.path.join(output_dir, "results.json"), results)
    log_fn("time: " + ", ".join(f"{phase} {value:.1f} s" for phase, value in
                                results["seconds"].items()))
    shown = f"test {selection_metric} {test_scores[selection_metric]:.4f}" if test_scores else (
        "no test set")
    log_fn(f"best dev {selection_metric} {listener.best[selection_metric]:.4f} at step "
           f"{results['best_step']} of {num_train_steps}; {shown} "
           f"({results['wall_time_seconds']:.0f} s); results in "
           f"{os.path.join(output_dir, 'results.json')}; disk: "
           f"{results['disk']['output_dir_bytes'] / 1e6:.1f} MB (best/ "
           f"{results['disk']['best_bytes'] / 1e6:.1f} MB"
           + (f", {freed / 1e6:.1f} MB of training checkpoints removed: --keep_checkpoints "
              "keeps them)" if freed else ")"))
    return results


def time_account(seconds, wall):
    """{phase: seconds} rounded, with `other` (what no phase timed) and `total` = wall."""
    account = {phase: round(value, 2) for phase, value in seconds.items()}
    account["other"] = round(max(wall - sum(seconds.values()), 0.0), 2)
    account["total"] = round(wall, 2)
    return account


def _collapse(task, dev, collected, log_fn):
    """Whether the best model predicts one class (tagging: O) for (nearly) every dev example
    (the task's collapse check); warns with the likely causes."""
    collapse = task.collapse(dev.examples, collected)
    if collapse["collapsed"]:
        log_fn(f"WARNING: collapsed: the best-on-dev model {collapse['what']}; "
               + COLLAPSE_ADVICE)
    return collapse


def _write_predictions(task, split, collected, labels, output_dir):
    """SPLIT_predictions.jsonl: one JSON line per example of the split, in input order."""
    write_text_atomically(
        os.path.join(output_dir, f"{split.name}_predictions.jsonl"),
        (json.dumps(record, ensure_ascii=False)
         for record in task.prediction_records(split.examples, collected, labels)))


def run_from_flags(options):
    """run() from a parsed options dataclass, with TensorFlow's INFO log silenced."""
    tf.logging.set_verbosity(tf.logging.ERROR)  # progress comes from our own log lines
    run(dataclasses.asdict(options))


EXPECTED_ERRORS = (OSError, checkpoint_loading.CheckpointMismatchError)


def main(argv=None, options_class=FinetuneOptions):
    cli_options.run_main(options_class, run_from_flags, argv, expected=EXPECTED_ERRORS)


if __name__ == "__main__":
    main()
