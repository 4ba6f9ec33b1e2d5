"""The longest input a model config allows: the one rule every stage checks lengths by.

A model with n = `max_position_embeddings` trained positions takes inputs of
up to n tokens. With hierarchical position embeddings (`"hierarchical_position":
alpha` in the config, bert4keras's option) the same [n, W] table covers up to
n * n positions. data_gen (`--bert_config_file`), pretraining's data checks,
fine-tuning and the encoder all ask `length_error()`, so the limit and its
message are written once. Pure Python: it reads the two fields from the
config dict (a parsed bert_config.json), so data_gen needs no TensorFlow.
"""
import json

from common import model_configs, model_families
from common.file_utils import open_input

# google-research/bert's default, as pretrain.models.config's (a config without the field).
DEFAULT_MAX_POSITION_EMBEDDINGS = 512
# The alpha the messages suggest (bert4keras's and the example).
SUGGESTED_ALPHA = 0.4


def longest_input(config):
    """Longest sequence the config allows: n, or n * n with hierarchical positions.

    Args:
      config: dict with `max_position_embeddings` (n) and optionally
        `hierarchical_position` (alpha, or None/absent when off); a config of a family
        with relative positions (common.model_families) has no limit: None.
    """
    if model_families.length_rule(config.get("model_type")) == model_families.RELATIVE_POSITIONS:
        return None
    n = config.get("max_position_embeddings", DEFAULT_MAX_POSITION_EMBEDDINGS)
    return n * n if config.get("hierarchical_position") else n


def length_error(length, config, source=None, name="--max_seq_length"):
    """None when `length` fits the config, else the one-line message saying what to do.

    Args:
      length: the requested sequence length (int).
      config: dict as for `longest_input`.
      source: where the config came from, e.g. "--bert_config_file=cfg.json"
        (named in the message when given).
      name: what `length` is: a flag ("--max_seq_length", shown as
        --max_seq_length=600) or words ("the sequence length", shown as
        "the sequence length 600").
    """
    limit = longest_input(config)
    if limit is None or length <= limit:
        return None
    n = config.get("max_position_embeddings", DEFAULT_MAX_POSITION_EMBEDDINGS)
    where = f" ({source})" if source else ""
    shown = f"{name}={length}" if name.startswith("-") else f"{name} {length}"
    alpha = config.get("hierarchical_position")
    if alpha:
        return (f"{shown} exceeds the model's max_position_embeddings={n}{where} even "
                f"with \"hierarchical_position\": {alpha}, which allows at most n*n = {limit} "
                f"positions; lower {name}")
    return (f"{shown} exceeds the model's max_position_embeddings={n}{where}; lower "
            f"{name}, or set \"hierarchical_position\": {SUGGESTED_ALPHA} in the model config "
            f"(hierarchical position embeddings, same variables) to allow up to n*n = {n * n} "
            "positions")


def read_config(path):
    """The model config JSON at `path` as a dict; ValueError naming the file and field."""
    try:
        with open_input(path, "r") as reader:
            text = reader.read()
    except Exception as err:  # pylint: disable=broad-except  # OSError, or tf.errors (gs://)
        raise ValueError(f"cannot read model config {path}: "
                         f"{getattr(err, 'strerror', None) or err}; "
                         f"{model_configs.missing_hint()}") from None
    try:
        config = json.loads(text)
    except ValueError as err:  # json.JSONDecodeError
        raise ValueError(f"model config {path} is not valid JSON ({err})") from None
    if not isinstance(config, dict):
        raise ValueError(f"model config {path} must be a JSON object")
    n = config.get("max_position_embeddings", DEFAULT_MAX_POSITION_EMBEDDINGS)
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"model config {path}: max_position_embeddings={n!r} must be a "
                         "positive integer")
    alpha = config.get("hierarchical_position")
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))
                              or not 0.0 < alpha < 1.0):
        raise ValueError(f"model config {path}: hierarchical_position={alpha!r} must be a "
                         "number in (0, 1), e.g. 0.4 (or null: off)")
    return config
