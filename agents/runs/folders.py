"""Run folders: a run whose config names no ``output_dir`` gets a new one, never another run's.

``output_dir=None`` (the default of ``GRPOConfig`` and ``SFTConfig``) means a new folder
``runs/<rule>-<env>-<n>`` (``runs`` is ``$AGENTS_RUNS`` where that is set: :func:`runs_root`), ``<rule>`` the credit rule (``grpo``, ``taspo``, ...) or ``sft``,
``<env>`` the env id, ``<n>`` one more than the highest number of such folders already
there (1 for the first). The folder is created when the agent is built (so two runs started
at once cannot pick the same one) and the run prints it when it starts. A named
``output_dir`` is used as given: a fresh start into one holding a run is refused, and
``resume=True`` continues it (:mod:`agents.runs.resume`).

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> [new_run_folder("grpo-SearchQA-v0", root).name for _ in range(2)]
    ['grpo-SearchQA-v0-1', 'grpo-SearchQA-v0-2']
    >>> run_folder_prefix("taspo", "my_envs:Maze-v1")
    'taspo-my_envs_Maze-v1'
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import TypeVar

from agents.settings import RunSettings

RUNS_ENV = "AGENTS_RUNS"
"""The environment variable that moves every new run folder (default: ``runs`` in the working directory)."""


def runs_root() -> Path:
    """Where new run folders are made: ``$AGENTS_RUNS`` when set, else ``runs`` under the working directory."""
    return Path(os.environ.get(RUNS_ENV) or "runs")


def folder_size(folder: str | os.PathLike[str]) -> str:
    """The bytes under ``folder`` (files only, links not followed), in the unit that reads best.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "weights.bin").write_bytes(bytes(3 * 1024 * 1024))
    >>> folder_size(root)
    '3.0 MB'
    """
    total = sum(path.stat().st_size for path in Path(folder).rglob("*") if path.is_file() and not path.is_symlink())
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if total >= scale:
            return f"{total / scale:.1f} {unit}"
    return f"{total} B"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

C = TypeVar("C", bound=RunSettings)


def run_folders_under(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The run folders under ``root`` (each folder that holds a ``metrics.jsonl``; None: :func:`runs_root`),
    sorted; [] if there is none.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for folder in ("quickstart/rl", "quickstart/sft", "grpo-SearchQA-v0-1", "empty"):
    ...     (root / folder).mkdir(parents=True)
    >>> for folder in ("quickstart/rl", "quickstart/sft", "grpo-SearchQA-v0-1"):
    ...     _ = (root / folder / "metrics.jsonl").write_text("")
    >>> [str(path.relative_to(root)) for path in run_folders_under(root)]
    ['grpo-SearchQA-v0-1', 'quickstart/rl', 'quickstart/sft']
    """
    found = Path(root) if root is not None else runs_root()
    return sorted(path.parent for path in found.rglob("metrics.jsonl") if path.is_file())


def run_folder_prefix(rule: str, env_id: str) -> str:
    """``<rule>-<env>``, with characters a folder name should not hold (``:``, ``/``) as ``_``."""
    return _UNSAFE.sub("_", f"{rule}-{env_id}")


def new_run_folder(prefix: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Creates and returns ``root/<prefix>-<n>`` (None: :func:`runs_root`), ``n`` one more than the
    highest taken (from 1).

    The folder is made with ``exist_ok=False``: a run started at the same moment that took
    the number first makes this one take the next.
    """
    base = Path(root) if root is not None else runs_root()
    base.mkdir(parents=True, exist_ok=True)
    numbered = re.compile(re.escape(prefix) + r"-(\d+)")
    taken = [int(match.group(1)) for path in base.iterdir() if (match := numbered.fullmatch(path.name))]
    number = max(taken, default=0) + 1
    while True:
        folder = base / f"{prefix}-{number}"
        try:
            folder.mkdir()
        except FileExistsError:
            number += 1
            continue
        return folder


def with_run_folder(config: C, rule: str, env_id: str, root: str | os.PathLike[str] | None = None) -> C:
    """``config`` with ``output_dir`` set: unchanged when it names one, else a :func:`new_run_folder`."""
    if config.output_dir is not None:
        return config
    folder = new_run_folder(run_folder_prefix(rule, env_id), root)
    return dataclasses.replace(config, output_dir=str(folder))
