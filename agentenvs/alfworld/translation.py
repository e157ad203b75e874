"""The PDDL -> SAS translation of an ALFWorld game: the one step both the engine and its prefetch run.

:class:`~agentenvs.alfworld.engine.AlfredEngine` translates a game when it loads it (or takes
the translation its helper process made ahead of time, :mod:`agentenvs.alfworld.translator`);
the helper's child runs :func:`translate_game_file`. Both import it from here, so neither
imports the other.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import fast_downward


def translate_pddl(domain: str, problem: str, *, optimize: bool) -> tuple[Any, str]:
    """Fast Downward's SAS task and text of a PDDL problem (``optimize``: the planner's variant)."""
    # fast_downward's translator overwrites sys.argv (it reads its options from there).
    argv = sys.argv
    try:
        return fast_downward.pddl2sas(domain, problem, optimize=optimize)
    finally:
        sys.argv = argv


@dataclass(frozen=True)
class Translation:
    """The SAS translation of one PDDL problem (read-only once made)."""

    task: Any
    sas: str


def translate_game_file(game_file: str) -> tuple[tuple[str, str, bool], Translation]:
    """The cache key and translation of a game file (what the prefetch process runs)."""
    with open(game_file) as f:
        data = json.load(f)
    domain, problem = data["pddl_domain"], data["pddl_problem"]
    return (domain, problem, False), Translation(*translate_pddl(domain, problem, optimize=False))
