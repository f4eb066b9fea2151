"""The RL math: no model, no I/O. Every module here is imported with the package, so each registers
its members in the families of :mod:`algos.config.registry` (a new member is a new module here)."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
