"""The text-env contract: spaces, the env base, projection, rollout data and groups."""

from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.groups import GroupVectorEnv, make_group_vec
from agentenvs.core.projection import (
    PROJECTORS,
    Projection,
    get_projector,
    project_raw,
    project_search_answer,
    project_think_action,
)
from agentenvs.core.spaces import TextSpace
from agentenvs.core.trajectory import (
    ActionSpan,
    Trajectory,
    TrajectoryGroup,
    Turn,
    read_jsonl,
    write_jsonl,
)

__all__ = [
    "PROJECTORS",
    "ActionSpan",
    "GroupVectorEnv",
    "Outcome",
    "Projection",
    "TextEnv",
    "TextSpace",
    "Trajectory",
    "TrajectoryGroup",
    "Turn",
    "get_projector",
    "make_group_vec",
    "project_raw",
    "project_search_answer",
    "project_think_action",
    "read_jsonl",
    "write_jsonl",
]
