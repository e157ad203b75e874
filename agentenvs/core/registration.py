"""Registration of agentenvs ids with Gymnasium.

``import agentenvs`` registers every env, so both ``gym.make("SearchQA-v0")`` and
``gym.make("agentenvs:SearchQA-v0")`` work. Registration is idempotent.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def register_env(env_id: str, entry_point: str, **kwargs: Any) -> None:
    """Registers ``env_id`` unless it already is (re-imports stay silent)."""
    if env_id in gym.registry:
        return
    gym.register(id=env_id, entry_point=entry_point, disable_env_checker=False, **kwargs)
