"""Package data: the continued experiment's tasks, one JSON file each (TASK.json), read by
experiments.continued_row."""
