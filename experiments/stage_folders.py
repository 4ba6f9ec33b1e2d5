"""When a runner reuses a stage's folder and when it refuses to.

A finished stage is reused and a killed pretraining resumes, but only when the folder was
made from the same inputs with the same settings: otherwise reusing it would mix two
experiments, so the runner stops with a message naming the folder and what to do. Each
stage records what it was made with:
  data       its sidecar (data_gen's .meta.json) names the documents it was made from;
  pretrain   experiment_settings.txt, NAME=value lines written when training starts;
  continued  continue_recipe.json, the continuing recipe, written when continuing starts;
  compare    finetune.compare collects finished fine-tunings itself: a runner only lists
             the comparisons it may collect from (--reuse_from).
"""
import difflib
import glob
import json
import os
import re

from common.script_runs import Refusal

SETTINGS_FILE = "experiment_settings.txt"
RECIPE_FILE = "continue_recipe.json"


def _read(path):
    """The file's text without its trailing newlines (as `$(cat path)`), '' when absent."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().rstrip("\n")
    except FileNotFoundError:
        return ""


def _write_atomically(path, text):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(path + ".tmp", path)


def made_from(sidecar, documents):
    """Whether data_gen's sidecar names `documents` (by file name) as its input."""
    pattern = re.compile(r'"input_file": ".*/' + re.escape(os.path.basename(documents)) + '"')
    with open(sidecar, encoding="utf-8") as f:
        return any(pattern.search(line) for line in f)


def settings_text(settings):
    """The NAME=value lines of `settings` ({name: value}, in order)."""
    return "\n".join(f"{name}={value}" for name, value in settings.items())


def check_pretraining_settings(pretrain_dir, settings, row_dir):
    """Refuses a pretraining folder trained with other settings (its experiment_settings.txt
    differs); True when it has a record (its checkpoints are these settings')."""
    if not os.path.isfile(os.path.join(pretrain_dir, SETTINGS_FILE)):
        return False
    recorded = _read(os.path.join(pretrain_dir, SETTINGS_FILE))
    wanted = settings_text(settings)
    if recorded != wanted:
        raise Refusal(f"{pretrain_dir} was trained with other settings: "
                      f"{changed_lines(recorded, wanted)}(< before, > now); move "
                      f"{pretrain_dir} and {row_dir}/compare away to retrain")
    return True


def changed_lines(before, now):
    """'< old > new ' for each changed line, as `diff` lists them."""
    old, new = before.split("\n"), now.split("\n")
    words = []
    for tag, old_start, old_end, new_start, new_end in difflib.SequenceMatcher(
            a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            words += [f"< {line}" for line in old[old_start:old_end]]
            words += [f"> {line}" for line in new[new_start:new_end]]
    return "".join(word + " " for word in words)


def record_pretraining_settings(pretrain_dir, settings):
    """Writes experiment_settings.txt unless the folder has one."""
    path = os.path.join(pretrain_dir, SETTINGS_FILE)
    if not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(settings_text(settings) + "\n")


def has_checkpoints(folder):
    return bool(glob.glob(os.path.join(glob.escape(folder), "model.ckpt-*.index")))


def evaluated_at(folder, steps):
    """Whether folder/eval_results.txt holds the line `global_step = steps`."""
    return f"global_step = {steps}" in _read(os.path.join(folder, "eval_results.txt")).split("\n")


def recipe_json(rate, steps, batch_size, seed, **more):
    """The continuing recipe as continue_recipe.json records it; `more` (e.g. an arm's data
    kind and flags) appended as JSON fields."""
    extra = "".join(f", {json.dumps(name)}: {json.dumps(value)}" for name, value in more.items())
    return (f'{{"learning_rate": "{rate}", "steps": {steps}, "batch_size": {batch_size}, '
            f'"seed": {seed}{extra}}}')


def finished_recipe(folder, recipe):
    """Whether `folder` holds a finished continued run of `recipe` (recipe_json)."""
    return (os.path.isfile(os.path.join(folder, "eval_results.txt"))
            and _read(os.path.join(folder, RECIPE_FILE)) == recipe)


def claim_for_recipe(folder, recipe, dry_run):
    """Refuses a folder holding another recipe's run (continuing into it would resume that
    run under the new schedule); else records `recipe` there (not in a dry run)."""
    recorded = _read(os.path.join(folder, RECIPE_FILE))
    if recorded and recorded != recipe:
        raise Refusal(f"{folder} holds a run continued with {recorded}, not {recipe}: "
                      "rerunning into it would resume that run; set CONTINUE_* to its recipe "
                      "to use it, move the folder away or give another RUNS")
    if not dry_run:
        os.makedirs(folder, exist_ok=True)
        _write_atomically(os.path.join(folder, RECIPE_FILE), recipe)


def is_comparison(folder):
    """Whether `folder` is a finetune.compare output: its own runs/, or only a results.json
    naming the runs it collected from elsewhere."""
    return (os.path.isdir(os.path.join(folder, "runs"))
            or os.path.isfile(os.path.join(folder, "results.json")))


def other_comparisons(runs_dir, own):
    """RUNS/*/compare folders with runs/ of their own, but `own`, in name order."""
    return [folder for folder in sorted(glob.glob(os.path.join(glob.escape(runs_dir), "*",
                                                               "compare")))
            if os.path.isdir(os.path.join(folder, "runs")) and folder != own]
