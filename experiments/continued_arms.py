"""The continuing recipe's arms (#66 point 4): the general model continued once per arm on one
task, one finetune.compare of every arm against today's recipe, the arms' table
(`continued_experiment.sh TASK roberta arms`, run by experiments.continued_row).

The arms are data (continuing_arms.json): each a data kind, `static` (the row's data/) or
`train_time` (RUNS/TASK/MODEL/data_train_time/: one unmasked pass, the same held-out
documents), and run_pretraining flags added to the row's recipe (CONTINUE_*). The baseline
arm is today's recipe, the row's own continued/ run. A train-time arm's own eval reads
train-time records (at the final rate), which a run may not mix with static ones, so it is
also scored on the row's static held-out data, and the general text, in ARM/static_eval/: the
same batches as every static arm's eval. ARMS names a session's share; the comparison takes
every arm continued so far and collects finished fine-tunings.
"""
import os

from experiments import data_files, stage_folders
from common.script_runs import Refusal, split_list

ARMS_FILE = os.path.join(data_files.PACKAGE_DIR, "continuing_arms.json")
ARMS_FIELDS = {"baseline": str, "models": list, "decision_comparisons": dict, "arms": dict,
               "why": str}
ARM_FIELDS = {"data": str, "flags": list, "help": str}
DATA_KINDS = ("static", "train_time")
STATIC_EVAL = "static_eval"


def read_arms():
    """continuing_arms.json's fields, each arm's checked; UserError naming a bad one."""
    found = data_files.read_fields(ARMS_FILE, ARMS_FIELDS)
    for name, arm in found["arms"].items():
        data_files.check_fields(f"{ARMS_FILE}: arm {name}", arm, ARM_FIELDS)
        if arm["data"] not in DATA_KINDS:
            raise Refusal(f"{ARMS_FILE}: arm {name}: data must be static or train_time")
    if found["arms"].get(found["baseline"], {}).get("flags", ["missing"]):
        raise Refusal(f"{ARMS_FILE}: baseline {found['baseline']!r} must be an arm without "
                      "flags (today's recipe, the row's own continued run)")
    return found


def chosen(values, model_name):
    """The arms ARMS names (every arm when empty), in the file's order; refuses an unknown
    name or a MODEL the arms are not defined for."""
    arms = read_arms()
    if model_name not in arms["models"]:
        raise Refusal(f"arms: defined for MODEL {', '.join(arms['models'])} (#66's BERT "
                      f"stand-in), not {model_name}: its row's static masks are not the whole "
                      "words train-time masking draws")
    names = split_list(values["ARMS"]) or list(arms["arms"])
    for name in names:
        if name not in arms["arms"]:
            raise Refusal(f"ARMS: unknown arm '{name}': choose among {', '.join(arms['arms'])}")
    return [name for name in arms["arms"] if name in names]


def arm_folder(row, name, baseline):
    return f"{row.row}/continued" if name == baseline else f"{row.row}/arms/{name}"


def _continue_arm(row, name, arm, baseline):
    """The arm continued (or found finished); a train-time arm's static eval."""
    rate, steps = row.values["CONTINUE_LEARNING_RATE"], row.values["CONTINUE_STEPS"]
    out = arm_folder(row, name, baseline)
    if name == baseline:
        row.continue_general(out, rate, steps)
        return
    data = f"{row.row}/data" if arm["data"] == "static" else f"{row.row}/data_train_time"
    row.continue_general(out, rate, steps, data=data, flags=arm["flags"],
                         recipe=_recipe(row, arm))
    if arm["data"] == "train_time":
        static_eval(row, out)


def _recipe(row, arm):
    return row.recipe(row.values["CONTINUE_LEARNING_RATE"], row.values["CONTINUE_STEPS"],
                      data=arm["data"], flags=arm["flags"])


def static_eval(row, out):
    """The continued arm scored on the row's static held-out records and the general text,
    into out/static_eval/ (its init_* are the arm's own weights too), unless done."""
    folder = f"{out}/{STATIC_EVAL}"
    if os.path.isfile(f"{folder}/eval_results.txt"):
        row.stage(f"static held-out eval: finished in {folder}")
        return
    row.stage(f"static held-out eval of {out} into {folder}")
    row.run.run(row.run.tool(
        "pretrain.run_pretraining", f"--init_checkpoint={out}",
        *row.eval_flags(f"{row.row}/data"), f"--output_dir={folder}", "--do_eval",
        *row.eval_settings()))


def arms_stages(row, names):
    """The arms of `names` continued, then one comparison of today's recipe against every arm
    continued so far, then the arms' table."""
    arms = read_arms()
    baseline, run, values = arms["baseline"], row.run, row.values
    if any(arms["arms"][name]["data"] == "train_time" for name in names):
        row.make_data(f"{row.row}/data_train_time", "train-time masking data with the general "
                      f"model's vocab (one unmasked pass, the same {values['EVAL_SHARE']} held "
                      "out)", "--train_time_masking", "--dupe_factor=1")
    for name in [baseline] + [name for name in names if name != baseline]:
        _continue_arm(row, name, arms["arms"][name], baseline)
    compared = [name for name, arm in arms["arms"].items() if name != baseline and (
        name in names or stage_folders.finished_recipe(arm_folder(row, name, baseline),
                                                       _recipe(row, arm)))]
    for name in compared:
        if name not in names and arms["arms"][name]["data"] == "train_time":
            static_eval(row, arm_folder(row, name, baseline))
    decided_at = arms["decision_comparisons"].get(row.task_name)
    if decided_at and decided_at != row.comparison_name:
        run.warn(f"#66's decision reads {row.task_name}'s arms in {decided_at} "
                 f"(continuing_arms.json), this run fine-tunes into {row.comparison_name}: set "
                 "FINETUNE_MAX_TRAIN_EXAMPLES to match")
    row.stage(f"fine-tuning: today's recipe ({baseline}) and {', '.join(compared) or 'no arm'} "
              f"on {row.examples} examples, seeds {values['SEEDS']}")
    arms_dir = f"{row.row}/arms"
    output_dir = f"{arms_dir}/{row.comparison_name}"
    row.compare_reusing_row(
        output_dir, [f"--run={name}={arm_folder(row, name, baseline)}"
                     for name in [baseline] + compared],
        f"{row.row}/sweep/{row.comparison_name}", output_dir)
    row.stage("arms table")
    run.run(run.tool("experiments.arms_table", f"--arms_dir={arms_dir}",
                     f"--comparison={row.comparison_name}",
                     f"--output_file={arms_dir}/{row.table_name}"))
