"""Action parsers (projectors): from a model's raw output to the executable action.

Each projector is a pure function ``str -> Projection`` that never raises: any
string (empty, huge, unicode, nested or unclosed tags) yields either a valid action
with its character span or an invalid one with a feedback message for the agent.
Tag search is linear-time ``str.find`` (no backtracking regular expressions).

Before projecting, :class:`~agentenvs.core.env.TextEnv` passes model text through
:func:`sanitize_model_text` once, so env code never sees code points that cannot be
encoded or that truncate C strings.

Which projector an env uses, and how an action is written so that it reads back, is the
env's action format (:mod:`agentenvs.core.actions`, whose records point at these functions).

Example:
    >>> p = project_think_action("<think>go north</think><action> go to desk 1 </action>")
    >>> p.valid, p.action, p.span.text_of("<think>go north</think><action> go to desk 1 </action>")
    (True, 'go to desk 1', 'go to desk 1')
    >>> project_search_answer("<answer>Paris</answer>").action
    '<answer>Paris</answer>'
    >>> project_search_answer("I think Paris").valid
    False
    >>> sanitize_model_text("a" + chr(0xD800) + "b" + chr(0)) == "a" + chr(0xFFFD) + "b" + chr(0xFFFD)
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agentenvs.core.trajectory import ActionSpan


@dataclass(frozen=True)
class Projection:
    """Result of projecting a raw output onto an action.

    Attributes:
        action: The executable action ("" when invalid).
        span: Character span of the action inside the raw output (None when invalid).
        valid: Whether the raw output held a well-formed action.
        error: Feedback for the agent when invalid, else None.
    """

    action: str
    span: ActionSpan | None
    valid: bool
    error: str | None = None

    @classmethod
    def invalid(cls, error: str) -> Projection:
        return cls(action="", span=None, valid=False, error=error)


Projector = Callable[[str], Projection]

REPLACEMENT_CHARACTER = "\ufffd"
_UNSAFE_CODE_POINTS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def sanitize_model_text(raw_output: str) -> str:
    """``raw_output`` with each surrogate code point and control character (tab, newline and
    carriage return kept) replaced by U+FFFD.

    A Python ``str`` may hold surrogates (lone or in pairs: a decoder's
    ``surrogateescape``, a ``json.loads("\\ud800")``) that ``.encode("utf-8")`` rejects;
    an env echoing them (a query in a URL, an answer in an observation) would fail later,
    far from the cause. NUL truncates C strings (tokenizers, subprocesses). ESC and the other
    C0/C1 controls start terminal sequences (colours, cursor moves, OSC titles and links) that
    an echoed answer would play on a terminal rendering the env (``render_mode="human"``). One
    code point is replaced by one, so character offsets into the result (``action_span``) are
    offsets into ``raw_output`` too.
    """
    return _UNSAFE_CODE_POINTS.sub(REPLACEMENT_CHARACTER, raw_output)


@dataclass(frozen=True)
class _Element:
    """A ``<tag>content</tag>`` occurrence: offsets of the element and of its content."""

    tag: str
    start: int
    content_start: int
    content_end: int
    end: int


def _first_element(text: str, tag: str, start: int = 0) -> _Element | None | str:
    """The first complete ``<tag>…</tag>`` at or after ``start``.

    Returns None if the tag does not occur, or an error string if it is unclosed.
    """
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    begin = text.find(open_tag, start)
    if begin < 0:
        return None
    content_start = begin + len(open_tag)
    close = text.find(close_tag, content_start)
    if close < 0:
        return f"<{tag}> is opened but never closed with </{tag}>."
    return _Element(tag, begin, content_start, close, close + len(close_tag))


def _stripped_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrinks ``[start, end)`` to exclude surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _has_any_tag(text: str, tags: tuple[str, ...]) -> bool:
    return any(f"<{tag}>" in text or f"</{tag}>" in text for tag in tags)


def project_think_action(
    raw_output: str,
    *,
    require_think: bool = False,
    max_action_length: int = 512,
) -> Projection:
    """Projects ``<think>…</think><action>…</action>`` output onto the action text.

    The action is the stripped content of the only ``<action>`` element. Invalid:
    no or unclosed ``<action>``, more than one, nested tags, an empty or overlong
    action, or (with ``require_think``) no ``<think>`` element before the action.

    Args:
        raw_output: The model's output.
        require_think: Demand a closed ``<think>`` element before the action.
        max_action_length: Longest action accepted, in characters.
    """
    if not isinstance(raw_output, str):
        return Projection.invalid(f"The output must be text, got {type(raw_output).__name__}.")
    element = _first_element(raw_output, "action")
    if element is None:
        return Projection.invalid("No action found. Write your action as <action>your action</action>.")
    if isinstance(element, str):
        return Projection.invalid(element)
    if _first_element(raw_output, "action", element.end) is not None:
        return Projection.invalid("Write exactly one <action>…</action> per turn.")
    if _has_any_tag(raw_output[element.content_start : element.content_end], ("action", "think")):
        return Projection.invalid("Tags must not be nested inside <action>…</action>.")
    if require_think:
        think = _first_element(raw_output[: element.start], "think")
        if think is None or isinstance(think, str):
            return Projection.invalid("Reason inside <think>…</think> before giving the <action>.")
    start, end = _stripped_span(raw_output, element.content_start, element.content_end)
    if start == end:
        return Projection.invalid("The action is empty. Put a command inside <action>…</action>.")
    if end - start > max_action_length:
        return Projection.invalid(f"The action is longer than {max_action_length} characters.")
    return Projection(action=raw_output[start:end], span=ActionSpan(start, end), valid=True)


def project_think_action_strict(raw_output: str) -> Projection:
    """Projects ``<think>…</think><action>…</action>`` output, a closed ``<think>`` required before the action.

    :func:`project_think_action` with ``require_think=True``.
    """
    return project_think_action(raw_output, require_think=True)


SEARCH_ANSWER_FEEDBACK = (
    "Invalid action. To search, write <search>your query</search>. To answer, write <answer>your answer</answer>."
)


def project_search_answer(raw_output: str, *, max_action_length: int = 2048) -> Projection:
    """Projects Search-R1 style output onto ``<search>q</search>`` or ``<answer>a</answer>``.

    The first complete ``<search>`` or ``<answer>`` element is the action (generation
    normally stops there); any ``<think>`` before it is ignored. The action is
    returned in canonical form (tag, stripped content, closing tag) and the span
    covers the whole element in the raw output. Invalid: neither tag complete, an
    empty or overlong content, or tags nested inside the content.
    """
    if not isinstance(raw_output, str):
        return Projection.invalid(f"The output must be text, got {type(raw_output).__name__}.")
    candidates: list[_Element] = []
    unclosed: list[str] = []
    for tag in ("search", "answer"):
        element = _first_element(raw_output, tag)
        if isinstance(element, _Element):
            candidates.append(element)
        elif isinstance(element, str):
            unclosed.append(element)
    if not candidates:
        return Projection.invalid(" ".join(unclosed + [SEARCH_ANSWER_FEEDBACK]))
    element = min(candidates, key=lambda found: found.start)
    content = raw_output[element.content_start : element.content_end]
    if _has_any_tag(content, ("search", "answer", "think", "information")):
        return Projection.invalid(f"Tags must not be nested inside <{element.tag}>…</{element.tag}>.")
    stripped = content.strip()
    if not stripped:
        return Projection.invalid(f"The <{element.tag}> is empty. {SEARCH_ANSWER_FEEDBACK}")
    if len(stripped) > max_action_length:
        return Projection.invalid(f"The <{element.tag}> content is longer than {max_action_length} characters.")
    action = f"<{element.tag}>{stripped}</{element.tag}>"
    return Projection(action=action, span=ActionSpan(element.start, element.end), valid=True)


def project_raw(raw_output: str, *, max_action_length: int = 512) -> Projection:
    """The whole (stripped) output is the action; empty or overlong output is invalid."""
    if not isinstance(raw_output, str):
        return Projection.invalid(f"The output must be text, got {type(raw_output).__name__}.")
    start, end = _stripped_span(raw_output, 0, len(raw_output))
    if start == end:
        return Projection.invalid("The action is empty.")
    if end - start > max_action_length:
        return Projection.invalid(f"The action is longer than {max_action_length} characters.")
    return Projection(action=raw_output[start:end], span=ActionSpan(start, end), valid=True)
