"""The task registry: `--task` name -> a new task object (finetune.tasks.base.Task).

    task = tasks.get_task("ner")

A new task type is one module here and one line in TASKS.
"""
from common.cli_options import UserError
from finetune.tasks.classification import ClassificationTask
from finetune.tasks.ner import NerTask
from finetune.tasks.pair import PairTask

TASKS = {
    "classification": lambda: ClassificationTask("classification", num_texts=1),
    "pair": PairTask,
    "ner": NerTask,
}


def get_task(name):
    """A fresh task object for `name` (tasks keep per-run state such as the tag scheme)."""
    if name not in TASKS:
        raise UserError(f"--task={name!r}: unknown task; use one of {', '.join(TASKS)}")
    return TASKS[name]()
