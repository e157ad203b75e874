"""ALFWorld-v0: ALFWorld's household text games (real TextWorld engine) and a game generator.

Needs the ``alfworld`` extra (``alfworld``, ``textworld`` and the compiled
``fast-downward-textworld``: ``pip install "agentenvs[alfworld]"``; README: Install). Importing this package does
not import TextWorld; the env loads it on first use.
"""

from agentenvs.alfworld.data import SPLIT_FOLDERS, TASK_TYPES, GameRecord, find_games

__all__ = ["SPLIT_FOLDERS", "TASK_TYPES", "GameRecord", "find_games"]
