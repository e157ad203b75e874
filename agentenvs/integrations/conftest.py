"""Doctest collection: the adapters' optional packages (openenv-core, uvicorn; datasets, which TRL brings)."""

import importlib.util

collect_ignore = [
    module
    for module, needs in (("_openenv.py", "openenv"), ("_request_deadline.py", "uvicorn"), ("trl.py", "datasets"))
    if importlib.util.find_spec(needs) is None
]
