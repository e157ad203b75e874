"""Command-line entry points: ``python -m agents`` (:mod:`agents.cli.app`, tyro), its command table
(:mod:`agents.cli.commands`) and the main job's recipes (:mod:`agents.cli.quickstart`).

The names below import :mod:`agents.cli.app` on first use (PEP 562), so the command table can be
read without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agents.cli.app import EvalArgs, QuickstartArgs, SFTArgs, TrainArgs, ViewArgs, main, parse

__all__ = ["EvalArgs", "QuickstartArgs", "SFTArgs", "TrainArgs", "ViewArgs", "main", "parse"]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 'agents.cli' has no attribute {name!r}")
    from agents.cli import app

    return getattr(app, name)
