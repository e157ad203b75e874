"""Doctest collection: the adapters' optional packages (openenv-core; datasets, which TRL brings)."""

import importlib.util

collect_ignore = [
    module
    for module, needs in (("_openenv.py", "openenv"), ("trl.py", "datasets"))
    if importlib.util.find_spec(needs) is None
]
