"""run_pretraining's flags (google-research/bert's names where it has them), declared once,
and the checks that need no data: `python -m pretrain.run_pretraining --help` lists them."""
import dataclasses

from common import cli_options
from common.cli_options import UserError, option
from common.file_utils import input_exists
from pretrain.checkpoints import checkpoint_loading
from pretrain.training import continued_eval, lr_schedules, optimizers, plateau_checkpoint
from pretrain.training import strategy as strategy_lib


@dataclasses.dataclass
class PretrainingOptions:
    """Every flag of run_pretraining (google-research/bert's names where it has them)."""
    bert_config_file: str = option(None, "Model config JSON (bert_config.json format; a path "
                                   "or a shipped config's name: python -m common.model_configs "
                                   "lists them). Required unless --init_checkpoint has a "
                                   "bert_config.json beside it.")
    vocab_file: str = option(None, "The vocab the data was made with, copied to "
                             "OUTPUT_DIR/vocab.txt (default: the vocab the data's sidecars "
                             "name). Must equal the data's and the --init_checkpoint's.")
    input_file: str = option(None, "Comma-separated TFRecord globs for training (and eval by "
                             "default). Required with --do_train.")
    eval_input_file: str = option(None, "Comma-separated TFRecord globs for --do_eval "
                                  "(default: --input_file, which scores training records: "
                                  "make held-out ones with create_pretraining_data "
                                  "--eval_share).")
    extra_eval_input_file: tuple = option((), continued_eval.EXTRA_EVAL_HELP)
    output_dir: str = option(None, "Checkpoints, summaries and eval_results.txt go here. "
                             "Required.")
    init_checkpoint: str = option(None, "Initial weights (weights only; optimizer state starts "
                                  "fresh): a prefix or a directory (its latest checkpoint).")
    ignore_invalid_weights: bool = option(False, checkpoint_loading.IGNORE_INVALID_WEIGHTS_HELP)
    max_seq_length: int = option(None, "Sequence length of the data (default: from the data's "
                                 ".meta.json sidecar, else 128; must equal the data's).")
    max_predictions_per_seq: int = option(None, "Masked positions per sequence (default: from the "
                                          "data's sidecar, else 20; must equal the data's; "
                                          "train-time masking: what the rate needs).")
    do_train: bool = option(False, "Train.")
    do_eval: bool = option(False, "Evaluate on the eval input, writing eval_results.txt.")
    train_batch_size: int = option(32, "GLOBAL training batch per micro-step (split across "
                                   "replicas).")
    eval_batch_size: int = option(8, "Eval batch.")
    learning_rate: float = option(5e-5, "Peak learning rate (after warmup).")
    num_train_steps: int = option(100000, "Optimizer updates to train for (total, across "
                                  "resumes).")
    num_warmup_steps: int = option(10000, "Linear warmup updates.")
    save_checkpoints_steps: int = option(1000, "Save a checkpoint every this many updates.")
    iterations_per_loop: int = option(1000, "TPU: steps per TPUEstimator host loop.")
    max_eval_steps: int = option(100, "Maximum eval batches.")
    use_tpu: bool = option(False, "Same as --strategy=tpu (google-research/bert's flag).")
    tpu_name: str = option(None, "TPU for --strategy=tpu: `local` on a TPU VM, else the TPU "
                           "Node's name or grpc://IP:8470 (default: $TPU_NAME).")
    tpu_zone: str = option(None, "GCE zone of the TPU (optional).")
    gcp_project: str = option(None, "GCP project of the TPU (optional).")
    master: str = option(None, "Unused (kept for google-research/bert scripts).")
    num_tpu_cores: int = option(8, "TPU cores (shards).")
    strategy: str = option("auto", "Where to train.", choices=strategy_lib.STRATEGIES)
    training_loop: str = option("auto", strategy_lib.TRAINING_LOOP_HELP,
                                choices=strategy_lib.TRAINING_LOOPS)
    optimizer: str = option("adamw", "Optimizer.", choices=("adamw", "lamb"))
    adam_bias_correction: bool = option(True, optimizers.BIAS_CORRECTION_HELP)
    poly_power: float = option(1.0, "Power of the polynomial learning-rate decay.")
    lr_scheduler_type: str = option(lr_schedules.POLYNOMIAL, lr_schedules.LR_SCHEDULER_TYPE_HELP,
                                    choices=lr_schedules.SCHEDULER_TYPES)
    num_decay_steps: int = option(None, lr_schedules.NUM_DECAY_STEPS_HELP)
    decay_type: str = option(None, lr_schedules.DECAY_TYPE_HELP, choices=lr_schedules.DECAY_TYPES)
    min_lr_ratio: float = option(None, lr_schedules.MIN_LR_RATIO_HELP)
    weight_decay_rate: float = option(0.01, "Decoupled weight decay (not on LayerNorm and bias).")
    gradient_accumulation_steps: int = option(1, "Micro-batches per optimizer update.")
    precision: str = option("auto", "auto = bf16 on TPU, else fp32.",
                            choices=("auto", "fp32", "fp16", "bf16"))
    use_xla: bool = option(False, "Enable XLA JIT compilation.")
    keep_checkpoint_max: int = option(5, "Checkpoints to keep.")
    log_every_n_steps: int = option(100, "Log and write summaries every this many steps.")
    sentence_head: str = option("auto", "Train the SOP/NSP head (auto: from the data's metadata; "
                                "roberta data -> off; no metadata -> on).",
                                choices=("auto", "true", "false"))
    span_boundary_objective: bool = option(False, "Add SpanBERT's span boundary objective (SBO) "
                                           "head; needs data made with --masking=span.")
    perm_size: int = option(None, "Permutation LM: block of the local permutation, dividing the "
                            "reuse window and the rest (default: the data's reuse_length, so "
                            "the reuse window never sees the new part).")
    mlm_probability: float = option(None, "Records made with data_gen --train_time_masking: "
                                    "the share of tokens masked each time a record is read, "
                                    "whole words together, in (0, 0.5] (default 0.15). Static "
                                    "records carry their masks: leave it unset.")
    final_mlm_probability: float = option(None, "With --mlm_probability: the rate at the last "
                                          "step, reached linearly (e.g. 0.3 -> 0.15); evals "
                                          "use it (default: --mlm_probability throughout).")
    mask_replace_prob: float = option(None, "Train-time masking: the share of masked tokens "
                                      "replaced by [MASK] (default 0.8).")
    random_replace_prob: float = option(None, "Train-time masking: the share of masked tokens "
                                        "replaced by a random token (default 0.1); the rest "
                                        "keep theirs.")
    compression: str = option("auto", "Input TFRecord compression (auto: sidecar, else the "
                              "file's first bytes).", choices=("auto", "none", "gzip"))
    skip_corrupt_records: bool = option(False, "Read each input file up to its first truncated "
                                        "or corrupt record instead of stopping; every file is "
                                        "read once first to count what is skipped.")
    num_cpu_threads: int = option(4, "Parallel file readers.")
    shuffle_buffer: int = option(1000, "Training records shuffle buffer (0: files shuffled "
                                 "only).")
    random_seed: int = option(None, "Seed of initialisation, dropout and the input order "
                              "(default: drawn at the first start and saved with the "
                              "checkpoints, which a rerun continues).")
    ignore_data_skip: bool = option(False, "On resume, read the training data from a new "
                                    "start instead of the position saved in the checkpoint "
                                    "(needed to resume with another batch, replica count or "
                                    "input files).")
    allow_schedule_change: bool = option(False, "On resume, accept learning-rate schedule "
                                         "flags that differ from the checkpoint's run.")
    resume_from: str = option(None, plateau_checkpoint.RESUME_FROM_HELP)


def options_from(values):
    """PretrainingOptions from a dict: defaults overlaid with `values`; unknown names refused."""
    return cli_options.make_options(PretrainingOptions, dict(values))


def parse_bool_choice(value, flag):
    text = str(value).lower()
    if text == "auto":
        return None
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UserError(f"--{flag}={value!r} must be auto, true or false")


def validate(opts):
    """opts with the schedule's defaults filled in; a UserError for what cannot run."""
    for name in ("output_dir", "input_file"):
        if not getattr(opts, name) and (name != "input_file" or opts.do_train):
            raise UserError(f"--{name} is required")
    if opts.vocab_file and not input_exists(opts.vocab_file):
        raise UserError(f"--vocab_file={opts.vocab_file} does not exist; check the path")
    if not opts.do_train and not opts.do_eval:
        raise UserError("nothing to do: give --do_train and/or --do_eval")
    if opts.do_eval and not (opts.eval_input_file or opts.input_file):
        raise UserError("--do_eval needs --eval_input_file or --input_file")
    for name in ("train_batch_size", "eval_batch_size", "num_train_steps",
                 "gradient_accumulation_steps", "save_checkpoints_steps"):
        if int(getattr(opts, name)) < 1:
            raise UserError(f"--{name} must be >= 1, got {getattr(opts, name)}")
    scheduler = lr_scheduler(opts)  # refused in one line unless its phases fit
    return dataclasses.replace(opts, num_decay_steps=scheduler.num_decay_steps,
                               decay_type=scheduler.decay_type,
                               min_lr_ratio=scheduler.min_lr_ratio)


def lr_scheduler(opts):
    """The learning-rate schedule's lr_schedules.Scheduler, its defaults filled in."""
    return lr_schedules.resolve(opts.lr_scheduler_type, opts.num_train_steps,
                                opts.num_warmup_steps, opts.num_decay_steps, opts.decay_type,
                                opts.min_lr_ratio)
