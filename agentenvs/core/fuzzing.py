"""Moved to :mod:`agentenvs.testing.fuzzing` (test tooling has its own package); this alias is kept
for compatibility and will go in a later release."""

from agentenvs.core.registration import agentenvs_ids
from agentenvs.testing.fuzzing import *  # noqa: F403
from agentenvs.testing.fuzzing import __all__ as _moved

__all__ = [*_moved, "agentenvs_ids"]
