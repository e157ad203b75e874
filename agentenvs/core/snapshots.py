"""Env snapshots: how to rebuild an episode's state, as one value, and its checks on restore.

:meth:`agentenvs.core.env.TextEnv.snapshot` returns an :class:`EnvSnapshot`;
:meth:`~agentenvs.core.env.TextEnv.restore` rebuilds that state and returns the
``(observation, info)`` the env gave there. A snapshot holds no claims about the state (no
observation, reward, ``won`` or info): it holds the task, the generator at the episode's start
and the actions played since, and a restore *replays* them, so whatever the env reports after a
restore is what the env computes, and a forged snapshot can only lead to a state a real episode
could reach. It holds nothing privileged either (no goal, answer or walkthrough), so an env-only
method that branches with snapshots learns nothing from them that the agent could not see.

A snapshot is a value (nothing in it is shared with the env): keep it, restore it many times,
pickle it to another process of your own, or share it as text with :meth:`EnvSnapshot.to_json`
and :meth:`EnvSnapshot.from_json` (never load a pickle from a file you did not write: it is code,
and the project loads none).

``scope`` names what the world is made of (the catalogue, corpus or game pool: the settings that
build it), so a snapshot restores only into an env of the same class and world; the fields are
checked before the env changes (:func:`check_snapshot`), and a bad snapshot raises a ``TypeError``
or ``ValueError`` naming the field while the env stays as it was. The example is
:meth:`agentenvs.core.env.TextEnv.restore`'s.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from agentenvs.core.checks import WrongTypeError, shown

SNAPSHOT_FORMAT = 2
"""Bumped when :class:`EnvSnapshot` changes shape; a snapshot of another format is refused."""

MAX_JSON_CHARS = 64 << 20
"""Longest text :meth:`EnvSnapshot.from_json` reads (a snapshot of a long episode is a few KB)."""

OWNER = "EnvSnapshot"


@dataclass(frozen=True)
class NonText:
    """A step whose action was not text (a restore replays it as the same invalid action).

    Attributes:
        type_name: The action's type, as the step's feedback named it.
    """

    type_name: str


Action = str | NonText
"""One entry of :attr:`EnvSnapshot.actions`: the raw action a step was given."""


@dataclass(frozen=True)
class EnvSnapshot:
    """How to rebuild one env's state at one point of an episode (make it with ``env.unwrapped.snapshot()``).

    Treat it as opaque: its fields may change with :data:`SNAPSHOT_FORMAT`.

    Attributes:
        format: :data:`SNAPSHOT_FORMAT` when it was made.
        env_class: The env's class, ``module.QualName``.
        scope: What the env's world is made of (its settings that build the catalogue, corpus
            or game pool), as the env writes it.
        task_id: The episode's task.
        episode_rng_state: The env's generator state when the episode began (after the task was
            drawn), as numpy writes it.
        actions: The raw actions of the episode's steps, in order (:class:`NonText` for one that
            was not text).
        rng_state: The env's generator (``np_random``) state now.
        rng_seed: ``np_random_seed``.
        next_task_id: The task the next reset plays (vector envs set it), or None.
    """

    format: int
    env_class: str
    scope: str
    task_id: str
    episode_rng_state: dict[str, Any]
    actions: tuple[Action, ...]
    rng_state: dict[str, Any]
    rng_seed: int | None
    next_task_id: str | None

    _bit_generator: ClassVar[str] = "PCG64"

    @property
    def turn(self) -> int:
        """Steps taken."""
        return len(self.actions)

    def to_json(self) -> str:
        """The snapshot as JSON text (safe to share: reading it back runs no code)."""
        fields = dataclasses.asdict(self)
        fields["actions"] = [
            action if isinstance(action, str) else {"non_text": action.type_name} for action in self.actions
        ]
        return json.dumps(fields)

    @classmethod
    def from_json(cls, text: str) -> EnvSnapshot:
        """The snapshot :meth:`to_json` wrote (checked again by the restore that takes it).

        Raises:
            TypeError: for text that is not a string.
            ValueError: for text that is not such JSON (too long, malformed, or with fields
                missing or unknown); the message names what is wrong.
        """
        if not isinstance(text, str):
            raise TypeError(f"{OWNER}.from_json: text must be a str, got {type(text).__name__}")
        if len(text) > MAX_JSON_CHARS:
            raise ValueError(f"{OWNER}.from_json: text must be at most {MAX_JSON_CHARS} characters, got {len(text)}")
        try:
            fields = json.loads(text)
        except RecursionError:
            raise ValueError(f"{OWNER}.from_json: the JSON nests too deeply to be a snapshot") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{OWNER}.from_json: not JSON ({error})") from None
        names = [field.name for field in dataclasses.fields(cls)]
        if not isinstance(fields, dict) or sorted(fields) != sorted(names):
            got = sorted(fields) if isinstance(fields, dict) else type(fields).__name__
            raise ValueError(f"{OWNER}.from_json: the JSON must be an object with the fields {names}, got {shown(got)}")
        actions = fields["actions"]
        if not isinstance(actions, list):
            raise ValueError(f"{OWNER}.actions must be a JSON list, got {shown(actions)}")
        fields["actions"] = tuple(_action_from_json(number, action) for number, action in enumerate(actions))
        return cls(**fields)


def _action_from_json(number: int, action: Any) -> Action:
    if isinstance(action, str):
        return action
    if isinstance(action, dict) and list(action) == ["non_text"] and isinstance(action["non_text"], str):
        return NonText(action["non_text"])
    raise ValueError(f'{OWNER}.actions[{number}] must be a string or {{"non_text": <type name>}}, got {shown(action)}')


def class_name(cls: type) -> str:
    """``module.QualName`` of ``cls`` (what :attr:`EnvSnapshot.env_class` holds)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def rng_state(generator: np.random.Generator) -> dict[str, Any]:
    """A private copy of ``generator``'s state (numpy's dict)."""
    return copy.deepcopy(dict(generator.bit_generator.state))


def restored_rng(state: Any, name: str = "rng_state") -> np.random.Generator:
    """A generator in ``state`` (a PCG64 state as :func:`rng_state` wrote it; ``name`` is its field).

    Raises:
        ValueError: naming the field for anything else.
    """
    if not isinstance(state, dict) or state.get("bit_generator") != EnvSnapshot._bit_generator:
        raise ValueError(f"{OWNER}.{name} must be numpy's PCG64 state dict, got {shown(state)}")
    generator = np.random.Generator(np.random.PCG64())
    try:
        generator.bit_generator.state = copy.deepcopy(state)
    except (TypeError, ValueError, KeyError, OverflowError) as error:  # numpy's errors for a bad state
        raise ValueError(f"{OWNER}.{name} must be numpy's PCG64 state dict ({error}), got {shown(state)}") from None
    return generator


def check_snapshot(snapshot: Any, *, env_class: type, scope: str, max_turns: int) -> EnvSnapshot:
    """``snapshot`` if an env of ``env_class`` and ``scope`` can replay it (its tasks are the env's to check).

    Raises:
        TypeError: for an object that is not an :class:`EnvSnapshot`, or a field of the wrong type.
        ValueError: for another env class, another world, another format, or more actions than
            an episode has turns; the message names the field.
    """
    if not isinstance(snapshot, EnvSnapshot):
        raise TypeError(
            f"{env_class.__name__}.restore: snapshot must be an EnvSnapshot (from env.unwrapped.snapshot()), "
            f"got {type(snapshot).__name__}"
        )
    _check_types(snapshot)
    if snapshot.format != SNAPSHOT_FORMAT:
        raise ValueError(f"{OWNER}.format must be {SNAPSHOT_FORMAT} (this version's), got {shown(snapshot.format)}")
    if snapshot.env_class != class_name(env_class):
        raise ValueError(
            f"{OWNER}.env_class must be {class_name(env_class)!r} (a snapshot of this env class), "
            f"got {shown(snapshot.env_class)}"
        )
    if snapshot.scope != scope:
        raise ValueError(
            f"{OWNER}.scope must be this env's world {shown(scope)} (a snapshot of an env with the same "
            f"catalogue, corpus or games), got {shown(snapshot.scope)}"
        )
    if len(snapshot.actions) > max_turns:
        raise ValueError(
            f"{OWNER}.actions must hold at most max_turns={max_turns} actions, got {len(snapshot.actions)}"
        )
    return snapshot


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "format": (int,),
    "env_class": (str,),
    "scope": (str,),
    "task_id": (str,),
    "episode_rng_state": (dict,),
    "actions": (tuple,),
    "rng_state": (dict,),
    "rng_seed": (int, type(None)),
    "next_task_id": (str, type(None)),
}

_MISSING = object()


def _check_types(snapshot: EnvSnapshot) -> None:
    for name, types in _FIELD_TYPES.items():
        value = getattr(snapshot, name, _MISSING)
        if value is _MISSING:
            raise WrongTypeError(f"{OWNER}.{name} is missing (a forged or corrupted snapshot)")
        # bool is an int: a format of True is not a format number
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise WrongTypeError(f"{OWNER}.{name} must be {expected}, got {type(value).__name__} {shown(value)}")
    for number, action in enumerate(snapshot.actions):
        if not isinstance(action, str | NonText) or (
            isinstance(action, NonText) and not isinstance(action.type_name, str)
        ):
            raise WrongTypeError(
                f"{OWNER}.actions[{number}] must be a str or NonText, got {type(action).__name__} {shown(action)}"
            )
