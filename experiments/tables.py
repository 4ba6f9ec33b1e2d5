"""The README's and docs' result tables, rendered from the rows' own numbers.

    python -m experiments.tables            # prints every table
    python -m experiments.tables --write    # replaces them in README.md and docs/experiments.md

Each table sits in its file between `<!-- table:NAME -->` and `<!-- /table:NAME -->`. Their
numbers are committed under experiments/measured/:
  from_scratch.json  the from-scratch rows as experiments.from_scratch_table collects them
                     from RUNS (its --summary_file writes this file): docs/experiments.md's
                     table of the current rows, rendered by from_scratch_table itself;
  readme.json        README.md's Results rows: a from-scratch row names its recipe (its Δ and
                     verdict come from from_scratch.json), another row gives its numbers;
  continued_*.json   docs/experiments.md's continued tables, one file per table (its name),
                     as experiments.continued_table's --summary_file writes the rows of a
                     RUNS folder or a sweep, rendered by continued_table itself (the tables of
                     one budget without its 'fine-tuned on' column, a sweep's without its
                     Largest Δ line, as the docs give them);
  arms_*.json        a task's #66 arms comparison (experiments.arms_table's --summary_file),
                     rendered by arms_table without its 'what' column; #66's decision reads
                     them too.
"""
import dataclasses
import functools
import os
import re

from common import cli_options
from common.cli_options import UserError, option
from common.file_utils import write_text_atomically
from experiments import arms_table, continued_table, from_scratch_table
from experiments.data_files import MEASURED_DIR, read_measured
from common.script_runs import REPO_ROOT
from finetune import verdicts

README_HEADER = ["| row | Δ [95% CI] | verdict | caveat |", "|---|---:|---|---|"]


def _points(fraction):
    """A difference in points, signed, with the typographic minus the README uses."""
    return f"{100 * fraction:+.2f}".replace("-", "−")


def readme_table(measured_dir):
    """README.md's Results table."""
    by_recipe = {row["recipe"]: row for row in read_measured(measured_dir, "from_scratch")}
    lines = list(README_HEADER)
    for row in read_measured(measured_dir, "readme")["rows"]:
        numbers = row
        if "recipe" in row:
            if row["recipe"] not in by_recipe:
                raise UserError(f"{measured_dir}/readme.json: row {row['row']!r} names recipe "
                                f"{row['recipe']!r}, which from_scratch.json does not hold")
            numbers = by_recipe[row["recipe"]]["difference"]
        verdict = numbers["verdict"]
        # a from-scratch row without a verdict says why in docs/experiments.md; here: none
        verdict = verdicts.verdict_cell(verdict) if verdict in verdicts.STANDING or \
            "recipe" not in row else "none"
        lines.append(f"| {row['row']} | {_points(numbers['difference'])} "
                     f"[{_points(numbers['low'])}, {_points(numbers['high'])}] | {verdict} "
                     f"| {row['caveat']} |")
    return "\n".join(lines)


def from_scratch_rows_table(measured_dir):
    """docs/experiments.md's table of the from-scratch rows, as from_scratch_table renders it."""
    return from_scratch_table.markdown_table(read_measured(measured_dir, "from_scratch"))


def _continued(name, render):
    """Renders measured/NAME.json, a continued_table summary, with `render`."""
    return lambda measured_dir: render(read_measured(measured_dir, name))


DOCS = os.path.join("docs", "experiments.md")
_ONE_BUDGET = functools.partial(continued_table.markdown_table, budget_column=False)
# docs/experiments.md's continued tables: each renders measured/NAME.json with its renderer
CONTINUED = {"continued_sweep_lcqmc_first_build": continued_table.sweep_markdown_table,
             "continued_sweep_lcqmc": continued_table.sweep_markdown_table,
             "continued_sweep_lcqmc_train40000": continued_table.sweep_markdown_table,
             "continued_sweep_chnsenticorp": continued_table.sweep_markdown_table,
             "continued_sweep_msra": continued_table.sweep_markdown_table,
             "continued_lcqmc": _ONE_BUDGET,
             "continued_lcqmc_train40000": continued_table.markdown_table,
             "continued_chnsenticorp": _ONE_BUDGET,
             "continued_msra": _ONE_BUDGET,
             "continued_albert": _ONE_BUDGET}
# docs/experiments.md's arms tables (#66): table arms_TASK of each task measured so far
ARMS_TASKS = ("chnsenticorp",)


def _arms(task):
    return lambda measured_dir: "\n".join(arms_table.table_lines(
        arms_table.read_summary(arms_table.summary_path(measured_dir, task)),
        what_column=False))


TABLES = {"results": ("README.md", readme_table),
          "from_scratch": (DOCS, from_scratch_rows_table),
          **{name: (DOCS, _continued(name, render)) for name, render in CONTINUED.items()},
          **{f"arms_{task}": (DOCS, _arms(task)) for task in ARMS_TASKS}}


def replace_table(text, name, table, path):
    """`text` with the lines between table NAME's markers replaced by `table`."""
    pattern = re.compile(rf"(<!-- table:{name} -->\n).*?(\n<!-- /table:{name} -->)", re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise UserError(f"{path}: expected one <!-- table:{name} --> ... <!-- /table:{name} --> "
                        "pair of markers")
    return pattern.sub(lambda match: match.group(1) + table + match.group(2), text)


def marked_table(text, name, path):
    """The lines between table NAME's markers in `text`."""
    match = re.search(rf"<!-- table:{name} -->\n(.*?)\n<!-- /table:{name} -->", text, re.DOTALL)
    if match is None:
        raise UserError(f"{path}: no <!-- table:{name} --> ... <!-- /table:{name} --> markers")
    return match.group(1)


@dataclasses.dataclass
class TablesOptions:
    """The flags of `python -m experiments.tables`."""
    write: bool = option(False, "Replace the tables in their files (else print them).")
    measured_dir: str = option(MEASURED_DIR, "The folder of the tables' numbers "
                               "(from_scratch.json, readme.json, continued_*.json, "
                               "arms_*.json).")
    repo_dir: str = option(REPO_ROOT, "The folder of README.md and docs/.")


def _run(options):
    for name, (relative, render) in TABLES.items():
        table = render(options.measured_dir)
        path = os.path.join(options.repo_dir, relative)
        if not options.write:
            print(f"<!-- table:{name} --> ({relative})\n{table}\n")
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = replace_table(text, name, table, path).split("\n")
        write_text_atomically(path, lines[:-1] if lines[-1] == "" else lines)
        print(f"wrote the {name} table of {path}")


def main(argv=None):
    cli_options.run_main(TablesOptions, _run, argv, expected=(OSError,))


if __name__ == "__main__":
    main()
