"""Env snapshots: the state of an episode as one picklable value, and its checks on restore.

:meth:`agentenvs.core.env.TextEnv.snapshot` returns an :class:`EnvSnapshot`;
:meth:`~agentenvs.core.env.TextEnv.restore` puts an env back into that state and returns the
``(observation, info)`` the env gave there. The snapshot holds what the base class owns (task,
turn, the episode's end, the last observation and the pieces of the last info, the generator's
state) and ``world``, the env's own state (:class:`WorldState` subclasses: a shop session's
page and choices, the searches made, the commands played). Nothing in it is shared with the env:
it is a value, safe to keep, restore many times, pickle and send to another process (never load
a pickle from a file you did not write: the project loads none).

``scope`` names what the world is made of (the catalogue, corpus or game pool: the settings that
build it), so a snapshot restores only into an env of the same class and world; everything else is
checked before the env changes (:func:`check_snapshot`), and a bad snapshot raises a ``TypeError``
or ``ValueError`` naming the field while the env stays as it was. The example is
:meth:`agentenvs.core.env.TextEnv.restore`'s.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from agentenvs.core.checks import WrongTypeError, is_integer, shown

SNAPSHOT_FORMAT = 1
"""Bumped when :class:`EnvSnapshot` changes shape; a snapshot of another format is refused."""

OWNER = "EnvSnapshot"


@dataclass(frozen=True)
class WorldState:
    """Base of an env's own part of a snapshot (each env subclasses it; checked by the env on restore)."""


@dataclass(frozen=True)
class LastInfo:
    """What the last reset or step put into ``info`` besides what the env's state gives.

    Attributes:
        action_valid: ``info["action_valid"]``.
        action: ``info["action"]`` (the executed action, "" after a reset).
        action_span: ``info["action_span"]``.
        extra: The env's extra entries of that info (a private deep copy).
    """

    action_valid: bool = True
    action: str = ""
    action_span: tuple[int, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvSnapshot:
    """One env's state at one point of an episode (make it with ``env.unwrapped.snapshot()``).

    Treat it as opaque: its fields may change with :data:`SNAPSHOT_FORMAT`.

    Attributes:
        format: :data:`SNAPSHOT_FORMAT` when it was made.
        env_class: The env's class, ``module.QualName``.
        scope: What the env's world is made of (its settings that build the catalogue, corpus
            or game pool), as the env writes it.
        task_id: The episode's task.
        turn: Steps taken.
        terminated: Whether the episode terminated.
        truncated: Whether it was truncated.
        won: Whether the task was accomplished.
        observation: The last observation.
        last_info: The pieces of the last info the state does not give (:class:`LastInfo`).
        rng_state: The env's generator (``np_random``) state, as numpy writes it.
        rng_seed: ``np_random_seed``.
        next_task_id: The task the next reset plays (vector envs set it), or None.
        world: The env's own state.
    """

    format: int
    env_class: str
    scope: str
    task_id: str
    turn: int
    terminated: bool
    truncated: bool
    won: bool
    observation: str
    last_info: LastInfo
    rng_state: dict[str, Any]
    rng_seed: int | None
    next_task_id: str | None
    world: WorldState

    _bit_generator: ClassVar[str] = "PCG64"

    @property
    def done(self) -> bool:
        """Whether the episode had ended (a step after restoring it raises ``ResetNeeded``)."""
        return self.terminated or self.truncated


def class_name(cls: type) -> str:
    """``module.QualName`` of ``cls`` (what :attr:`EnvSnapshot.env_class` holds)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def rng_state(generator: np.random.Generator) -> dict[str, Any]:
    """A private copy of ``generator``'s state (numpy's dict)."""
    return copy.deepcopy(dict(generator.bit_generator.state))


def restored_rng(state: Any) -> np.random.Generator:
    """A generator in ``state`` (a PCG64 state as :func:`rng_state` wrote it).

    Raises:
        ValueError: naming the field for anything else.
    """
    if not isinstance(state, dict) or state.get("bit_generator") != EnvSnapshot._bit_generator:
        raise ValueError(f"{OWNER}.rng_state must be numpy's PCG64 state dict, got {shown(state)}")
    generator = np.random.Generator(np.random.PCG64())
    try:
        generator.bit_generator.state = copy.deepcopy(state)
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"{OWNER}.rng_state must be numpy's PCG64 state dict ({error}), got {shown(state)}") from None
    return generator


def check_snapshot(snapshot: Any, *, env_class: type, scope: str, max_turns: int) -> EnvSnapshot:
    """``snapshot`` if an env of ``env_class`` and ``scope`` can restore it (the world is the env's to check).

    Raises:
        TypeError: for an object that is not an :class:`EnvSnapshot`, or a field of the wrong type.
        ValueError: for another env class, another world, another format, or a field out of range;
            the message names the field.
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
    if not 0 <= snapshot.turn <= max_turns:
        raise ValueError(f"{OWNER}.turn must be an integer in [0, max_turns={max_turns}], got {snapshot.turn}")
    if snapshot.terminated and snapshot.truncated:
        raise ValueError(f"{OWNER}.truncated must be False when terminated is True, got {snapshot.truncated}")
    if snapshot.truncated and snapshot.turn < max_turns:
        raise ValueError(
            f"{OWNER}.truncated must be False before turn max_turns={max_turns}, got True at turn {snapshot.turn}"
        )
    span = snapshot.last_info.action_span
    if span is not None and not (len(span) == 2 and all(is_integer(i) and i >= 0 for i in span) and span[0] <= span[1]):
        raise ValueError(
            f"{OWNER}.last_info.action_span must be (start, end) with 0 <= start <= end, got {shown(span)}"
        )
    return snapshot


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "format": (int,),
    "env_class": (str,),
    "scope": (str,),
    "task_id": (str,),
    "turn": (int,),
    "terminated": (bool,),
    "truncated": (bool,),
    "won": (bool,),
    "observation": (str,),
    "last_info": (LastInfo,),
    "rng_state": (dict,),
    "rng_seed": (int, type(None)),
    "next_task_id": (str, type(None)),
    "world": (WorldState,),
}
_LAST_INFO_TYPES: dict[str, tuple[type, ...]] = {
    "action_valid": (bool,),
    "action": (str,),
    "action_span": (tuple, type(None)),
    "extra": (dict,),
}


_MISSING = object()


def _check_types(snapshot: EnvSnapshot) -> None:
    checks = [(name, getattr(snapshot, name, _MISSING), types) for name, types in _FIELD_TYPES.items()]
    last_info = getattr(snapshot, "last_info", None)
    if isinstance(last_info, LastInfo):
        checks += [
            (f"last_info.{name}", getattr(last_info, name, _MISSING), types) for name, types in _LAST_INFO_TYPES.items()
        ]
    for name, value, types in checks:
        if value is _MISSING:
            raise WrongTypeError(f"{OWNER}.{name} is missing (a forged or corrupted snapshot)")
        # bool is an int: a turn of True is not a turn count
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise WrongTypeError(f"{OWNER}.{name} must be {expected}, got {type(value).__name__} {shown(value)}")
