"""Registration of agentenvs ids with Gymnasium.

``import agentenvs`` registers every env, so both ``gym.make("SearchQA-v0")`` and
``gym.make("agentenvs:SearchQA-v0")`` work. Registration is idempotent.
:func:`check_env_kwargs` checks a run's env keyword arguments against an env's
constructor before anything is built (a trainer calls it before the model loads);
:func:`with_privileged` turns on the privileged infos for code that needs them.

The turn limit: a :class:`~agentenvs.core.env.TextEnv` enforces its own ``max_turns`` (the
agents, the CLI, TRL and OpenEnv pass it, and ``info["turn"]`` counts against it), and
reports it as ``env.spec.max_episode_steps``. The registry entry has no
``max_episode_steps`` (a ``TimeLimit`` there would be a second limit, wrong whenever
``max_turns`` is passed), and :func:`one_turn_limit` makes ``gym.make(id,
max_episode_steps=n)`` set ``max_turns`` to ``n``: either way an episode has one limit and
reports ``truncated`` once.

>>> import gymnasium as gym, agentenvs
>>> gym.make("SearchQA-v0").spec.max_episode_steps, gym.make("SearchQA-v0", max_turns=6).spec.max_episode_steps
(4, 6)
>>> env = gym.make("SearchQA-v0", max_episode_steps=7)
>>> env.spec.max_episode_steps, env.unwrapped.max_turns
(7, 7)
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec, load_env_creator

from agentenvs.core.checks import check_value, did_you_mean
from agentenvs.core.env import TextEnv

ONE_TURN_LIMIT = WrapperSpec("OneTurnLimit", "agentenvs.core.registration:one_turn_limit", {})
"""The registered step that makes ``gym.make``'s ``max_episode_steps`` the env's ``max_turns``."""


def register_env(env_id: str, entry_point: str, **kwargs: Any) -> None:
    """Registers ``env_id`` unless it already is (re-imports stay silent).

    ``gym.make`` adds no passive env checker: gymnasium's marks the first reset as checked
    before running it, so a first reset that raises (an unknown task id, say) leaves it
    unable to step ever after (``TypeError: cannot unpack non-iterable NoneType``). Every env
    here passes ``gymnasium.utils.env_checker.check_env`` in the tests instead. ``gym.make``
    ends with :func:`one_turn_limit` (see the module docstring).
    """
    if env_id in gym.registry:
        return
    gym.register(
        id=env_id,
        entry_point=entry_point,
        disable_env_checker=True,
        additional_wrappers=(ONE_TURN_LIMIT,),
        **kwargs,
    )


def one_turn_limit(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """Makes the ``TimeLimit`` of ``gym.make(id, max_episode_steps=n)`` and the env's ``max_turns`` one limit.

    ``gym.make`` runs it last, on the env it built (it returns ``env`` itself, adding no
    layer). Where a ``TimeLimit`` of ``n`` steps wraps a :class:`~agentenvs.core.env.TextEnv`
    whose ``max_turns`` differs, ``max_turns`` becomes ``n``, so both end the episode on the
    same step (``truncated`` reported once, ``info["turn"]`` and ``env.spec`` agreeing).

    Raises:
        ValueError: when ``max_turns`` and a different ``max_episode_steps`` were both passed
            (two limits; the env is closed first).
    """
    text_env = env.unwrapped
    steps = _time_limit_steps(env)
    if not isinstance(text_env, TextEnv) or steps is None or steps == text_env.max_turns:
        return env
    made = text_env._made_spec
    if made is not None and "max_turns" in made.kwargs:
        env.close()
        raise ValueError(
            f"{made.id}: max_turns={made.kwargs['max_turns']!r} and max_episode_steps={steps} set two turn "
            "limits; pass one (they mean the same: the steps before the episode is truncated)"
        )
    text_env.max_turns = steps
    return env


def _time_limit_steps(env: gym.Env[Any, Any]) -> int | None:
    """The ``max_episode_steps`` of the outermost ``TimeLimit`` around ``env``'s core (None: none)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            steps = getattr(env, "_max_episode_steps", None)  # TimeLimit keeps its argument there only
            return steps if isinstance(steps, int) else None
        env = env.env
    return None


def with_privileged(env_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``privileged=True`` added where ``env_id``'s env takes it and ``kwargs`` do not say.

    For code that reads privileged infos (credit rules, evaluation, the expert): agentenvs
    envs leave them out unless asked. An env that takes no ``privileged`` keyword (one of
    your own) gets ``kwargs`` unchanged.

    >>> import agentenvs
    >>> with_privileged("SearchQA-v0", {"top_k": 2})
    {'top_k': 2, 'privileged': True}
    >>> with_privileged("SearchQA-v0", {"privileged": False})
    {'privileged': False}
    """
    result = dict(kwargs)
    if "privileged" in result:
        return result
    module, _, registered_id = env_id.rpartition(":")
    if module:  # "module:EnvId", as gym.make takes it: importing the module registers the id
        importlib.import_module(module)
    constructor = env_constructor(registered_id)
    target = constructor.__init__ if isinstance(constructor, type) else constructor  # type: ignore[misc]
    parameters = inspect.signature(target).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    if "privileged" in parameters or (takes_any and isinstance(constructor, type) and issubclass(constructor, TextEnv)):
        result["privileged"] = True
    return result


def agentenvs_ids() -> list[str]:
    """The registered env ids whose entry point is in ``agentenvs``, sorted."""
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("agentenvs.")
    )


def env_constructor(env_id: str) -> Any:
    """The class (or factory) a registered id builds, without building it.

    Raises:
        ValueError: naming an id that is not registered.
    """
    if not isinstance(env_id, str) or env_id not in gym.registry:
        known = ", ".join(sorted(name for name in gym.registry if not name.startswith(("ALE/", "phys2d/", "tabular/"))))
        raise ValueError(f"env id {_short(env_id)} is not registered (import agentenvs first); known: {known}")
    entry_point = gym.spec(env_id).entry_point
    return load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point


def check_env_kwargs(owner: str, name: str, env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Checks ``kwargs`` against the constructor of ``env_id`` before anything is built.

    Every key must be a keyword the constructor takes; a value whose parameter is annotated
    ``int``, ``float``, ``bool`` or a ``Literal`` must fit it (other values are the env's to
    check when it is made). Errors name ``owner.name`` and the key.

    >>> import agentenvs
    >>> check_env_kwargs("GRPOConfig", "env_kwargs", "SearchQA-v0", {"top_k": 2})
    >>> check_env_kwargs("GRPOConfig", "env_kwargs", "SearchQA-v0", {"topk": 2})
    Traceback (most recent call last):
    ...
    ValueError: GRPOConfig.env_kwargs has 'topk', which SearchQA-v0 does not take (did you mean 'top_k'?); it takes: ...
    """
    constructor = env_constructor(env_id)
    target = constructor.__init__ if isinstance(constructor, type) else constructor  # type: ignore[misc]
    parameters = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = sorted(
        key for key, p in parameters.items() if key != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL
    )
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # an annotation that does not resolve: check the names only
        hints = {}
    for key, value in kwargs.items():
        if key not in accepted:
            raise ValueError(
                f"{owner}.{name} has {_short(key)}, which {env_id} does not take{did_you_mean(str(key), accepted)}; "
                f"it takes: {', '.join(accepted)}"
            )
        annotation = hints.get(key)
        scalar = annotation in (int, float, bool) or typing.get_origin(annotation) is Literal
        if scalar:
            check_value(owner, f"{name}[{key!r}]", value, annotation)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
