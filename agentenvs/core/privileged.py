"""Privileged information: what an env knows about the episode that its agent must not see.

Every :class:`~agentenvs.core.env.TextEnv` puts a dict under ``info["privileged"]`` at
reset and at every step (an env that knows nothing extra puts ``{}``). Its entries are
the env's own, documented by a ``TypedDict`` in its module (``SearchQAPrivileged``,
``WebShopPrivileged``, ``ALFWorldPrivileged``); no observation ever shows them. They are
for credit rules that condition on privileged information (PI), for evaluation and for
the expert; ``wrappers.StripPrivileged`` removes them before an env is handed to code that
must not read them.

The dict holds JSON values only — ``str``, ``bool``, ``float``, ``None``, lists and dicts
with ``str`` keys fixed by the schema (never data-driven keys, which Gymnasium's vector
info merging would turn into nested mask entries) — so that it survives
``gymnasium.vector`` info merging (``DictInfoToList`` gives it back per member) and the
JSON lines of :mod:`agentenvs.core.trajectory` unchanged. A key always has the same kind
of value within an env (a float never becomes None: vector merging stores it in a float
array), except where a schema says ``list | None``.

Example:
    >>> privileged = {"gold_answers": ["Paris"], "supporting_titles": ["France"]}
    >>> is_json_stable(privileged)
    True
    >>> privileged_of({"task_id": "q1", PRIVILEGED_KEY: privileged})["gold_answers"]
    ['Paris']
    >>> copy_json(privileged) == privileged and copy_json(privileged) is not privileged
    True
    >>> strip_privileged({"task_id": "q1", PRIVILEGED_KEY: privileged})
    {'task_id': 'q1'}
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

PRIVILEGED_KEY = "privileged"
"""The ``info`` key under which every env puts its privileged dict."""


def privileged_of(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """The privileged dict of an env's ``info`` (None when absent, e.g. stripped)."""
    value = info.get(PRIVILEGED_KEY)
    return value if isinstance(value, dict) else None


def privileged_keys(env: Any) -> frozenset[str]:
    """The info keys holding privileged information for ``env`` (a wrapped env is fine).

    ``"privileged"`` and the env class's ``privileged_info_keys`` (e.g. ALFWorld's
    ``expert_action``, SearchQA's ``gold_answers``).
    """
    extra = getattr(getattr(env, "unwrapped", env), "privileged_info_keys", ())
    return frozenset((PRIVILEGED_KEY, *extra))


def strip_privileged(info: Mapping[str, Any], keys: Collection[str] = (PRIVILEGED_KEY,)) -> dict[str, Any]:
    """A copy of ``info`` without ``keys`` (pass :func:`privileged_keys` of the env to drop them all).

    For what crosses to code that must not read privileged information (a remote
    agent, an evaluation harness); ``wrappers.StripPrivileged`` applies it to an env.
    """
    return {key: value for key, value in info.items() if key not in keys}


def copy_json(value: Any) -> Any:
    """A copy of a tree of dicts and lists (leaves shared: they are immutable JSON scalars).

    Envs keep one privileged dict per episode and hand out a copy with every ``info``,
    so that a consumer editing one info never changes another (or the env's own).
    """
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def is_json_stable(value: Any) -> bool:
    """Whether ``value`` comes back equal from a JSON round trip (no tuples, no numpy, str keys)."""
    try:
        return bool(json.loads(json.dumps(value, allow_nan=False)) == value)
    except (TypeError, ValueError):
        return False
