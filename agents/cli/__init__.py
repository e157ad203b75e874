"""Command-line entry points: ``python -m agents`` (:mod:`agents.cli.app`, tyro) and the main job's
recipes (:mod:`agents.cli.quickstart`)."""

from agents.cli.app import EvalArgs, QuickstartArgs, SFTArgs, TrainArgs, ViewArgs, main, parse

__all__ = ["EvalArgs", "QuickstartArgs", "SFTArgs", "TrainArgs", "ViewArgs", "main", "parse"]
