r"""The reference experiment's rows, one JSON file each: experiments/recipes/NAME.json.

A row's file holds everything that makes it that row: its label in the table, its order,
the model config (a shipped config's name, common.model_configs), how LCQMC's text becomes
documents, its data_gen and run_pretraining flags and its pretraining defaults (steps,
optimizer, learning rate, bias correction, warmup), with why they were chosen.
experiments.from_scratch_row runs a row from its file, and experiments.from_scratch_table
takes the labels and the order from the same files. A new row is a new file.
"""
import dataclasses
import glob
import os
import textwrap

from common.cli_options import UserError
from common.model_configs import shipped_names, shipped_path
from experiments.data_files import read_fields

# Package data: the files ship in the wheel beside this module's package.
RECIPES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes")
DOCUMENTS = {"paraphrase pairs": "pairs", "one question each": "sentences"}
PRETRAINING_FIELDS = ("steps", "optimizer", "learning_rate", "bias_correction", "warmup_steps")
FIELDS = {"label": str, "order": int, "description": str, "model_config": str,
          "documents": str, "data_flags": list, "pretrain_flags": list, "pretraining": dict,
          "why": str, "similar_words": bool}
OPTIONAL = {"similar_words": False}


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One row of the experiment (see the module doc)."""
    name: str
    label: str
    order: int
    description: str
    model_config: str
    documents: str
    data_flags: tuple
    pretrain_flags: tuple
    pretraining: dict
    why: str
    similar_words: bool


def read_recipe(path):
    """The Recipe of recipes/NAME.json; UserError naming the file and field."""
    name = os.path.splitext(os.path.basename(path))[0]
    values = read_fields(path, FIELDS, OPTIONAL)
    if not shipped_path(values["model_config"]):
        raise UserError(f"{path}: model_config {values['model_config']!r} is not a shipped "
                        f"config; one of {', '.join(shipped_names())}")
    if values["documents"] not in DOCUMENTS:
        raise UserError(f"{path}: documents must be one of {', '.join(map(repr, DOCUMENTS))}")
    if sorted(values["pretraining"]) != sorted(PRETRAINING_FIELDS):
        raise UserError(f"{path}: pretraining must hold exactly {', '.join(PRETRAINING_FIELDS)}")
    values["data_flags"] = tuple(values["data_flags"])
    values["pretrain_flags"] = tuple(values["pretrain_flags"])
    return Recipe(name=name, **values)


def all_recipes(recipes_dir=RECIPES_DIR):
    """Every recipe, in table order."""
    recipes = [read_recipe(path) for path in glob.glob(os.path.join(recipes_dir, "*.json"))]
    return sorted(recipes, key=lambda recipe: (recipe.order, recipe.name))


def get_recipe(name, recipes_dir=RECIPES_DIR):
    path = os.path.join(recipes_dir, f"{name}.json")
    if not os.path.isfile(path):
        names = " ".join(recipe.name for recipe in all_recipes(recipes_dir))
        raise UserError(f"unknown RECIPE '{name}': choose one of {names}")
    return read_recipe(path)


def usage_lines():
    """'  NAME      description' per recipe, then its pretraining defaults."""
    lines = []
    for recipe in all_recipes():
        defaults = " ".join(f"{field.upper()}={recipe.pretraining[field]}"
                            for field in PRETRAINING_FIELDS)
        lines += textwrap.wrap(recipe.description, width=92, initial_indent=f"  {recipe.name:<9} ",
                               subsequent_indent=" " * 12)
        lines.append(f"  {'':<9} pretraining: {defaults}")
    return lines
