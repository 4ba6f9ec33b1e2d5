r"""The reference experiment's rows, one JSON file each: experiments/recipes/NAME.json.

A row's file holds everything that makes it that row: its label in the table, its order,
the model config (a shipped config's name, common.model_configs), how LCQMC's text becomes
documents, its data_gen and run_pretraining flags and its pretraining defaults (steps, optimizer, learning rate, bias correction, warmup),
with why they were chosen. scripts/lcqmc_experiment.sh reads a row through

    python -m experiments.recipe_files --recipe=NAME     # bash assignments to eval
    python -m experiments.recipe_files --list             # the names, in table order
    python -m experiments.recipe_files --usage            # one help line per row

and experiments.from_scratch_table takes the labels and the order from the same files. A new
row is a new file.
"""
import dataclasses
import glob
import json
import os
import shlex
import textwrap

from common import cli_options
from common.cli_options import UserError, option
from common.model_configs import shipped_names, shipped_path

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
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a readable JSON file ({error})") from None
    values = dict(OPTIONAL, **data)
    unknown = sorted(set(values) - set(FIELDS))
    missing = sorted(set(FIELDS) - set(values))
    if unknown or missing:
        raise UserError(f"{path}: " + "; ".join(filter(None, [
            unknown and f"unknown field(s) {', '.join(unknown)}",
            missing and f"missing field(s) {', '.join(missing)}"])) + f"; the fields are "
            f"{', '.join(FIELDS)}")
    for field, kind in FIELDS.items():
        if not isinstance(values[field], kind):
            raise UserError(f"{path}: {field} must be a {kind.__name__}")
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


def shell_assignments(recipe):
    """Bash lines that set RECIPE_* and DEFAULT_PRETRAIN_* for `recipe`."""
    def array(values):
        return "(" + " ".join(shlex.quote(value) for value in values) + ")"
    lines = [f"RECIPE_LABEL={shlex.quote(recipe.label)}",
             f"RECIPE_CONFIG={shlex.quote(shipped_path(recipe.model_config))}",
             f"RECIPE_DOCUMENTS={DOCUMENTS[recipe.documents]}",
             f"RECIPE_DATA_FLAGS={array(recipe.data_flags)}",
             f"RECIPE_PRETRAIN_FLAGS={array(recipe.pretrain_flags)}",
             f"RECIPE_SIMILAR_WORDS={int(recipe.similar_words)}"]
    lines += [f"DEFAULT_PRETRAIN_{field.upper()}={shlex.quote(str(recipe.pretraining[field]))}"
              for field in PRETRAINING_FIELDS]
    return lines


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


@dataclasses.dataclass
class RecipeOptions:
    """The flags of `python -m experiments.recipe_files`."""
    recipe: str = option("", "Print the bash assignments of this recipe.")
    list: bool = option(False, "Print the recipes' names in table order.")
    usage: bool = option(False, "Print one help line per recipe and its defaults.")


def _run(options):
    if options.list:
        print(" ".join(recipe.name for recipe in all_recipes()))
    elif options.usage:
        print("\n".join(usage_lines()))
    elif options.recipe:
        print("\n".join(shell_assignments(get_recipe(options.recipe))))
    else:
        raise UserError("give --recipe=NAME, --list or --usage")


def main(argv=None):
    cli_options.run_main(RecipeOptions, _run, argv)


if __name__ == "__main__":
    main()
