"""Doctest collection of the packages (``--doctest-modules`` over agentenvs, wrappers, agents).

It lives here, beside the packages and outside them, so that no ``conftest.py`` ships in the
wheel. Modules whose optional packages are missing are not collected: ALFWorld's engine needs
TextWorld (the ``alfworld`` extra), the OpenEnv adapter needs ``openenv-core`` (``openenv``) and
the TRL adapter needs ``datasets`` (which ``trl`` brings).
"""

import importlib.util

_NEEDS = {
    "agentenvs/alfworld/engine.py": "textworld",
    "agentenvs/integrations/_openenv.py": "openenv",
    "agentenvs/integrations/trl.py": "datasets",
}

collect_ignore = [module for module, needs in _NEEDS.items() if importlib.util.find_spec(needs) is None]
