"""Old import paths of modules that moved into pretrain's rooms, kept as aliases.

Before pretrain/ had rooms (models/, training/, checkpoints/, interop/), code imported
`from pretrain import modeling` as users of google-research/bert import `modeling`;
`import pretrain.modeling`, `from pretrain.modeling import BertModel` and
`from pretrain import optimization` keep working: the old name is a module whose
attributes are the new module's (common.moved_modules). New code imports the new
path (MOVED's values).
"""
from common.moved_modules import MovedModules

MOVED = {f"pretrain.{old}": f"pretrain.{room}.{old}" for room, olds in {
    "models": ("attention", "encoder", "heads", "layers", "position_embeddings", "task_heads"),
    "models.bert": ("config", "modeling", "span_boundary"),
    "training": ("data_checks", "gradient_accumulation", "input_pipeline", "learning_check",
                 "mixed_precision", "optimization", "pretraining_model_fn", "strategy",
                 "training_hooks", "variable_utils"),
    "checkpoints": ("checkpoint_assets", "checkpoint_compat", "checkpoint_io",
                    "checkpoint_loading"),
    "interop": ("hf_config", "hf_files", "hf_weights"),
}.items() for old in olds}
# BERT's and ALBERT's model code moved into their family folder (pretrain/models/bert/).
MOVED.update({f"pretrain.models.{old}": f"pretrain.models.bert.{new}" for old, new in (
    ("modeling", "modeling"), ("span_boundary", "span_boundary"),
    ("masked_lm_pretraining", "pretraining"))})


_ALIASES = MovedModules("pretrain", MOVED)
install = _ALIASES.install
alias = _ALIASES.alias
