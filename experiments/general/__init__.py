"""Package data: the general stand-in models, one JSON file each (NAME.json), read by
experiments.general_models and experiments.continued_row."""
