"""The experiment's rows as package data: one JSON file per row, read by
experiments.recipe_files."""
