"""Moved to :mod:`agentenvs.testing.shop_routes` (test tooling has its own package); this alias is
kept for compatibility and will go in a later release."""

from agentenvs.testing.shop_routes import *  # noqa: F403
from agentenvs.testing.shop_routes import __all__  # noqa: F401
