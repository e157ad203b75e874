"""Env-agnostic wrappers over agentenvs envs: recording (and, later, prompting)."""

from wrappers.privileged import StripPrivileged
from wrappers.prompting import PromptObservation
from wrappers.recording import RecordTrajectory

__all__ = ["PromptObservation", "RecordTrajectory", "StripPrivileged"]
