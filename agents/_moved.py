"""Old import paths of modules that moved into ``agents``' subpackages, kept working with a warning.

``import agents.trainer`` still gives :mod:`agents.loop.trainer` (the same module object, so
monkeypatching either name patches both) and warns once with the new path. A finder on
``sys.meta_path`` answers only for the names in :data:`MOVED`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

MOVED: dict[str, str] = {
    "agents.collector": "agents.loop.collector",
    "agents.trainer": "agents.loop.trainer",
    "agents.evaluation": "agents.loop.evaluation",
    "agents.checkpoint": "agents.runs.checkpoint",
    "agents.credit_record": "agents.runs.credit_record",
    "agents.curves": "agents.reports.curves",
    "agents.plotting": "agents.reports.plotting",
    "agents.quickstart": "agents.cli.quickstart",
}
"""Old module path -> new module path."""


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; import it from there", DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its new name."""


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Puts the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())  # before path finders: a stale file must not win
