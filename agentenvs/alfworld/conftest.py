"""Doctest collection: the engine module needs TextWorld (the ``alfworld`` extra)."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("textworld") else ["engine.py"]
