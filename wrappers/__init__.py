"""Env-agnostic ``gym.Wrapper`` subclasses over agentenvs envs.

Recording (episodes as ``Trajectory``), prompting (the prompt as the observation; the prompt
builder itself is :mod:`agentenvs.core.prompts`), privileged (strip what the agent must not
see), discrete (a ``Discrete(N)`` space over candidate actions) and features (numeric
observations from text).
"""

from wrappers.discrete import DiscreteActions
from wrappers.features import TextFeatures
from wrappers.privileged import StripPrivileged
from wrappers.prompting import PromptObservation
from wrappers.recording import RecordTrajectory

__all__ = ["DiscreteActions", "PromptObservation", "RecordTrajectory", "StripPrivileged", "TextFeatures"]
