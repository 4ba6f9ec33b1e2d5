"""The lab above the task layer (finetune/): the experiments that answer "did pretraining,
or continuing, help?". The rows are data, one file each (recipes/NAME.json: a from-scratch
row's model, data and pretraining); the tables are rendered here from the runs' own
files: `from_scratch_table` (scripts/lcqmc_experiment.sh's rows), `continued_table`
(scripts/continued_experiment.sh's rows and sweeps); `recipe_files` reads the rows.
"""
