"""Old import paths of modules that moved into pretrain's rooms, kept as aliases.

Before pretrain/ had rooms (models/, training/, checkpoints/, interop/), code imported
`from pretrain import modeling` as users of google-research/bert import `modeling`;
`import pretrain.modeling`, `from pretrain.modeling import BertModel` and
`from pretrain import optimization` keep working: the old name is a module whose
attributes are the new module's. New code imports the new path (MOVED's values).
"""
import importlib
import importlib.abc
import importlib.util
import sys
import types

MOVED = {f"pretrain.{old}": f"pretrain.{room}.{old}" for room, olds in {
    "models": ("attention", "config", "encoder", "heads", "layers", "modeling",
               "position_embeddings", "span_boundary", "task_heads"),
    "training": ("data_checks", "gradient_accumulation", "input_pipeline", "learning_check",
                 "mixed_precision", "optimization", "pretraining_model_fn", "strategy",
                 "training_hooks", "variable_utils"),
    "checkpoints": ("checkpoint_assets", "checkpoint_compat", "checkpoint_io",
                    "checkpoint_loading"),
    "interop": ("hf_config", "hf_files", "hf_weights"),
}.items() for old in olds}


class _Alias(types.ModuleType):
    """`pretrain.OLD`: every attribute read from the module it moved to."""

    def __init__(self, name, target):
        super().__init__(name, f"Moved to {target.__name__}: {target.__doc__ or ''}")
        self.__dict__["_target"] = target
        self.__dict__["__all__"] = list(getattr(target, "__all__", None) or [
            name for name in vars(target) if not name.startswith("_")])

    def __getattr__(self, attribute):
        return getattr(self.__dict__["_target"], attribute)

    def __dir__(self):
        return dir(self.__dict__["_target"])


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `pretrain.OLD` for the names in MOVED (after the real files: a module
    that is still a file, like pretrain.import_hf, is found first)."""

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return _Alias(spec.name, importlib.import_module(MOVED[spec.name]))

    def exec_module(self, module):
        pass


def install():
    """Adds the finder once (pretrain/__init__.py calls it)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.append(_AliasFinder())


def alias(name):
    """`pretrain.<name>` for `from pretrain import <name>` of a moved module (PEP 562)."""
    full = f"pretrain.{name}"
    if full not in MOVED:
        raise AttributeError(f"module 'pretrain' has no attribute {name!r}")
    return importlib.import_module(full)
