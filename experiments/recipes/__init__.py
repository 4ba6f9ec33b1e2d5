"""The experiment's rows as package data: one JSON file per row, read by
finetune.experiment_recipes."""
