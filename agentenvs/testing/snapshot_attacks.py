"""Forged, corrupted and foreign snapshots thrown at an env, and what every restore must then hold.

:func:`attack_snapshots` plays seeded episodes of a *privileged* env (the one that knows the
answers), takes snapshots along the way and forges them in families (:data:`FAMILIES`): fields of
the wrong type, another format, class or world, random action lists (text, non-text, past the
turn limit, past the episode's end), mangled generator states, and JSON text cut, nested or with
its bytes flipped. Each forgery is restored into a *default* env, which must then either

- refuse it with a ``TypeError`` or ``ValueError`` and stay as it was (its own snapshot equal
  to the one before), or
- accept it and report the truth: the ``(observation, info)`` a fresh env of the same settings
  gives when it plays the forged actions from the forged task, with no privileged key in the
  info.

Anything else (another exception, a lie, a leak) is an error of the report. Used by
``tests/fuzz/test_snapshot_attacks.py`` (CI-sized) and ``benchmarks/fuzz_envs.py --parts
snapshots`` (nightly-sized).

Example:
    >>> import agentenvs
    >>> report = attack_snapshots("SearchQA-v0", forgeries=40, seed=0)
    >>> report.forgeries, report.errors
    (40, [])
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentenvs.core.env import TextEnv
from agentenvs.core.privileged import PRIVILEGED_KEY
from agentenvs.core.snapshots import EnvSnapshot, NonText, restored_rng

__all__ = ["FAMILIES", "AttackReport", "attack_snapshots"]

Forge = Callable[[EnvSnapshot, random.Random, TextEnv, dict[str, Any]], Any]
"""``(a real snapshot, rng, the env it came from, its last info) -> a forgery`` (a snapshot, or anything else)."""


def _text_env(env: gym.Env) -> TextEnv:
    unwrapped = env.unwrapped
    if not isinstance(unwrapped, TextEnv):
        raise TypeError(f"attack_snapshots needs a TextEnv, got {type(unwrapped).__name__}")
    return unwrapped


def _set(snapshot: EnvSnapshot, **changes: Any) -> EnvSnapshot:
    forged = pickle.loads(pickle.dumps(snapshot))
    for name, value in changes.items():  # frozen: a forger writes through object.__setattr__
        object.__setattr__(forged, name, value)
    return forged


_ODD_VALUES: tuple[Any, ...] = (None, True, 3, -1, 2.5, "", "x" * 300, [], {}, (), b"bytes", object())


def _wrong_type(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    name = rng.choice([f.name for f in dataclasses.fields(EnvSnapshot)])
    changes: dict[str, Any] = {name: rng.choice(_ODD_VALUES)}
    return _set(snapshot, **changes)


def _foreign(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    changes: list[dict[str, Any]] = [
        {"format": snapshot.format + rng.choice((-1, 1, 100))},
        {"env_class": "agentenvs.somewhere.OtherEnv"},
        {"scope": snapshot.scope + " "},
        {"task_id": rng.choice(("no such task", "../../etc/passwd", "\udcff", snapshot.task_id + "0"))},
        {"next_task_id": "no such task"},
    ]
    return _set(snapshot, **rng.choice(changes))


def _random_action(rng: random.Random, info: dict[str, Any]) -> Any:
    admissible = info.get("admissible_actions") or []
    draw = rng.random()
    if admissible and draw < 0.5:
        return rng.choice(admissible)
    if draw < 0.6:
        return NonText(rng.choice(("int", "NoneType", "bytes")))
    if draw < 0.7:
        return rng.choice(("", "\x00", "\udcff", "<answer>x</answer>", "click[buy now]", "look"))
    return "".join(rng.choice("abc []<>/\n") for _ in range(rng.randrange(1, 40)))


def _random_actions(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    """Random actions from the snapshot's task (perhaps past the turn limit or the episode's end)."""
    count = rng.randrange(0, env.max_turns + 4)
    return _set(snapshot, actions=tuple(_random_action(rng, info) for _ in range(count)))


def _extended(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    """The real actions with more appended, or some dropped or swapped."""
    actions = list(snapshot.actions)
    choice = rng.random()
    if choice < 0.4 or not actions:
        actions += [_random_action(rng, info) for _ in range(rng.randrange(1, 4))]
    elif choice < 0.7:
        del actions[rng.randrange(len(actions))]
    else:
        rng.shuffle(actions)
    return _set(snapshot, actions=tuple(actions))


def _mangled_generator(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    name = rng.choice(("rng_state", "episode_rng_state"))
    state = json.loads(json.dumps(getattr(snapshot, name)))
    state = rng.choice(
        [
            {},
            {"bit_generator": "MT19937"},
            {**state, "state": "x"},
            {**state, "state": {"state": -1, "inc": 1}},
            {**state, "has_uint32": "no"},
        ]
    )
    return _set(snapshot, **{name: state})


def _json_text(snapshot: EnvSnapshot, rng: random.Random, env: TextEnv, info: dict[str, Any]) -> Any:
    """Text read back with :meth:`EnvSnapshot.from_json` after cutting, nesting or flipping it."""
    text = snapshot.to_json()
    choice = rng.random()
    if choice < 0.3:
        text = text[: rng.randrange(len(text))]
    elif choice < 0.45:
        text = "[" * 50_000 + "]" * 50_000
    else:
        chars = list(text)
        for _ in range(rng.randrange(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('"{}[],:0a\\')
        text = "".join(chars)
    return _FromJson(text)


@dataclass(frozen=True)
class _FromJson:
    """A forgery that is JSON text (restored through :meth:`EnvSnapshot.from_json`)."""

    text: str


FAMILIES: dict[str, Forge] = {
    "wrong type": _wrong_type,
    "foreign": _foreign,
    "random actions": _random_actions,
    "changed actions": _extended,
    "mangled generator": _mangled_generator,
    "json text": _json_text,
}
"""The forgery families, each drawn as often as the others."""


@dataclass
class AttackReport:
    """What :func:`attack_snapshots` threw and what it found.

    Attributes:
        forgeries: Forgeries restored.
        refused: Of those, refused with a ``TypeError`` / ``ValueError`` (the env unchanged).
        accepted: Of those, accepted (and checked against a fresh replay).
        errors: ``(family, what went wrong)`` for each broken promise.
    """

    forgeries: int = 0
    refused: int = 0
    accepted: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


def _truth(make: Callable[[], gym.Env], snapshot: EnvSnapshot) -> tuple[str, dict[str, Any]]:
    """What a fresh env gives when it is handed the snapshot's task and generator through the public
    API (reset with the task, the generator set, then ``step`` for each action): the honest replay."""
    env = make()
    try:
        observation, info = env.reset(options={"task_id": snapshot.task_id})
        env.unwrapped.np_random = restored_rng(snapshot.episode_rng_state, "episode_rng_state")
        for action in snapshot.actions:  # a non-text action: an object of a class of that name
            raw = type(action.type_name, (), {})() if isinstance(action, NonText) else action
            observation, _, _, _, info = env.step(raw)
        return observation, info
    finally:
        env.close()


def attack_snapshots(
    env_id: str, *, forgeries: int, seed: int, max_turns: int | None = None, **kwargs: Any
) -> AttackReport:
    """Restores ``forgeries`` forged snapshots of ``env_id`` into a default env (see the module docstring)."""
    settings = {**kwargs, **({} if max_turns is None else {"max_turns": max_turns})}

    def make(**more: Any) -> gym.Env:
        return gym.make(env_id, **settings, **more)

    rng = random.Random(seed)
    source, target = make(privileged=True), make()
    report = AttackReport()
    try:
        target.reset(seed=seed)
        _, info = source.reset(seed=seed)
        families = list(FAMILIES)
        while report.forgeries < forgeries:
            if rng.random() < 0.3:
                _, info = source.reset(seed=rng.randrange(1 << 30))
            else:
                _, _, terminated, truncated, info = source.step(_random_action(rng, info))
                if terminated or truncated:
                    _, info = source.reset(seed=rng.randrange(1 << 30))
            family = families[report.forgeries % len(families)]
            forgery = FAMILIES[family](_text_env(source).snapshot(), rng, _text_env(source), info)
            report.forgeries += 1
            problem = _restore_one(make, target, forgery)
            if problem is None:
                report.accepted += 1
            elif problem == "refused":
                report.refused += 1
            else:
                report.errors.append((family, problem))
    finally:
        source.close()
        target.close()
    return report


def _restore_one(make: Callable[[], gym.Env], target: gym.Env, forgery: Any) -> str | None:
    """None (accepted, and true), ``"refused"`` (cleanly), or what went wrong."""
    env = _text_env(target)
    before = env.snapshot()
    try:
        snapshot = EnvSnapshot.from_json(forgery.text) if isinstance(forgery, _FromJson) else forgery
        observation, info = env.restore(snapshot)
    except (TypeError, ValueError):
        after = env.snapshot()
        return "refused" if after == before else f"refused, but the env changed: {before!r:.200} -> {after!r:.200}"
    except Exception:
        return f"restore raised: {traceback.format_exc(limit=3)}"
    leaked = [key for key in (PRIVILEGED_KEY, *env.privileged_info_keys) if key in info]
    if leaked:
        return f"privileged keys in a default env's info: {leaked}"
    try:
        truth = _truth(make, snapshot)
    except Exception:
        return f"the honest replay raised where the restore did not: {traceback.format_exc(limit=3)}"
    if (observation, info) != truth:
        return f"the restore's observation/info is not the replay's: {observation!r:.200} vs {truth[0]!r:.200}"
    return None
