"""The lab above the task layer (finetune/): the experiments that answer "did pretraining,
or continuing, help?".

Data, one file each (package data): recipes/NAME.json (a from-scratch row: model, data,
pretraining; read by `recipe_files`), tasks/TASK.json (a continued row's task: its text and
fine-tuning budget), general/NAME.json (the general stand-in models), continuing.json (the
continuing recipe and its sweep grid), measured/*.json (the rows' numbers the README's and
docs' tables are rendered from).

Runners, one module each, each exec'd by the scripts/*.sh of the same role and taking the
same arguments (`--help`, `--dry_run`, positional) and settings (environment variables by
the scripts' names; `common.script_runs`):
    python -m experiments.from_scratch_row RECIPE        scripts/lcqmc_experiment.sh
    python -m experiments.continued_row TASK MODEL [sweep]   scripts/continued_experiment.sh
    python -m experiments.general_models                 scripts/make_general_models.sh
    python -m experiments.demo                           scripts/demo.sh (make demo)
`stage_folders` holds their reuse and refusal rules, `continued_sweep` the sweep.

Tables: `from_scratch_table` and `continued_table` render the runs' own files; `tables`
renders README.md's and docs/experiments.md's tables from measured/.
"""
