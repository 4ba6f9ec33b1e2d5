"""scripts/finetune.sh: did pretraining help, on any task? Fine-tunes from BEFORE (or random
init of the same architecture) and from AFTER with the same seeds and settings through
`python -m finetune.compare`, which prints the table.

    python -m finetune.finetune_script [OPTIONS] [-- FLAGS_FOR_finetune.compare...]

Every setting is an environment variable and the option of its name in lower case
(common.script_options); a set setting goes to its flag of finetune.compare, an unset one
leaves that flag's default. Relative paths are taken from the caller's directory.
"""
import os
import sys

from common.script_options import (read_options, script_main, tool_flags, use_settings,
                                   variables)
from common.script_runs import Refusal, caller_path, matches, setting
from finetune.formats import DATA_EXTENSIONS

SCRIPT = "finetune.sh"
# The settings forwarded to finetune.compare, (VARIABLE, flag), each only when set.
DATA_SETTINGS = (
    ("TASK", "task"), ("DATA_DIR", "data_dir"), ("TRAIN_FILE", "train_file"),
    ("DEV_FILE", "dev_file"), ("TEST_FILE", "test_file"), ("INPUT_FORMAT", "input_format"),
    ("TEXT_FIELDS", "text_fields"), ("LABEL_FIELD", "label_field"),
    ("TAG_SCHEME", "tag_scheme"), ("ALLOW_UNSEEN_LABELS", "allow_unseen_labels"),
    ("SELECTION_METRIC", "selection_metric"), ("DO_LOWER_CASE", "do_lower_case"))
MODEL_SETTINGS = (("CONFIG", "bert_config_file"), ("VOCAB", "vocab_file"))
TRAINING_SETTINGS = (
    ("MAX_TRAIN_EXAMPLES", "max_train_examples"), ("MAX_DEV_EXAMPLES", "max_dev_examples"),
    ("EPOCHS", "num_train_epochs"), ("MAX_SEQ_LENGTH", "max_seq_length"),
    ("BATCH_SIZE", "train_batch_size"), ("EVAL_BATCH_SIZE", "eval_batch_size"),
    ("LEARNING_RATE", "learning_rate"), ("WARMUP_PROPORTION", "warmup_proportion"),
    ("EVAL_EVERY", "eval_every_steps"), ("SEED", "random_seed"), ("STRATEGY", "strategy"))
COMPARE_SETTINGS = (("OUT", "output_dir"), ("SEEDS", "seeds"),
                    ("BOOTSTRAP_SAMPLES", "bootstrap_samples"), ("RERUN", "rerun"),
                    ("COLLECT_ONLY", "collect_only"))
TABLES = (DATA_SETTINGS, MODEL_SETTINGS, TRAINING_SETTINGS, COMPARE_SETTINGS)
# The script's own settings and their defaults: the starting points and their table labels.
OWN_SETTINGS = {"BEFORE": "", "AFTER": "", "BEFORE_LABEL": "",
                "AFTER_LABEL": "after pretraining"}
PATH_SETTINGS = ("DATA_DIR", "TRAIN_FILE", "DEV_FILE", "TEST_FILE", "CONFIG", "VOCAB", "OUT",
                 "BEFORE", "AFTER")
SWITCHES = ("ALLOW_UNSEEN_LABELS", "RERUN", "COLLECT_ONLY")  # --option alone = true
INTEGERS = ("MAX_TRAIN_EXAMPLES", "MAX_DEV_EXAMPLES", "MAX_SEQ_LENGTH", "BATCH_SIZE",
            "EVAL_BATCH_SIZE", "EVAL_EVERY", "SEED", "BOOTSTRAP_SAMPLES")
NUMBERS = ("EPOCHS", "LEARNING_RATE", "WARMUP_PROPORTION")
VALUE_OPTIONS = [*OWN_SETTINGS, "PYTHON",
                 *(name for name in variables(*TABLES) if name not in SWITCHES)]


def read_settings():
    """{VARIABLE: value} from the environment (unset: empty, or the script's own default)."""
    values = {name: setting(name) for name in variables(*TABLES)}
    values.update({name: setting(name, default) for name, default in OWN_SETTINGS.items()})
    values.update(DRY_RUN=setting("DRY_RUN", "0"), PYTHON=setting("PYTHON", sys.executable))
    return values


def usage(values):
    def given(name):
        return f" [{values[name]}]" if values[name] else ""
    return f"""Usage: bash scripts/finetune.sh --task TASK (--data_dir D | --train_file F --dev_file F)
                                --after CHECKPOINT [OPTIONS] [-- EXTRA_FLAGS_FOR_finetune.compare...]

Did pretraining help? Fine-tunes the task from each starting point, BEFORE (a
checkpoint; empty = random initialisation of the same architecture) and AFTER,
with the same seeds and settings, and prints the table of finetune.compare:
mean and spread over the seeds, and AFTER against BEFORE with a bootstrap
confidence interval. It saves the table to OUT/results.md, every run's numbers
to OUT/results.json and the dev curves to OUT/dev_curve.png; runs live in
OUT/runs/, and a finished run with unchanged settings is collected, not
retrained. Relative paths are taken from your current directory.

Every setting is an option or the environment variable beside it (the option
wins). Settings marked (--flag) go to finetune.compare only when set; unset,
its own default applies (python -m finetune.compare --help lists them).

Task and data:
  --task T               TASK                classification | pair | ner       (--task){given('TASK')}
  --data_dir D           DATA_DIR            folder with train.*, dev.*, test.* (--data_dir){given('DATA_DIR')}
                                             ({' '.join(DATA_EXTENSIONS)})
  --train_file F         TRAIN_FILE          training data, instead of DATA_DIR/train.* (--train_file){given('TRAIN_FILE')}
  --dev_file F           DEV_FILE            dev data: picks the best checkpoint (--dev_file){given('DEV_FILE')}
  --test_file F          TEST_FILE           test data (optional)              (--test_file){given('TEST_FILE')}
  --input_format F       INPUT_FORMAT        tsv|csv|jsonl|lcqmc|conll|cluener; unset = detected (--input_format){given('INPUT_FORMAT')}
  --text_fields A,B      TEXT_FIELDS         text columns/keys                 (--text_fields){given('TEXT_FIELDS')}
  --label_field L        LABEL_FIELD         label column/key                  (--label_field){given('LABEL_FIELD')}
  --tag_scheme S         TAG_SCHEME          ner: BIO|IOB2|BIOES|BMES; unset = detected (--tag_scheme){given('TAG_SCHEME')}
  --allow_unseen_labels  ALLOW_UNSEEN_LABELS=true  score labels training never saw as errors (--allow_unseen_labels)
  --selection_metric M   SELECTION_METRIC    dev metric of the best checkpoint (--selection_metric){given('SELECTION_METRIC')}
  --do_lower_case B      DO_LOWER_CASE       true | false                      (--do_lower_case){given('DO_LOWER_CASE')}

Starting points and model:
  --before C             BEFORE              baseline checkpoint; empty = random init [{values['BEFORE'] or '<random init>'}]
  --after C              AFTER               pretraining output dir or checkpoint (required){given('AFTER')}
  --config F             CONFIG              model config for a starting point without
                                             bert_config.json beside it        (--bert_config_file){given('CONFIG')}
  --vocab F              VOCAB               the pretraining vocab; unset = the vocab.txt
                                             beside AFTER                      (--vocab_file){given('VOCAB')}
  --before_label L       BEFORE_LABEL        table label of the first row [{values['BEFORE_LABEL'] or 'random init, or before pretraining with BEFORE'}]
  --after_label L        AFTER_LABEL         table label of the AFTER row [{values['AFTER_LABEL']}]

Training (the same for every run):
  --seeds 1,2,3          SEEDS               fine-tuning seeds, the same for each start (--seeds){given('SEEDS')}
  --seed N               SEED                one seed, when SEEDS is unset     (--random_seed){given('SEED')}
  --max_train_examples N MAX_TRAIN_EXAMPLES  first N training examples, 0 = all (--max_train_examples){given('MAX_TRAIN_EXAMPLES')}
  --max_dev_examples N   MAX_DEV_EXAMPLES    first N dev examples, 0 = all     (--max_dev_examples){given('MAX_DEV_EXAMPLES')}
  --epochs E             EPOCHS              training epochs                   (--num_train_epochs){given('EPOCHS')}
  --max_seq_length N     MAX_SEQ_LENGTH      tokens per record                 (--max_seq_length){given('MAX_SEQ_LENGTH')}
  --batch_size N         BATCH_SIZE          training batch                    (--train_batch_size){given('BATCH_SIZE')}
  --eval_batch_size N    EVAL_BATCH_SIZE     dev/test batch                    (--eval_batch_size){given('EVAL_BATCH_SIZE')}
  --learning_rate R      LEARNING_RATE       peak AdamW learning rate          (--learning_rate){given('LEARNING_RATE')}
  --warmup_proportion P  WARMUP_PROPORTION   fraction of steps warming up      (--warmup_proportion){given('WARMUP_PROPORTION')}
  --eval_every N         EVAL_EVERY          dev evaluation interval (steps)   (--eval_every_steps){given('EVAL_EVERY')}
  --strategy S           STRATEGY            cpu | gpu | mirrored | auto       (--strategy){given('STRATEGY')}

Output:
  --out D                OUT                 results folder                    (--output_dir){given('OUT')}
  --bootstrap_samples N  BOOTSTRAP_SAMPLES   bootstrap replicates              (--bootstrap_samples){given('BOOTSTRAP_SAMPLES')}
  --rerun                RERUN=true          retrain even finished runs        (--rerun)
  --collect_only         COLLECT_ONLY=true   only collect finished runs, never train (--collect_only)
  --python P             PYTHON              interpreter; default .venv/bin/python, else python3
  --dry_run              DRY_RUN=1           print the command, run nothing
  -h, --help                                 this text

Arguments after -- go to finetune.compare unchanged (e.g. -- --ignore_invalid_weights).
Examples:
  bash scripts/finetune.sh --task classification --data_dir ../shared/data/chnsenticorp \\
      --after output/pretrain --seeds 1,2,3 --out results/chnsenticorp
  TASK=ner DATA_DIR=data/sample/tasks/ner_bio AFTER=output/demo/pretrain EPOCHS=1 \\
      bash scripts/finetune.sh --out results/ner"""


def check_values(values):
    """Refuses a malformed setting; switches become true/false."""
    for name in INTEGERS:
        if not matches(r"[0-9]*", values[name]):
            raise Refusal(f"{name} must be a non-negative integer, not '{values[name]}'")
    for name in NUMBERS:
        if values[name] and not matches(r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?", values[name]):
            raise Refusal(f"{name} must be a positive number, not '{values[name]}'")
    if values["SEEDS"] and not matches(r"[0-9]+(,[0-9]+)*", values["SEEDS"]):
        raise Refusal("SEEDS must be comma-separated integers (e.g. 1,2,3), "
                      f"not '{values['SEEDS']}'")
    for name in (*SWITCHES, "DO_LOWER_CASE"):
        values[name] = {"1": "true", "0": "false"}.get(values[name], values[name])
        if values[name] not in ("", "true", "false"):
            raise Refusal(f"{name} must be true or false, not '{values[name]}'")


def _remote(path):
    return "://" in path


def check_data(values):
    """Each split's data: a file by name, else DATA_DIR/split.* (what run_finetune reads)."""
    folder = values["DATA_DIR"]
    if folder and not _remote(folder) and not os.path.isdir(folder):
        raise Refusal(f"DATA_DIR={folder}: no such directory (--data_dir: a folder with "
                      "train.*, dev.*, test.*)")
    for split in ("train", "dev", "test"):
        name = f"{split.upper()}_FILE"
        if values[name]:
            if not _remote(values[name]) and not os.path.isfile(values[name]):
                raise Refusal(f"{name}={values[name]}: no such file")
            continue
        if split == "test":  # optional
            continue
        if not folder:
            raise Refusal(f"no {split} data: give --data_dir (DATA_DIR) or --{split}_file "
                          f"({name})")
        if _remote(folder):
            continue
        found = [split + extension for extension in DATA_EXTENSIONS
                 if os.path.isfile(f"{folder}/{split}{extension}")]
        if not found:
            raise Refusal(f"DATA_DIR={folder} holds no {split}.* file "
                          f"({' '.join(DATA_EXTENSIONS)}); add one or pass --{split}_file "
                          f"({name})")
        if len(found) > 1:
            raise Refusal(f"DATA_DIR={folder} holds {' '.join(found)}: pass --{split}_file "
                          f"({name}) to say which")


def checkpoint_exists(path):
    """A checkpoint directory, a checkpoint prefix, or a fine-tuning output (or remote)."""
    return _remote(path) or any(os.path.isfile(candidate) for candidate in (
        f"{path}/checkpoint", f"{path}.index", f"{path}/best/checkpoint"))


def check_model(values):
    if not values["AFTER"]:
        raise Refusal("give --after (AFTER): the pretraining output dir or checkpoint to "
                      "compare with BEFORE (empty BEFORE = random init)")
    if not checkpoint_exists(values["AFTER"]):
        raise Refusal(f"AFTER={values['AFTER']} holds no checkpoint. Pretrain first (make "
                      "pretrain, or bash scripts/pretrain.sh --output_dir ...) or point AFTER= "
                      "/ --after at a pretraining output dir or checkpoint prefix")
    if values["BEFORE"] and not checkpoint_exists(values["BEFORE"]):
        raise Refusal(f"BEFORE={values['BEFORE']} is neither a checkpoint directory nor a "
                      "checkpoint prefix")
    for name in ("CONFIG", "VOCAB"):
        if values[name] and not _remote(values[name]) and not os.path.isfile(values[name]):
            raise Refusal(f"{name}={values[name]}: no such file")


def first_run(values):
    """The --run of the first row: BEFORE, else random init."""
    if values["BEFORE"]:
        return f"{values['BEFORE_LABEL'] or 'before pretraining'}={values['BEFORE']}"
    return f"{values['BEFORE_LABEL'] or 'random init'}="


def compare_flags(values, extra):
    """finetune.compare's flags: the data and model settings, the two runs, the rest."""
    return [*tool_flags(DATA_SETTINGS + MODEL_SETTINGS, values), f"--run={first_run(values)}",
            f"--run={values['AFTER_LABEL']}={values['AFTER']}",
            *tool_flags(TRAINING_SETTINGS + COMPARE_SETTINGS, values), *extra]


def compare(run, argv):
    values = read_settings()
    extra = read_options(argv, values, usage, value_options=VALUE_OPTIONS,
                         tool="finetune.compare", words={"--dry_run": ("DRY_RUN", "1")},
                         switches=SWITCHES)
    check_values(values)
    for name in PATH_SETTINGS:
        if not _remote(values[name]):
            values[name] = caller_path(values[name])
    check_data(values)
    check_model(values)
    use_settings(run, values)
    command = run.tool("finetune.compare", *compare_flags(values, extra))
    if not run.dry_run:
        print(f"== fine-tuning comparison ({values['TASK'] or 'default task'}): "
              f"{values['DATA_DIR'] or values['TRAIN_FILE']}"
              + (f" -> {values['OUT']}" if values["OUT"] else ""))
        print(f"   starting points: '{first_run(values)}', "
              f"'{values['AFTER_LABEL']}={values['AFTER']}'; seeds "
              f"{values['SEEDS'] or values['SEED'] or 'default'}", flush=True)
    run.run(command)
    if not run.dry_run and values["OUT"]:
        plot = f"{values['OUT']}/dev_curve.png"
        if not os.path.isfile(plot):
            plot = "none (results.md says why)"
        print(f"== table: {values['OUT']}/results.md   numbers: {values['OUT']}/results.json"
              f"   plot: {plot}")


def main(argv=None):
    script_main(SCRIPT, compare, argv)


if __name__ == "__main__":
    main()
