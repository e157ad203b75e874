"""agentenvs: multi-turn text environments for agentic RL, as Gymnasium envs.

``import agentenvs`` registers the envs::

    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("SearchQA-v0")
    >>> observation, info = env.reset(seed=0)
    >>> sorted(k for k in info if k in ("task_id", "won", "action_valid"))
    ['action_valid', 'task_id', 'won']
"""

from agentenvs.core import (
    ActionSpan,
    GroupVectorEnv,
    TextEnv,
    TextSpace,
    Trajectory,
    TrajectoryGroup,
    Turn,
    make_group_vec,
)
from agentenvs.core.registration import register_env

__version__ = "0.1.0"

register_env("SearchQA-v0", "agentenvs.searchqa.env:SearchQAEnv")
register_env("WebShop-v0", "agentenvs.webshop.env:WebShopEnv")
register_env("ALFWorld-v0", "agentenvs.alfworld.env:ALFWorldEnv")
register_env("Umbrella-v0", "agentenvs.diagnostics.umbrella:UmbrellaEnv")
register_env("KeyDoor-v0", "agentenvs.diagnostics.keydoor:KeyDoorEnv")
register_env("Bifurcation-v0", "agentenvs.diagnostics.bifurcation:BifurcationEnv")

__all__ = [
    "ActionSpan",
    "GroupVectorEnv",
    "TextEnv",
    "TextSpace",
    "Trajectory",
    "TrajectoryGroup",
    "Turn",
    "make_group_vec",
]
