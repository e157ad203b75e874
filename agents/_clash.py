"""The one other ``agents``: the OpenAI Agents SDK (``openai-agents``) installs a top-level
``agents`` package too.

Both cannot live in one environment: installed into the same ``site-packages/agents/``, the
second install overwrites the first one's files (``agent.py`` is in both) and uninstalling
either deletes files of the other. ``import agents`` (this package) therefore imports this
module first, which checks whether such a distribution is installed:

- its files are in this package's folder: :class:`AgentsPackageClash` (an ``ImportError``)
  says so and what to do, instead of a confusing error from a half-overwritten module;
- it is installed elsewhere (this package comes first on ``sys.path``, e.g. a source
  checkout): :class:`AgentsPackageClashWarning`, because code written for the SDK gets this
  package in this process.

The fix either way: separate virtual environments for agentenvs and the SDK. The check reads
the metadata of the named distributions only (a few file lookups, not a scan of every
installed package).
"""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLASHING_DISTRIBUTIONS: tuple[str, ...] = ("openai-agents",)
"""Distributions known to install a top-level ``agents`` package of their own."""

FIX = (
    "Install agentenvs and the OpenAI Agents SDK in separate virtual environments "
    "(python -m venv .venv-agentenvs && .venv-agentenvs/bin/pip install agentenvs); "
    "here, `pip uninstall {name} agentenvs` and then `pip install agentenvs` repairs this one."
)


class AgentsPackageClash(ImportError):
    """Another distribution's ``agents`` files share this package's folder: neither works reliably."""


class AgentsPackageClashWarning(UserWarning):
    """Another distribution's ``agents`` package is installed, hidden by this one in this process."""


def check_agents_package(
    package_dir: str | Path,
    *,
    distribution: Callable[[str], Any] = importlib.metadata.distribution,
) -> None:
    """Raises or warns when a :data:`CLASHING_DISTRIBUTIONS` member is installed (see the module docstring).

    Args:
        package_dir: The folder of this ``agents`` package.
        distribution: Looks a distribution up by name (``importlib.metadata.distribution``;
            tests pass a fake).

    Raises:
        AgentsPackageClash: when the other distribution's ``agents`` files are in ``package_dir``.
    """
    ours = Path(package_dir).resolve()
    for name in CLASHING_DISTRIBUTIONS:
        try:
            found = distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        theirs = _agents_folder(found)
        version = getattr(found, "version", "?")
        if theirs == ours:
            raise AgentsPackageClash(
                f"{name} {version} (the OpenAI Agents SDK) is installed into the same folder as agentenvs' "
                f"`agents` package ({ours}): both install a top-level `agents`, so each overwrote the other's "
                f"files and neither imports reliably. {FIX.format(name=name)}"
            )
        where = f"in {theirs}" if theirs is not None else "in this environment"
        warnings.warn(
            f"{name} {version} (the OpenAI Agents SDK) is installed {where} and also provides a top-level "
            f"`agents` package; in this process `import agents` gives agentenvs' agents ({ours}), so code "
            f"written for the SDK will not find it. {FIX.format(name=name)}",
            AgentsPackageClashWarning,
            stacklevel=2,
        )


def _agents_folder(found: Any) -> Path | None:
    """The folder holding the distribution's ``agents/__init__.py`` (None when its files are not listed)."""
    for file in getattr(found, "files", None) or ():
        parts = Path(str(file)).parts
        if parts == ("agents", "__init__.py"):
            return Path(found.locate_file(file)).resolve().parent
    return None


check_agents_package(Path(__file__).parent)
