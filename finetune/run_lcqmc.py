r"""Fine-tune a pretrained (or randomly initialised) encoder on LCQMC-format pairs.

    python -m finetune.run_lcqmc --data_dir=DIR --vocab_file=vocab.txt \
        --init_checkpoint=output/pretrain --output_dir=runs/after

`DIR` holds `train.txt`, `dev.txt`, `test.txt` (`text_a<TAB>text_b<TAB>label`).
Trains for `--num_train_epochs` over (the first `--max_train_examples` of)
train, evaluates on dev every `--eval_every_steps`, keeps the best-on-dev
checkpoint in `OUTPUT_DIR/best/`, scores test with it, and writes
`OUTPUT_DIR/results.json` and `OUTPUT_DIR/test_predictions.tsv` (a
conditional model's with a `condition` column).

The model config comes from `--bert_config_file`, else from a
`bert_config.json` beside the init checkpoint. `run(settings)` is the
plain-Python entry (a dict of the flag names of `FinetuneOptions`).

A config with `layer_norm_cond_size` = C (conditional LayerNorm) needs a 4th
field on every line, `text_a<TAB>text_b<TAB>label<TAB>CONDITION`: a class id
in [0, C) (fed as its one-hot vector) or C comma-separated numbers.
"""
import dataclasses
import math
import os
import shutil
import time

import numpy as np
import tensorflow.compat.v1 as tf

from common.file_utils import write_json_atomically, write_text_atomically
from finetune import lcqmc_data
from finetune.best_checkpoint import DevEvaluationListener
from finetune.classifier import model_fn_builder
from finetune.progress import ProgressHook
from common import cli_options
from common import model_limits
from pretrain import checkpoint_loading
from pretrain import strategy as strategies
from common.cli_options import option, required
from pretrain.modeling import BertConfig

SPLITS = ("train", "dev", "test")
STRATEGIES = ("auto", "cpu", "gpu", "mirrored", "multi_worker")


@dataclasses.dataclass
class FinetuneSettings:
    """Data, model and training settings; shared with finetune.compare (one flag each)."""
    data_dir: str = required("Folder with train.txt, dev.txt, test.txt "
                             "(text_a<TAB>text_b<TAB>label; a model with layer_norm_cond_size "
                             "C needs a 4th field: a class id < C or C comma-separated "
                             "numbers).")
    vocab_file: str = required("The vocab the model was pretrained with.")
    bert_config_file: str = option(None, "Model config JSON; default: the bert_config.json "
                                         "beside the starting checkpoint.")
    cache_dir: str = option(None, "Feature cache folder (default OUTPUT_DIR/feature_cache).")
    do_lower_case: bool = option(True, "Lower-case input (match the pretraining data).")
    max_seq_length: int = option(64, "Tokens per pair incl. [CLS] and 2 [SEP].")
    train_batch_size: int = option(32, "Global training batch size.")
    eval_batch_size: int = option(128, "Batch size for dev/test.")
    learning_rate: float = option(5e-5, "Peak AdamW learning rate.")
    num_train_epochs: float = option(3.0, "Epochs over the (limited) training set.")
    max_train_examples: int = option(0, "Use only the first N train pairs (0 = all).")
    max_dev_examples: int = option(0, "Use only the first N dev pairs (0 = all).")
    eval_every_steps: int = option(500, "Save and evaluate on dev every N steps.")
    warmup_proportion: float = option(0.1, "Fraction of steps with linear warmup.")
    random_seed: int = option(12345, "Seed for initialisation, dropout, shuffling.")
    ignore_invalid_weights: bool = option(False, checkpoint_loading.IGNORE_INVALID_WEIGHTS_HELP)
    strategy: str = option("cpu", "Device strategy, as in pretraining: " + "|".join(STRATEGIES)
                           + ".")
    keep_checkpoint_max: int = option(2, "Recent checkpoints kept (best/ is separate).")
    log_every_n_steps: int = option(100, "Loss logging interval.")


@dataclasses.dataclass
class FinetuneOptions(FinetuneSettings):
    """The flags of `python -m finetune.run_lcqmc`."""
    init_checkpoint: str = option(None, "Checkpoint prefix or directory (latest checkpoint); "
                                        "empty = random initialisation.")
    output_dir: str = required("Where checkpoints, best/, results.json go.")
    overwrite_output_dir: bool = option(False, "Delete a previous run in --output_dir.")


DEFAULTS = {field.name: field.default for field in dataclasses.fields(FinetuneOptions)}


class SettingsError(cli_options.UserError):
    """A fine-tuning setting that cannot work (missing file, mismatch)."""


def resolve_bert_config(settings):
    """Returns (BertConfig, path): --bert_config_file, else bert_config.json beside the checkpoint."""
    path = settings["bert_config_file"]
    if not path and settings["init_checkpoint"]:
        init = settings["init_checkpoint"]
        folder = init if os.path.isdir(init) else os.path.dirname(init)
        candidate = os.path.join(folder, "bert_config.json")
        if os.path.isfile(candidate):
            path = candidate
    if not path:
        raise SettingsError("no model config: pass --bert_config_file (or put a bert_config.json "
                            f"beside --init_checkpoint={settings['init_checkpoint']!r})")
    if not os.path.isfile(path):
        raise SettingsError(f"--bert_config_file={path!r} does not exist")
    return BertConfig.from_json_file(path), path


def check_settings(settings, bert_config, tokenizer):
    """Stops with a clear message when vocab, sequence length or data do not fit the model."""
    if len(tokenizer.vocab) > bert_config.vocab_size:
        raise SettingsError(
            f"vocab {tokenizer.vocab_file} has {len(tokenizer.vocab)} entries but the model config "
            f"has vocab_size={bert_config.vocab_size}: use the vocab the model was pretrained with")
    source = (f"--bert_config_file={settings['bert_config_file']}"
              if settings["bert_config_file"] else "bert_config.json beside --init_checkpoint")
    too_long = model_limits.length_error(settings["max_seq_length"], bert_config.to_dict(), source)
    if too_long:
        raise SettingsError(too_long)
    init = settings["init_checkpoint"]
    if init and not (os.path.isdir(init) or tf.io.gfile.exists(init + ".index")):
        raise SettingsError(f"--init_checkpoint={init!r} is neither a directory nor a checkpoint "
                            "prefix (PREFIX.index not found)")
    if init and os.path.isdir(init) and tf.train.latest_checkpoint(init) is None:
        raise SettingsError(f"--init_checkpoint={init!r} holds no checkpoint")
    for split in SPLITS:
        path = os.path.join(settings["data_dir"], f"{split}.txt")
        if not os.path.isfile(path):
            raise SettingsError(f"{path} not found: --data_dir must hold train.txt, dev.txt and "
                                "test.txt (text_a<TAB>text_b<TAB>label per line)")


def build_estimator(model_fn, settings, save_checkpoints_steps):
    """Estimator for --strategy through pretraining's strategy module (TPU not supported here)."""
    name = strategies.resolve_strategy(settings["strategy"])
    run_config = strategies.make_run_config(
        name, settings["output_dir"], save_checkpoints_steps=save_checkpoints_steps,
        keep_checkpoint_max=settings["keep_checkpoint_max"],
        log_step_count_steps=settings["log_every_n_steps"],
        tf_random_seed=settings["random_seed"])
    return strategies.build_estimator(name, model_fn, run_config,
                                      train_batch_size=settings["train_batch_size"],
                                      eval_batch_size=settings["eval_batch_size"])


def prepare_output_dir(settings):
    output_dir = settings["output_dir"]
    if tf.train.latest_checkpoint(output_dir) is not None or os.path.exists(
            os.path.join(output_dir, "results.json")):
        if not settings["overwrite_output_dir"]:
            raise SettingsError(f"{output_dir} already holds a fine-tuning run; pass "
                                "--overwrite_output_dir or choose another --output_dir")
        shutil.rmtree(output_dir)
    os.makedirs(output_dir, exist_ok=True)


def score_test(estimator, record_path, examples, checkpoint, settings, condition_size=None):
    """Predicts test with `checkpoint`; returns (accuracy, loss, rows for the TSV).

    condition_size: the model's layer_norm_cond_size (the records carry conditions)."""
    input_fn = lcqmc_data.input_fn_builder(record_path, settings["max_seq_length"],
                                           settings["eval_batch_size"], is_training=False,
                                           condition_size=condition_size)
    probabilities = np.array([p["probabilities"] for p in estimator.predict(
        input_fn, checkpoint_path=checkpoint, yield_single_examples=True)])
    labels = np.array([e.label for e in examples])
    if len(probabilities) != len(labels):
        raise RuntimeError(f"got {len(probabilities)} test predictions for {len(labels)} examples")
    predicted = probabilities.argmax(axis=1)
    accuracy = float((predicted == labels).mean())
    loss = float(-np.log(np.maximum(probabilities[np.arange(len(labels)), labels], 1e-12)).mean())
    rows = [(e.guid, e.text_a, e.text_b, e.label, int(p), float(prob[1]), e.condition)
            for e, p, prob in zip(examples, predicted, probabilities)]
    return accuracy, loss, rows


def prediction_lines(rows, conditional):
    """test_predictions.tsv: a header, then one line per score_test row; a
    conditional model's lines end with the condition as C comma-separated floats."""
    header = "guid\ttext_a\ttext_b\tlabel\tprediction\tprob_paraphrase"
    yield header + ("\tcondition" if conditional else "")
    for guid, text_a, text_b, label, prediction, probability, condition in rows:
        line = f"{guid}\t{text_a}\t{text_b}\t{label}\t{prediction}\t{probability:.6f}"
        yield line + ("\t" + ",".join(f"{value:g}" for value in condition) if conditional else "")


def run(settings, log_fn=print):
    """Fine-tunes and tests; returns the results dict also written to results.json."""
    settings = dataclasses.asdict(cli_options.make_options(FinetuneOptions, settings))
    if settings["strategy"] not in STRATEGIES:
        raise SettingsError(f"--strategy={settings['strategy']!r}: use one of "
                            + ", ".join(STRATEGIES))
    started = time.time()
    bert_config, config_path = resolve_bert_config(settings)
    tokenizer = lcqmc_data.load_tokenizer(settings["vocab_file"], settings["do_lower_case"])
    check_settings(settings, bert_config, tokenizer)
    prepare_output_dir(settings)
    shutil.copy2(config_path, os.path.join(settings["output_dir"], "bert_config.json"))
    cache_dir = settings["cache_dir"] or os.path.join(settings["output_dir"], "feature_cache")
    condition_size = bert_config.layer_norm_cond_size  # None: no condition column
    records, data_info = {}, {}
    limits = {"train": settings["max_train_examples"], "dev": settings["max_dev_examples"],
              "test": 0}
    for split in SPLITS:
        records[split], data_info[split] = lcqmc_data.build_cached_features(
            os.path.join(settings["data_dir"], f"{split}.txt"), tokenizer,
            settings["max_seq_length"], cache_dir, split, limit=limits[split], log_fn=log_fn,
            condition_size=condition_size)

    num_train = data_info["train"]["num_examples"]
    num_train_steps = max(1, math.ceil(num_train * settings["num_train_epochs"]
                                       / settings["train_batch_size"]))
    num_warmup_steps = int(num_train_steps * settings["warmup_proportion"])
    eval_every = max(1, min(settings["eval_every_steps"], num_train_steps))
    log_fn(f"fine-tuning: {num_train} train examples, {num_train_steps} steps "
           f"({num_warmup_steps} warmup), dev evaluation every {eval_every} steps, "
           f"init: {settings['init_checkpoint'] or 'random'}")

    init_summary = {}
    model_fn = model_fn_builder(bert_config, settings["init_checkpoint"],
                                settings["learning_rate"], num_train_steps, num_warmup_steps,
                                log_fn=log_fn, init_summary=init_summary,
                                ignore_invalid_weights=settings["ignore_invalid_weights"],
                                training_hooks_fn=lambda loss: [ProgressHook(
                                    loss, num_train_steps, settings["log_every_n_steps"], log_fn)])
    estimator = build_estimator(model_fn, settings, save_checkpoints_steps=eval_every)
    dev_input_fn = lcqmc_data.input_fn_builder(records["dev"], settings["max_seq_length"],
                                               settings["eval_batch_size"], is_training=False,
                                               condition_size=condition_size)
    train_input_fn = lcqmc_data.input_fn_builder(
        records["train"], settings["max_seq_length"], settings["train_batch_size"],
        is_training=True, seed=settings["random_seed"], condition_size=condition_size)
    listener = DevEvaluationListener(
        estimator, dev_input_fn, settings["output_dir"], log_fn=log_fn,
        extra_best_files=[os.path.join(settings["output_dir"], "bert_config.json")])
    estimator.train(train_input_fn, max_steps=num_train_steps, saving_listeners=[listener])
    if listener.best is None:
        raise RuntimeError("training finished without any dev evaluation; no checkpoint was saved")

    test_examples, _ = lcqmc_data.read_pairs(os.path.join(settings["data_dir"], "test.txt"),
                                             log_fn=lambda message: None,
                                             condition_size=condition_size)
    test_accuracy, test_loss, rows = score_test(estimator, records["test"], test_examples,
                                                listener.best["checkpoint"], settings,
                                                condition_size)
    write_text_atomically(os.path.join(settings["output_dir"], "test_predictions.tsv"),
                          prediction_lines(rows, conditional=condition_size is not None))

    results = {
        "dev_accuracy": listener.best["accuracy"], "dev_loss": listener.best["loss"],
        "test_accuracy": test_accuracy, "test_loss": test_loss,
        "best_step": listener.best["step"], "best_checkpoint": listener.best["checkpoint"],
        "num_train_steps": num_train_steps, "num_warmup_steps": num_warmup_steps,
        "last_dev_accuracy": listener.curve[-1]["accuracy"],
        "dev_curve": listener.curve,
        "wall_time_seconds": round(time.time() - started, 2),
        "dev_eval_seconds": round(listener.eval_seconds, 2),
        "examples": {split: data_info[split]["num_examples"] for split in SPLITS},
        "malformed_lines": {split: data_info[split]["malformed"] for split in SPLITS},
        "truncated": {split: data_info[split]["num_truncated"] for split in SPLITS},
        "bert_config_file": os.path.abspath(config_path),
        "bert_config": bert_config.to_dict(),
        "init": init_summary or {"checkpoint": None, "note": "random initialisation"},
        "settings": settings,
    }
    write_json_atomically(os.path.join(settings["output_dir"], "results.json"), results)
    log_fn(f"best dev accuracy {results['dev_accuracy']:.4f} at step {results['best_step']} "
           f"of {num_train_steps}; test accuracy {test_accuracy:.4f} "
           f"({results['wall_time_seconds']:.0f} s); results in "
           f"{os.path.join(settings['output_dir'], 'results.json')}")
    return results


def _run_from_flags(options):
    tf.logging.set_verbosity(tf.logging.ERROR)  # progress comes from our own log lines
    run(dataclasses.asdict(options))


def main(argv=None):
    cli_options.run_main(FinetuneOptions, _run_from_flags, argv,
                         expected=(lcqmc_data.DataError, OSError,
                                   checkpoint_loading.CheckpointMismatchError))


if __name__ == "__main__":
    main()
