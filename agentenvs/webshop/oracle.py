"""Renamed :mod:`agentenvs.webshop.expert` (one name for the env's expert in every env); this alias is
kept for compatibility and will go in a later release."""

from agentenvs.webshop.expert import MAX_RESULTS, QUERY_STYLES, QueryStyle, expert_action, search_query

oracle_action = expert_action
"""The old name of :func:`agentenvs.webshop.expert.expert_action`."""

__all__ = ["MAX_RESULTS", "QUERY_STYLES", "QueryStyle", "expert_action", "oracle_action", "search_query"]
