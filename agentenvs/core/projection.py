"""Action projection, kept for compatibility: the names this module used to define.

The projectors (parsers) and :class:`Projection` live in :mod:`agentenvs.core.parsers`; the
table of them by ``action_format``, with how each format is rendered, prompted and stopped,
is :data:`agentenvs.core.actions.ACTION_FORMATS`. :data:`PROJECTORS` and
:func:`get_projector` are derived from it.

Example:
    >>> PROJECTORS["think_action"]("<action>look</action>").action
    'look'
"""

from agentenvs.core.actions import PROJECTORS, get_projector
from agentenvs.core.parsers import (
    REPLACEMENT_CHARACTER,
    SEARCH_ANSWER_FEEDBACK,
    Projection,
    Projector,
    project_raw,
    project_search_answer,
    project_think_action,
    project_think_action_strict,
    sanitize_model_text,
)

__all__ = [
    "PROJECTORS",
    "REPLACEMENT_CHARACTER",
    "SEARCH_ANSWER_FEEDBACK",
    "Projection",
    "Projector",
    "get_projector",
    "project_raw",
    "project_search_answer",
    "project_think_action",
    "project_think_action_strict",
    "sanitize_model_text",
]
