"""Action formats: how a model writes an action, and how the env reads it back.

An env's ``action_format`` names one :class:`ActionFormat` of :data:`ACTION_FORMATS`,
the one table every consumer reads: :class:`~agentenvs.core.env.TextEnv` parses model
output with ``parse``; the prompt builder (:mod:`agentenvs.core.prompts`) ends each prompt
with ``instruction`` and stops generation at ``stop_strings``; ``wrappers.DiscreteActions``
and the SFT demonstrations write a chosen or expert action as model text with ``render``.

For every action the format can carry, ``parse(render(action))`` is that action, its span
holds exactly the action's text, and a generation cut right after the first stop string
still parses so. What each format can carry (``tests/agentenvs/core/test_actions.py`` checks these
limits both ways):

- ``raw``: one line (a raw generation stops at ``"\\n"``), not blank, no surrounding
  whitespace, at most 512 characters.
- ``think_action`` and ``think_action_strict``: no surrounding whitespace, not blank, at
  most 512 characters, and no ``<action>``, ``</action>``, ``<think>`` or ``</think>``
  inside. Rendered after an empty ``<think></think>``, which the strict format accepts.
- ``search_answer``: the action is itself an element, ``<search>query</search>`` or
  ``<answer>text</answer>`` (SearchQA's action language), its content not blank, without
  surrounding whitespace, at most 2048 characters, with no ``search``, ``answer``,
  ``think`` or ``information`` tag inside. It is written as it is.

Example:
    >>> think = get_action_format("think_action")
    >>> think.render("go to desk 1")
    '<think></think><action>go to desk 1</action>'
    >>> think.parse(think.render("go to desk 1")).action
    'go to desk 1'
    >>> think.stop_strings
    ('</action>',)
    >>> get_action_format("xml")
    Traceback (most recent call last):
    ...
    ValueError: action_format='xml' is unknown; choose one of ['raw', 'search_answer', 'think_action', 'think_action_strict']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from agentenvs.core.parsers import (
    Projector,
    project_raw,
    project_search_answer,
    project_think_action,
    project_think_action_strict,
)


@dataclass(frozen=True)
class ActionFormat:
    """One way of writing actions as model text.

    Attributes:
        name: The ``action_format`` value envs accept.
        parse: The projector, model text -> :class:`~agentenvs.core.parsers.Projection`;
            pure, never raises.
        render: Action -> the model text that ``parse`` reads back as that action (for an
            action the format can carry; see the module docstring).
        instruction: The prompt's closing sentence telling the model how to write its output.
        stop_strings: Strings after which generation may stop: the text up to and including
            the first of them holds the whole action.
    """

    name: str
    parse: Projector
    render: Callable[[str], str]
    instruction: str
    stop_strings: tuple[str, ...]


def render_as_is(action: str) -> str:
    """The action is its own text (``raw``, and ``search_answer``'s ``<search>``/``<answer>`` elements)."""
    return action


def render_think_action(action: str) -> str:
    """``action`` inside ``<action>`` after an empty ``<think>`` (which the strict format also accepts).

    Example:
        >>> render_think_action("look")
        '<think></think><action>look</action>'
    """
    return f"<think></think><action>{action}</action>"


THINK_ACTION_INSTRUCTION = (
    "First reason briefly inside <think>...</think>. Then give exactly one action, chosen from the "
    "admissible actions when they are listed, as <action>your action</action>."
)
SEARCH_ANSWER_INSTRUCTION = (
    "You may reason inside <think>...</think>. To look something up, write <search>query</search>; "
    "the results come back as <information>...</information>. When you know the answer, write "
    "<answer>answer</answer>. Write one search or one answer per turn."
)

ACTION_FORMATS: MappingProxyType[str, ActionFormat] = MappingProxyType(
    {
        entry.name: entry
        for entry in (
            ActionFormat("raw", project_raw, render_as_is, "Reply with the action only.", ("\n",)),
            ActionFormat(
                "think_action", project_think_action, render_think_action, THINK_ACTION_INSTRUCTION, ("</action>",)
            ),
            ActionFormat(
                "think_action_strict",
                project_think_action_strict,
                render_think_action,
                THINK_ACTION_INSTRUCTION,
                ("</action>",),
            ),
            ActionFormat(
                "search_answer",
                project_search_answer,
                render_as_is,
                SEARCH_ANSWER_INSTRUCTION,
                ("</search>", "</answer>"),
            ),
        )
    }
)
"""Every action format, by the ``action_format`` name envs accept (read-only)."""


def get_action_format(name: str) -> ActionFormat:
    """The action format called ``name`` (one of :data:`ACTION_FORMATS`).

    Raises:
        ValueError: naming the unknown format and the known ones.
    """
    try:
        return ACTION_FORMATS[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name
        raise ValueError(f"action_format={name!r} is unknown; choose one of {sorted(ACTION_FORMATS)}") from None


def render_action(action: str, action_format: str) -> str:
    """``action`` written as model text in the format called ``action_format``.

    Example:
        >>> render_action("<answer>Paris</answer>", "search_answer")
        '<answer>Paris</answer>'

    Raises:
        ValueError: for an unknown ``action_format``.
    """
    return get_action_format(action_format).render(action)
