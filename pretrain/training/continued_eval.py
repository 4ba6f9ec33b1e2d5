"""Did continuing help? The eval of the starting checkpoint and of other texts, beside the end's.

run_pretraining --do_eval scores the trained checkpoint on --eval_input_file. Here:

- with --init_checkpoint, the *starting* checkpoint is scored on the same eval batches, as
  training loads it (the checkpoint's weights; variables it lacks, e.g. a new head, at their
  seeded initial values), its metrics written with the prefix `init_`;
- each --extra_eval_input_file=NAME=GLOB (held-out records of another text, e.g. general
  text when continuing on a domain) is scored too, both checkpoints, as `NAME/<metric>` and
  `NAME/init_<metric>`: what continuing lost there shows as forgetting.

Every eval runs in a graph seeded with --random_seed, or EVAL_SEED when it is unset, so the
random draws of an eval (XLNet's permutations, ELECTRA's generator samples) are the same for
the start and the end. The start is scored by a trainer over an empty folder: with no
checkpoint to restore, the trainer (either training loop) initialises the variables, which
loads --init_checkpoint.

`data_warnings` says when the eval records are the training records (or may share their
documents); pretrain.training.learning_check.continuing_warnings reads the start-and-end
results.
"""
import os
import re
import shutil
import tempfile

from common.cli_options import UserError
from data_gen.records import metadata

EVAL_SEED = 20201
INIT_PREFIX = "init_"
EXTRA_EVAL_HELP = ("NAME=GLOB: also evaluate held-out records of another text (e.g. "
                   "general=data/eval/general*.tfrecord), the trained and (with "
                   "--init_checkpoint) the starting checkpoint; written as NAME/<metric> and "
                   "NAME/init_<metric> to eval_results.txt. Repeatable.")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def parse_extra_evals(specs):
    """[(name, glob)] of --extra_eval_input_file values; UserError naming the bad one."""
    parsed, seen = [], set()
    for spec in specs or ():
        name, sep, pattern = str(spec).partition("=")
        if not sep or not pattern.strip():
            raise UserError(f"--extra_eval_input_file={spec}: expected NAME=GLOB, e.g. "
                            "general=runs/general/data/eval/*.tfrecord")
        if not _NAME.match(name):
            raise UserError(f"--extra_eval_input_file={spec}: NAME {name!r} must start with a "
                            "letter and hold only letters, digits, _ . - (it prefixes the "
                            "metric names in eval_results.txt)")
        if name in seen:
            raise UserError(f"--extra_eval_input_file: NAME {name!r} is given twice")
        seen.add(name)
        parsed.append((name, pattern.strip()))
    return parsed


def eval_seed(random_seed):
    return EVAL_SEED if random_seed is None else random_seed


def evaluate_all(make_estimator, make_input_fn, eval_sets, init_checkpoint, steps,
                 scratch_parent):
    """{metric: value} of every eval: `eval_sets` = [(prefix, pattern)] ("" for the main
    eval, "NAME/" for an extra one). make_estimator(model_dir) -> a trainer seeded for
    eval; its model_dir None = the training output. The start's evals run in a folder made
    under `scratch_parent` and removed after."""
    results = {}
    end = make_estimator(None)
    for prefix, pattern in eval_sets:
        values = end.evaluate(input_fn=make_input_fn(pattern, False), steps=steps,
                              name=prefix.rstrip("/") or None)
        results.update({prefix + key: value for key, value in values.items()})
    if not init_checkpoint:
        return results
    scratch = tempfile.mkdtemp(prefix=".eval_start_", dir=scratch_parent)
    try:
        start = make_estimator(scratch)
        for prefix, pattern in eval_sets:
            values = start.evaluate(input_fn=make_input_fn(pattern, False), steps=steps,
                                    name=prefix.rstrip("/") or None)
            results.update({prefix + INIT_PREFIX + key: value for key, value in values.items()
                            if key != "global_step"})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def data_warnings(train_files, eval_files, sidecars):
    """Warnings about what the eval measures: the training records themselves, or records
    that may share documents with them (data_gen.records.metadata.shares_documents)."""
    if not train_files or not eval_files:
        return []
    if set(eval_files) <= set(train_files):
        return ["the eval records are training records (--eval_input_file is unset or names "
                "training files): the eval scores memory, not held-out text; make the data "
                "with create_pretraining_data --eval_share=0.05 and pass its eval/ files as "
                "--eval_input_file"]
    reasons = {metadata.shares_documents(sidecars.get(train), sidecars.get(held_out))
               for train in train_files for held_out in eval_files}
    reasons.discard(None)
    return [f"the eval records may share documents with the training records: {reason}"
            for reason in sorted(reasons)]


def scratch_parent(output_dir):
    """Where the start's eval folder goes: the output folder when local, else the system's."""
    return output_dir if os.path.isdir(output_dir) else None
