"""Registration of agentenvs ids with Gymnasium.

``import agentenvs`` registers every env, so both ``gym.make("SearchQA-v0")`` and
``gym.make("agentenvs:SearchQA-v0")`` work. Registration is idempotent.
:func:`check_env_kwargs` checks a run's env keyword arguments against an env's
constructor before anything is built (a trainer calls it before the model loads).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentenvs.core.checks import check_value


def register_env(env_id: str, entry_point: str, **kwargs: Any) -> None:
    """Registers ``env_id`` unless it already is (re-imports stay silent).

    ``gym.make`` adds no passive env checker: gymnasium's marks the first reset as checked
    before running it, so a first reset that raises (an unknown task id, say) leaves it
    unable to step ever after (``TypeError: cannot unpack non-iterable NoneType``). Every env
    here passes ``gymnasium.utils.env_checker.check_env`` in the tests instead.
    """
    if env_id in gym.registry:
        return
    gym.register(id=env_id, entry_point=entry_point, disable_env_checker=True, **kwargs)


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
    ValueError: GRPOConfig.env_kwargs has 'topk', which SearchQA-v0 does not take; it takes: ...
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
                f"{owner}.{name} has {_short(key)}, which {env_id} does not take; it takes: {', '.join(accepted)}"
            )
        annotation = hints.get(key)
        scalar = annotation in (int, float, bool) or typing.get_origin(annotation) is Literal
        if scalar:
            check_value(owner, f"{name}[{key!r}]", value, annotation)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
