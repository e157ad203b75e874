"""The commands of ``python -m agents`` and what each does.

The one table behind the top-level ``--help``, which :mod:`agents.__main__` prints from here
without importing the training stack (torch, transformers: seconds), and the descriptions tyro
shows (each command's arguments class in :mod:`agents.cli.app` has this docstring; tested).

Example:
    >>> list(COMMANDS)
    ['train', 'eval', 'sft', 'quickstart', 'view']
"""

from __future__ import annotations

PROG = "python -m agents"
DESCRIPTION = "Train, evaluate or inspect LLM agents on agentenvs envs."
COMMANDS: dict[str, str] = {
    "train": "Train an LLM agent on an env.",
    "eval": "Evaluate a model, or a training run's latest checkpoint, on held-out tasks.",
    "sft": "Behaviour cloning on an env's own expert (the warm start of an RL run).",
    "quickstart": "The README's main job: an expert warm start then RL on a multi-turn env (presets in "
    "agents.cli.quickstart).",
    "view": "The credit viewer: a local web app over run folders (curves, steps, groups, per-token credit).",
}
"""Each command and its one-line description."""


def top_level_help() -> str:
    """The top-level help: usage, the commands and where each one's flags are listed."""
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} [-h] {{{','.join(COMMANDS)}}}", "", DESCRIPTION, "", "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    lines += ["", f"Each command's flags: {PROG} <command> --help"]
    return "\n".join(lines)
