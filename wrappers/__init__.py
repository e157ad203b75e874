"""Env-agnostic wrappers over agentenvs envs: recording (and, later, prompting)."""

from wrappers.recording import RecordTrajectory

__all__ = ["RecordTrajectory"]
