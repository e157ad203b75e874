"""Run folders: a run whose config names no ``output_dir`` gets a new one, never another run's.

``output_dir=None`` (the default of ``GRPOConfig`` and ``SFTConfig``) means a new folder
``runs/<rule>-<env>-<n>``: ``<rule>`` the credit rule (``grpo``, ``taspo``, ...) or ``sft``,
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

RUNS_ROOT = "runs"
"""Where new run folders are made, relative to the working directory."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

C = TypeVar("C", bound=RunSettings)


def run_folders_under(root: str | os.PathLike[str] = RUNS_ROOT) -> list[Path]:
    """The run folders under ``root`` (each folder that holds a ``metrics.jsonl``), sorted; [] if there is none.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for folder in ("quickstart/rl", "quickstart/sft", "grpo-SearchQA-v0-1", "empty"):
    ...     (root / folder).mkdir(parents=True)
    >>> for folder in ("quickstart/rl", "quickstart/sft", "grpo-SearchQA-v0-1"):
    ...     _ = (root / folder / "metrics.jsonl").write_text("")
    >>> [str(path.relative_to(root)) for path in run_folders_under(root)]
    ['grpo-SearchQA-v0-1', 'quickstart/rl', 'quickstart/sft']
    """
    return sorted(path.parent for path in Path(root).rglob("metrics.jsonl") if path.is_file())


def run_folder_prefix(rule: str, env_id: str) -> str:
    """``<rule>-<env>``, with characters a folder name should not hold (``:``, ``/``) as ``_``."""
    return _UNSAFE.sub("_", f"{rule}-{env_id}")


def new_run_folder(prefix: str, root: str | os.PathLike[str] = RUNS_ROOT) -> Path:
    """Creates and returns ``root/<prefix>-<n>``, ``n`` one more than the highest taken (from 1).

    The folder is made with ``exist_ok=False``: a run started at the same moment that took
    the number first makes this one take the next.
    """
    base = Path(root)
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


def with_run_folder(config: C, rule: str, env_id: str, root: str | os.PathLike[str] = RUNS_ROOT) -> C:
    """``config`` with ``output_dir`` set: unchanged when it names one, else a :func:`new_run_folder`."""
    if config.output_dir is not None:
        return config
    folder = new_run_folder(run_folder_prefix(rule, env_id), root)
    return dataclasses.replace(config, output_dir=str(folder))
