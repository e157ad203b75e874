"""Env-agnostic wrappers over agentenvs envs: recording (and, later, prompting)."""

from wrappers.discrete import DiscreteActions
from wrappers.features import TextFeatures
from wrappers.privileged import StripPrivileged
from wrappers.prompting import PromptObservation
from wrappers.recording import RecordTrajectory

__all__ = ["DiscreteActions", "PromptObservation", "RecordTrajectory", "StripPrivileged", "TextFeatures"]
