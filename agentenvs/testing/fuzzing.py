"""Fuzzing text envs with hostile model outputs, and the step invariants every env keeps.

:func:`hostile_output` draws one model output from a seeded :class:`random.Random`: empty
and huge strings, lone surrogates, NUL and control characters, nested or unclosed tags,
path-traversal strings, valid actions in odd case and spacing, admissible actions wrapped
in the env's ``action_format``, and such actions with odd characters inside.
:func:`check_step` asserts what every step must give (an encodable ``str`` observation,
a ``float`` reward, the ``info`` contract of :mod:`agentenvs.core.env`, a span inside the
raw output that holds the action), and :func:`fuzz_env` plays an env with such outputs,
resetting when an episode ends.

Used by ``tests/fuzz`` (a CI-sized run) and ``benchmarks/fuzz_envs.py`` (a nightly one); env
authors can run it on their own envs (``fuzz_env(MyEnv(), steps=..., seed=...)``).

Example:
    >>> import gymnasium as gym, agentenvs
    >>> report = fuzz_env(gym.make("SearchQA-v0").unwrapped, steps=50, seed=0)
    >>> report.steps, report.errors
    (50, [])
"""

from __future__ import annotations

import inspect
import itertools
import math
import random
import time
import traceback
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentenvs.core.actions import ACTION_FORMATS, get_action_format
from agentenvs.core.parsers import sanitize_model_text
from agentenvs.core.privileged import PRIVILEGED_KEY, is_json_stable, privileged_keys

__all__ = [
    "HUGE_OUTPUT_CHARS",
    "INFO_TYPES",
    "FuzzReport",
    "check_info",
    "check_privileged",
    "check_span",
    "check_step",
    "env_variants",
    "fuzz_env",
    "hostile_output",
    "wrap_action",
]

INFO_TYPES: dict[str, type | tuple[type, ...]] = {
    "task_id": str,
    "task": str,
    "turn": int,
    "won": bool,
    "action_valid": bool,
    "admissible_actions": (list, type(None)),
    "action": str,
    "action_span": (tuple, type(None)),
}
"""The ``info`` entries every step and reset carries, with their types (``privileged``, a dict,
only where the env was made with ``privileged=True``: :func:`check_privileged`)."""

HUGE_OUTPUT_CHARS = 200_000

_TAGS = ("think", "action", "search", "answer", "information")
_TRAVERSALS = (
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/etc/shadow",
    "file:///etc/passwd",
    "....//....//etc/passwd",
    "~/.ssh/id_rsa",
    "C:\\Windows\\System32",
)
_ODD_CHARS = (
    "\x00",
    "\ud800",
    "\udfff",
    "\udbff\udc00",
    "\x1b[31m",
    "\r",
    "\t",
    "\x7f",
    "\u200b",
    "\u202e",
    "\ufeff",
    "\U0001f600",
    "\u0301",
    "\uffff",
    "\x85",
    "\u2028",
    "²",
    "١",
    "１",
    "ß",
    "İ",
)
_BASE_ACTIONS = (
    "search[red shoes]",
    "click[buy now]",
    "click[< prev]",
    "click[next >]",
    "click[back to search]",
    "look",
    "inventory",
    "go to desk 1",
    "take apple 1 from countertop 1",
    "help",
    "<search>capital</search>",
    "<answer>Paris</answer>",
)


def wrap_action(action: str, action_format: str, rng: random.Random) -> str:
    """``action`` rendered in ``action_format`` as a model might write it (with some spacing noise)."""
    pad = rng.choice(("", " ", "\n", "  \t"))
    if action_format == "search_answer" and not action.startswith(("<search>", "<answer>")):
        # SearchQA's actions are elements: a bare admissible action becomes a search or an answer
        tag = rng.choice(("search", "answer"))
        action = f"<{tag}>{pad}{action}{pad}</{tag}>"
    return f"{pad}{get_action_format(action_format).render(f'{pad}{action}{pad}')}{pad}"


def _fill_placeholder(action: str, words: Sequence[str], rng: random.Random) -> str:
    """``search[<query>]`` with a query of the observation's words (so searches find something)."""
    start, end = action.find("<"), action.find(">")
    if 0 <= start < end and action[start + 1 : end].isidentifier():
        query = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
        return action[:start] + query + action[end + 1 :]
    return action


def _odd_case(text: str, rng: random.Random) -> str:
    pick = rng.randrange(4)
    if pick == 0:
        return text.upper()
    if pick == 1:
        return text.swapcase()
    if pick == 2:
        return "".join(c.upper() if rng.random() < 0.5 else c for c in text)
    return "  ".join(text.split(" "))


def _odd_text(rng: random.Random, size: int) -> str:
    parts = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.4:
            parts.append(rng.choice(_ODD_CHARS))
        elif roll < 0.6:
            parts.append(chr(rng.randrange(0, 0x20)))
        elif roll < 0.8:
            parts.append(chr(rng.randrange(0x20, 0x110000)))
        else:
            parts.append(rng.choice(("a", "b", " ", "[", "]", "<", ">", "/", "\\", '"', "'", "{", "}")))
    return "".join(parts)


def _tag_soup(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randrange(1, 12)):
        tag = rng.choice(_TAGS)
        pieces.append(rng.choice((f"<{tag}>", f"</{tag}>", f"<{tag}", f"{tag}>", f"<{tag.upper()}>", "<", ">")))
        if rng.random() < 0.5:
            pieces.append(rng.choice(_BASE_ACTIONS + _TRAVERSALS + ("", " ", "x")))
    return "".join(pieces)


def hostile_output(
    rng: random.Random,
    *,
    action_format: str,
    admissible: Sequence[str] | None = None,
    observation: str = "",
) -> Any:
    """One fuzzed model output (almost always a ``str``; now and then not text at all).

    Args:
        rng: The seeded source of randomness.
        action_format: The env's ``action_format`` (valid actions are wrapped in it).
        admissible: The actions the env accepts now, when it lists them.
        observation: The last observation (its words make plausible queries and clicks).
    """
    roll = rng.random()
    words = [word for word in observation.split()[:300] if word.isalnum()] or ["x"]
    if roll < 0.35 and admissible:
        return wrap_action(_fill_placeholder(rng.choice(list(admissible)), words, rng), action_format, rng)
    if roll < 0.35:
        base = rng.choice(list(admissible) if admissible and rng.random() < 0.5 else _BASE_ACTIONS)
        return wrap_action(_odd_case(base, rng), action_format, rng)
    if roll < 0.40:
        base = _fill_placeholder(rng.choice(list(admissible) if admissible else _BASE_ACTIONS), words, rng)
        cut = rng.randrange(len(base) + 1)
        return wrap_action(base[:cut] + _odd_text(rng, rng.randrange(1, 4)) + base[cut:], action_format, rng)
    if roll < 0.45:
        query = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
        return wrap_action(rng.choice((f"search[{query}]", f"click[{rng.choice(words)}]", query)), action_format, rng)
    if roll < 0.55:
        return wrap_action(
            rng.choice(_TRAVERSALS)
            if rng.random() < 0.5
            else f"{rng.choice(('search', 'click', 'go to', 'open'))}[{rng.choice(_TRAVERSALS)}]",
            action_format,
            rng,
        )
    if roll < 0.70:
        return wrap_action(_odd_text(rng, rng.randrange(0, 40)), action_format, rng)
    if roll < 0.82:
        return _tag_soup(rng)
    if roll < 0.90:
        return rng.choice(
            (
                "",
                " ",
                "\n\n",
                "\t",
                "\x00",
                "\ud800",
                "[]",
                "search[]",
                "click[]",
                "<action></action>",
                "<search></search>",
                "<answer> </answer>",
                "<action>",
                "</action>",
                "<think>",
            )
        )
    if roll < 0.93:
        return wrap_action(rng.choice(_BASE_ACTIONS), action_format, rng) * rng.randrange(2, 5)
    if roll < 0.96:
        return _odd_text(rng, 2000)
    if roll < 0.985:
        filler = rng.choice(("a", " ", "\ud800", "<", "[", "x y "))
        body = filler * (HUGE_OUTPUT_CHARS // len(filler))
        return wrap_action(body, action_format, rng) if rng.random() < 0.5 else body
    return rng.choice((None, 42, 3.5, b"search[bytes]", ["click[buy now]"], {"action": "look"}))


def _encodable(value: Any, where: str) -> None:
    """Every string inside ``value`` (nested lists, tuples and dicts too) encodes as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise AssertionError(f"{where} does not encode as UTF-8: {error}") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(key, f"{where} key")
            _encodable(item, f"{where}[{key!r}]")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _encodable(item, f"{where}[{index}]")


def check_info(info: dict[str, Any], *, where: str = "info") -> None:
    """The ``info`` contract: every key of :data:`INFO_TYPES` with its type; all text encodable."""
    for key, expected in INFO_TYPES.items():
        assert key in info, f"{where} lacks {key!r}"
        assert isinstance(info[key], expected), f"{where}[{key!r}] is {type(info[key]).__name__}"
    assert not isinstance(info["turn"], bool) and info["turn"] >= 0, f"{where}['turn'] = {info['turn']!r}"
    if info["admissible_actions"] is not None:
        assert all(isinstance(a, str) for a in info["admissible_actions"]), f"{where}: non-str admissible action"
    if PRIVILEGED_KEY in info:
        assert isinstance(info[PRIVILEGED_KEY], dict), f"{where}['privileged'] is {type(info[PRIVILEGED_KEY]).__name__}"
        assert is_json_stable(info[PRIVILEGED_KEY]), f"{where}['privileged'] does not survive a JSON round trip"
    _encodable(info, where)


def check_privileged(env: gym.Env, info: dict[str, Any], *, where: str = "info") -> None:
    """``info["privileged"]`` is there exactly when ``env`` was made with ``privileged=True``, and
    the env's other privileged keys never are without it."""
    if getattr(env.unwrapped, "privileged", False):
        assert PRIVILEGED_KEY in info, f"{where} lacks 'privileged' (the env was made with privileged=True)"
    else:
        leaked = sorted(privileged_keys(env) & set(info))
        assert not leaked, f"{where} holds {leaked} although the env was made without privileged=True"


def check_span(raw: Any, action: str, span: tuple[int, int] | None, action_format: str) -> None:
    """The span lies inside ``raw`` and holds ``action`` (search_answer: the whole element)."""
    if span is None:
        assert action == "", f"action {action[:80]!r} without a span"
        return
    assert isinstance(raw, str), "a span for a non-text output"
    start, end = span
    assert isinstance(start, int) and isinstance(end, int), f"span {span!r} is not two ints"
    assert 0 <= start < end <= len(raw), f"span {span!r} outside the raw output of {len(raw)} characters"
    held = sanitize_model_text(raw[start:end])
    if action_format == "search_answer":
        tag = held[1 : held.index(">")] if held.startswith("<") and ">" in held else ""
        assert tag in ("search", "answer") and held.endswith(f"</{tag}>"), f"span holds {held[:80]!r}"
        assert action == f"<{tag}>{held[len(tag) + 2 : -len(tag) - 3].strip()}</{tag}>", (
            f"span {held[:80]!r} vs {action[:80]!r}"
        )
    else:
        assert held == action, f"span holds {held[:80]!r}, action is {action[:80]!r}"


def check_step(env: gym.Env, raw: Any, result: tuple[Any, ...], *, action_format: str) -> None:
    """Asserts the invariants of one ``env.step(raw)`` result (see the module docstring)."""
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str), f"observation is {type(observation).__name__}"
    _encodable(observation, "observation")
    assert env.observation_space.contains(observation), "observation outside the observation space"
    assert type(reward) is float and math.isfinite(reward), f"reward {reward!r} is not a finite float"
    assert isinstance(terminated, bool) and isinstance(truncated, bool), "terminated/truncated are not bools"
    assert not (terminated and truncated), "terminated and truncated at once"
    check_info(info)
    check_privileged(env, info)
    check_span(raw, info["action"], info["action_span"], action_format)


def env_variants(env_id: str) -> list[dict[str, Any]]:
    """Keyword sets covering every observation mode and action format ``env_id`` accepts.

    Read from the constructor, so a new env or mode is fuzzed without editing a table:
    ``action_format`` ranges over :data:`~agentenvs.core.actions.ACTION_FORMATS`, and
    ``observation_mode`` over the values of its ``Literal`` annotation. An env taking
    neither has one variant, ``{}``.

    >>> import agentenvs
    >>> env_variants("SearchQA-v0")
    [{}]
    """
    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    if creator is None:
        return [{}]
    parameters = inspect.signature(creator).parameters
    hints = typing.get_type_hints(creator.__init__) if inspect.isclass(creator) else typing.get_type_hints(creator)
    axes: dict[str, tuple[Any, ...]] = {}
    modes = typing.get_args(hints.get("observation_mode")) if "observation_mode" in parameters else ()
    if modes:
        axes["observation_mode"] = modes
    if "action_format" in parameters:
        axes["action_format"] = tuple(ACTION_FORMATS)
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


@dataclass
class FuzzReport:
    """What :func:`fuzz_env` did.

    Attributes:
        steps: Steps taken.
        episodes: Episodes started (resets).
        valid_actions: Steps the env accepted (``action_valid``): how deep the fuzz reached.
        terminated: Episodes that reached a terminal state (not truncated).
        errors: ``(raw output, traceback)`` of each step that raised or broke an invariant.
        seconds: Wall time of the steps and resets.
    """

    steps: int = 0
    episodes: int = 0
    valid_actions: int = 0
    terminated: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def fuzz_env(
    env: gym.Env,
    *,
    steps: int,
    seed: int,
    task_ids: Sequence[str] | None = None,
    raise_errors: bool = False,
    output: Callable[..., Any] = hostile_output,
) -> FuzzReport:
    """Plays ``env`` (unwrapped) with ``steps`` fuzzed outputs, resetting after each episode.

    Args:
        env: The env (its ``action_format`` attribute picks how valid actions are written).
        steps: Outputs to send.
        seed: Seed of the outputs and of the resets.
        task_ids: Tasks to cycle through on reset (None: seeded draws).
        raise_errors: Re-raise the first failure (tests) instead of recording it (benchmarks).
        output: The output generator (:func:`hostile_output`'s signature).
    """
    rng = random.Random(seed)
    action_format = getattr(env, "action_format", "raw")
    report = FuzzReport()
    begin = time.perf_counter()
    done = True
    observation: str = ""
    info: dict[str, Any] = {}
    for index in range(steps):
        if done:
            options = {"task_id": task_ids[report.episodes % len(task_ids)]} if task_ids else None
            observation, info = env.reset(seed=seed + report.episodes, options=options)
            check_info(info, where="reset info")
            check_privileged(env, info, where="reset info")
            _encodable(observation, "reset observation")
            report.episodes += 1
        raw = output(
            rng, action_format=action_format, admissible=info.get("admissible_actions"), observation=observation
        )
        try:
            result = env.step(raw)
            check_step(env, raw, result, action_format=action_format)
        except Exception as error:  # recorded or re-raised with the output that caused it
            if raise_errors:
                raise AssertionError(f"step {index} with output {_preview(raw)} failed: {error!r}") from error
            report.errors.append((_preview(raw), traceback.format_exc()))
            done = True
            continue
        observation, _, terminated, truncated, info = result
        report.valid_actions += info["action_valid"]
        report.terminated += terminated
        done = terminated or truncated
        if done and rng.random() <= 0.1:  # now and then one more step after the end: it must say reset
            try:
                env.step(raw)
            except gym.error.ResetNeeded:
                pass
            except Exception as error:
                if raise_errors:
                    raise AssertionError(f"a step after the end raised {error!r}, not ResetNeeded") from error
                report.errors.append((_preview(raw), traceback.format_exc()))
            else:
                if raise_errors:
                    raise AssertionError("a step after the end did not raise ResetNeeded")
                report.errors.append((_preview(raw), "a step after the end did not raise ResetNeeded"))
    report.steps = steps
    report.seconds = time.perf_counter() - begin
    return report


def _preview(raw: Any) -> str:
    text = repr(raw)
    return (
        (text if len(text) <= 300 else f"{text[:300]}... ({len(text)} chars)")
        .encode("utf-8", "backslashreplace")
        .decode()
    )
