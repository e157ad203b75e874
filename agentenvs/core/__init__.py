"""The text-env contract: spaces, the env base, action formats and their parsers, prompts, rollout data and groups."""

from agentenvs.core.actions import (
    ACTION_FORMATS,
    ActionFormat,
    get_action_format,
    render_action,
)
from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.groups import GroupVectorEnv, make_group_vec
from agentenvs.core.parsers import (
    Projection,
    project_raw,
    project_search_answer,
    project_think_action,
)
from agentenvs.core.prompts import PromptBuilder
from agentenvs.core.spaces import TextSpace

# Registers TextSpace with Gymnasium's vector shared memory (gym.make_vec(..., vectorization_mode="async")).
from agentenvs.core import shared_memory as _shared_memory  # noqa: E402,F401  # isort: skip
from agentenvs.core.trajectory import (
    ActionSpan,
    Trajectory,
    TrajectoryGroup,
    Turn,
    read_jsonl,
    write_jsonl,
)

__all__ = [
    "ACTION_FORMATS",
    "ActionFormat",
    "ActionSpan",
    "GroupVectorEnv",
    "Outcome",
    "Projection",
    "PromptBuilder",
    "TextEnv",
    "TextSpace",
    "Trajectory",
    "TrajectoryGroup",
    "Turn",
    "get_action_format",
    "make_group_vec",
    "project_raw",
    "project_search_answer",
    "project_think_action",
    "read_jsonl",
    "render_action",
    "write_jsonl",
]
