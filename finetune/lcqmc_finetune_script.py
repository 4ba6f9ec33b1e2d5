"""scripts/lcqmc_finetune.sh (`make lcqmc-finetune`): did pretraining help, on LCQMC?
scripts/finetune.sh (finetune.finetune_script) with LCQMC's settings: the pair task on
LCQMC_DIR, from BEFORE (or random init) and from AFTER, then the table.

    python -m finetune.lcqmc_finetune_script [OPTIONS] [-- FLAGS_FOR_finetune.compare...]

--lcqmc_dir (LCQMC_DIR) and --help are this script's; every other option and setting is
finetune.sh's, by the same name.
"""
import os
import sys

from common.script_options import assignments, script_main
from common.script_runs import (EXIT_REFUSED, REPO_ROOT, SHARED_DATA, Refusal, caller_path,
                                setting)
from finetune import finetune_script

SCRIPT = "lcqmc_finetune.sh"
# LCQMC's task, always, and its presets for the finetune.sh settings left unset.
LCQMC_TASK = "pair"
LCQMC_SETTINGS = {"MAX_SEQ_LENGTH": "64"}
# Where the comparison starts from and writes to, unless given.
LCQMC_PATHS = {"AFTER": f"{REPO_ROOT}/output/demo/pretrain", "OUT": f"{REPO_ROOT}/results/lcqmc"}
SPLITS = ("train.txt", "dev.txt", "test.txt")


def usage(lcqmc_dir):
    return f"""Usage: bash scripts/lcqmc_finetune.sh [OPTIONS] [-- EXTRA_FLAGS_FOR_finetune.compare...]

Fine-tunes a sentence-pair classifier on LCQMC-format data from each starting
point, BEFORE (empty = random initialisation) and AFTER, with the same seeds
and settings, and prints the table (starting point, dev and test accuracy,
the difference to the first row). It is scripts/finetune.sh with LCQMC's
settings: every option and setting of finetune.sh (below) works here too.

  --lcqmc_dir D          LCQMC_DIR           train.txt, dev.txt, test.txt  [{lcqmc_dir}]
  -h, --help                                 this text

Always --task {LCQMC_TASK} --data_dir LCQMC_DIR. LCQMC's presets, for the settings
left unset: {assignments(LCQMC_SETTINGS)}
  and the paths: {assignments(LCQMC_PATHS)}

LCQMC format: one pair per line, text_a<TAB>text_b<TAB>label (label 1 =
same meaning, 0 = not), UTF-8, files train.txt, dev.txt and test.txt.
A model whose config sets "layer_norm_cond_size": C (conditional LayerNorm)
needs a 4th field, the condition, on every line:
text_a<TAB>text_b<TAB>label<TAB>COND, COND being one class id in [0, C) (fed
as a one-hot vector) or C comma-separated numbers (e.g. 2 or 0.5,0,1 for C=3).
Examples:
  make lcqmc-finetune AFTER=output/lcqmc_pretrain VOCAB=output/lcqmc_vocab.txt
  bash scripts/lcqmc_finetune.sh --after output/pretrain --max_train_examples 20000 --epochs 1

----- scripts/finetune.sh --help -----
{finetune_script.usage(finetune_script.read_settings())}"""


def missing_data(lcqmc_dir, missing):
    return f"""{SCRIPT}: no LCQMC data at {lcqmc_dir} (missing: {' '.join(missing)}).
Put LCQMC there (or pass LCQMC_DIR=/path/to/lcqmc / --lcqmc_dir): three files
train.txt, dev.txt and test.txt, one pair per line in the format
    text_a<TAB>text_b<TAB>label        (label 1 = same meaning, 0 = not)
e.g. 喜欢打篮球的男生喜欢什么样的女生<TAB>爱打篮球的男生喜欢什么样的女生<TAB>1
LCQMC (Liu et al., COLING 2018) is available from its authors and in Chinese NLP
benchmark collections. A header line is tolerated; malformed lines are reported."""


def read_arguments(argv, lcqmc_dir):
    """(LCQMC_DIR, the arguments for finetune.sh): --lcqmc_dir and --help are this script's,
    --data_dir and --task are refused, the rest is passed on as given."""
    forwarded, args = [], list(argv)
    while args:
        option = args.pop(0)
        if option in ("-h", "--help"):
            print(usage(lcqmc_dir), flush=True)
            sys.exit(0)
        if option == "--":
            return lcqmc_dir, forwarded + [option, *args]
        if option.startswith("--lcqmc_dir="):
            lcqmc_dir = option.partition("=")[2]
        elif option == "--lcqmc_dir":
            if not args:
                raise Refusal("--lcqmc_dir needs a value (see --help)")
            lcqmc_dir = args.pop(0)
        elif option.partition("=")[0] in ("--data_dir", "--task"):
            raise Refusal(f"{option.partition('=')[0]} is LCQMC's here: use --lcqmc_dir "
                          "(LCQMC_DIR), or scripts/finetune.sh for other data")
        else:
            forwarded.append(option)
    return lcqmc_dir, forwarded


def presets(lcqmc_dir):
    """finetune.sh's first options: the task, the data and the presets of the settings the
    environment leaves unset (an option given later wins)."""
    options = ["--task", LCQMC_TASK, "--data_dir", lcqmc_dir]
    for name, value in {**LCQMC_SETTINGS, **LCQMC_PATHS}.items():
        if not setting(name):
            options += [f"--{name.lower()}", value]
    return options


def lcqmc_finetune(argv):
    lcqmc_dir, forwarded = read_arguments(argv, setting("LCQMC_DIR", f"{SHARED_DATA}/lcqmc"))
    lcqmc_dir = caller_path(lcqmc_dir or ".")
    missing = [name for name in SPLITS if not os.path.isfile(f"{lcqmc_dir}/{name}")]
    if missing:
        print(missing_data(lcqmc_dir, missing), file=sys.stderr, flush=True)
        sys.exit(EXIT_REFUSED)
    finetune_script.main(presets(lcqmc_dir) + forwarded)


def main(argv=None):
    script_main(SCRIPT, lambda _, args: lcqmc_finetune(args), argv)


if __name__ == "__main__":
    main()
