"""Old import paths of modules that moved into a package's rooms, kept as aliases.

A package lists what moved in a table {old dotted name: new dotted name} and
installs a `MovedModules` for it (pretrain/__init__.py, data_gen/__init__.py):
`import PKG.OLD`, `from PKG import OLD` and `from PKG.OLD import X` then give a
module whose attributes are the new module's. Real files come first (the finder
is appended to sys.meta_path), so a kept `python -m` shim at an old path wins.
New code imports the new path.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import types


class _Alias(types.ModuleType):
    """`PKG.OLD`: every attribute read from the module it moved to."""

    def __init__(self, name, target):
        super().__init__(name, f"Moved to {target.__name__}: {target.__doc__ or ''}")
        self.__dict__["_target"] = target
        self.__dict__["__all__"] = list(getattr(target, "__all__", None) or [
            name for name in vars(target) if not name.startswith("_")])

    def __getattr__(self, attribute):
        return getattr(self.__dict__["_target"], attribute)

    def __dir__(self):
        return dir(self.__dict__["_target"])


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The aliases of one package: finds `PKG.OLD` for the old names in `moved`."""

    def __init__(self, package, moved):
        self.package = package
        self.moved = moved

    def find_spec(self, name, path=None, target=None):
        if name not in self.moved:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return _Alias(spec.name, importlib.import_module(self.moved[spec.name]))

    def exec_module(self, module):
        pass

    def install(self):
        """Adds this package's finder once (the package's __init__ calls it)."""
        if not any(isinstance(finder, MovedModules) and finder.package == self.package
                   for finder in sys.meta_path):
            sys.meta_path.append(self)

    def alias(self, name):
        """`PKG.<name>` for `from PKG import <name>` of a moved module (the package's
        PEP 562 __getattr__)."""
        full = f"{self.package}.{name}"
        if full not in self.moved:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        return importlib.import_module(full)
