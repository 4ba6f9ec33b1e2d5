"""The model configs shipped in the package, one JSON file each beside this module.

Every `--bert_config_file` flag takes a path or the name of one of these, so a user who
installed the wheel (no checkout, no `configs/` folder) still runs the documented
commands: `--bert_config_file=roberta_zh_base`. A path that exists always wins over a
name. `python -m common.model_configs` lists the names with each model's shape.
"""
import json
import os

SHIPPED_DIR = os.path.dirname(os.path.abspath(__file__))


def shipped_names():
    """The names of the shipped configs (file names without .json), sorted."""
    return sorted(name[:-len(".json")] for name in os.listdir(SHIPPED_DIR)
                  if name.endswith(".json"))


def shipped_path(name):
    """The file of shipped config `name` ("roberta_zh_base" or "roberta_zh_base.json"), or
    None when no shipped config has that name."""
    stem = name[:-len(".json")] if name.endswith(".json") else name
    return os.path.join(SHIPPED_DIR, stem + ".json") if stem in shipped_names() else None


def resolve_config_file(value):
    """The file `--bert_config_file=value` means: `value` itself when it is a path that
    exists, is remote (gs://...) or names no shipped config; else the shipped file."""
    if not value or "://" in value or os.path.exists(value) or os.sep in value:
        return value
    return shipped_path(value) or value


def missing_hint():
    """The sentence a 'cannot read model config' error ends with."""
    return "give a path, or one of the shipped configs: " + ", ".join(shipped_names())


def main():
    """Prints one line per shipped config: its name, then its model_type and sizes."""
    for name in shipped_names():
        with open(shipped_path(name), encoding="utf-8") as reader:
            config = json.load(reader)
        shape = " ".join(f"{key}={config[key]}" for key in (
            "model_type", "num_hidden_layers", "hidden_size", "vocab_size",
            "max_position_embeddings") if key in config)
        print(f"{name:<28} {shape}")


if __name__ == "__main__":
    main()
