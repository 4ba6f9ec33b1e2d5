"""What the stages below pretrain (data_gen, common) know about the model families: the
data-side registry, keyed by a config's `model_type` as pretrain.models.registry is (each
family listed in both; tests/pretrain/models/test_model_registry.py checks they agree).

LENGTH_RULES: how a family bounds its input length (common.model_limits):
  TRAINED_POSITIONS  a table of max_position_embeddings trained positions
  RELATIVE_POSITIONS sinusoids of distances: no table, no limit
"""
TRAINED_POSITIONS = "trained positions"
RELATIVE_POSITIONS = "relative positions"

LENGTH_RULES = {
    "bert": TRAINED_POSITIONS,
    "albert": TRAINED_POSITIONS,
    "electra": TRAINED_POSITIONS,
    "xlnet": RELATIVE_POSITIONS,
}


def length_rule(model_type):
    """The length rule of a config's model_type (None or an unknown one: Google's configs,
    which have trained positions)."""
    key = model_type.lower() if isinstance(model_type, str) else "bert"
    return LENGTH_RULES.get(key, TRAINED_POSITIONS)
