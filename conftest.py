"""Doctest collection of the packages (``--doctest-modules`` over agentenvs, wrappers, agents).

It lives here, beside the packages and outside them, so that no ``conftest.py`` ships in the
wheel. Modules whose optional packages are missing are not collected: ALFWorld's engine and
translation need TextWorld and the Fast Downward planner (the ``alfworld`` extra), the OpenEnv
adapter needs ``openenv-core`` (``openenv``), the TRL adapter needs ``datasets`` (which ``trl``
brings) and the credit trainer in TRL ``trl``, WebShop's shop for people needs Flask (``web``) and ``TextFeatures`` scikit-learn
(``classic``). So ``pytest agentenvs wrappers`` also runs in a core-only venv (the agents need
torch: the ``train`` extra).
"""

import importlib.util

_NEEDS = {
    "agentenvs/alfworld/engine.py": ("textworld", "fast_downward"),
    "agentenvs/alfworld/translation.py": ("fast_downward",),
    "agentenvs/alfworld/translator.py": ("fast_downward",),
    "agentenvs/integrations/_openenv.py": ("openenv",),
    "agentenvs/integrations/_request_deadline.py": ("uvicorn",),
    "agentenvs/integrations/trl.py": ("datasets",),
    "agents/integrations/trl/trainer.py": ("trl",),
    "agentenvs/webshop/app.py": ("flask",),
    "agentenvs/webshop/server.py": ("flask",),
    "agentenvs/testing/shop_routes.py": ("flask",),
    "wrappers/features.py": ("sklearn",),
}

collect_ignore = [
    module for module, needs in _NEEDS.items() if any(importlib.util.find_spec(name) is None for name in needs)
]
