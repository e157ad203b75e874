"""A folder named ``agentenvs`` in the working directory hides the installed package.

A clone of this repository is a folder ``agentenvs/`` holding ``agentenvs/``, ``agents/`` and
``wrappers/``. Run Python from the clone's parent and ``import agentenvs`` finds the clone
itself first: it has no ``__init__.py``, so Python reads it as an empty namespace package
ahead of the installed (editable) one, no env registers, and ``gym.make("SearchQA-v0")``
answers only that the environment does not exist. ``import agents`` imports this module,
which says so and names the fix instead.
"""

from __future__ import annotations

import importlib
from pathlib import Path


class ShadowedPackage(ImportError):
    """A folder without ``__init__.py`` was imported in place of the installed package."""


def check_not_shadowed(name: str = "agentenvs") -> None:
    """Raises :class:`ShadowedPackage` when ``import name`` gives a namespace package (a bare folder).

    Raises:
        ShadowedPackage: naming the folder that hides the package and what to do.
    """
    module = importlib.import_module(name)
    if getattr(module, "__file__", None) is not None:
        return
    folders = ", ".join(str(Path(path)) for path in getattr(module, "__path__", ()))
    raise ShadowedPackage(
        f"`import {name}` found the folder {folders} (no __init__.py), not the installed package: a folder "
        f"named {name!r} in the working directory, such as a clone of the repository run from its parent, "
        f"comes first on sys.path and hides it, so no env is registered. Run from inside the clone "
        f"(cd {name}), or from any other folder, or rename the folder."
    )


check_not_shadowed()
