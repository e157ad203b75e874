"""What ``python -m agentenvs list`` and ``info`` show of an env, read from its class (nothing here is a table to keep in step).

The datasets, splits and observation modes are the ``Literal`` values of the constructor's
arguments (else the quoted values its ``Args:`` doc names); the held-out split is the class's
``held_out_split``.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentenvs.core.env import TextEnv


@dataclass(frozen=True)
class Choice:
    """The values a constructor argument declares (its ``Literal`` annotation, else its Args doc)."""

    argument: str
    values: tuple[str, ...]
    default: str | None

    def shown(self) -> str:
        return ", ".join(f"{value} (default)" if value == self.default else value for value in self.values)


@dataclass(frozen=True)
class Declaration:
    """What ``list`` and ``info`` show of one registered env before it is built."""

    env_id: str
    entry_point: str
    env_class: type
    summary: str
    datasets: Choice | None
    splits: Choice | None
    held_out_split: str | None
    split_roles: Mapping[str, str]
    observation_modes: Choice | None
    takes_action_format: bool
    lists_admissible_actions: bool


DATASET_ARGUMENTS = ("dataset", "source")
"""The constructor arguments that choose where tasks come from (ALFWorld calls it ``source``)."""


def _literal_values(hint: Any) -> tuple[str, ...]:
    """The string values of a ``Literal`` annotation, through ``| None`` and aliases."""
    if typing.get_origin(hint) is typing.Literal:
        return tuple(value for value in typing.get_args(hint) if isinstance(value, str))
    return tuple(value for arg in typing.get_args(hint) for value in _literal_values(arg))


def _argument_doc(env_class: type, argument: str) -> str:
    """The text of ``argument``'s entry in the class docstring's ``Args:`` section ("" if none)."""
    doc = inspect.getdoc(env_class) or ""
    args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
    match = re.search(rf"^([ \t]*){re.escape(argument)}:(.*(?:\n\1[ \t]+.*)*)", args, flags=re.MULTILINE)
    return " ".join(match.group(2).split()) if match else ""


def _choice(env_class: type, parameters: Any, hints: dict[str, Any], argument: str) -> Choice | None:
    if argument not in parameters:
        return None
    values = _literal_values(hints.get(argument))
    if not values:  # an argument typed ``str``: the quoted values its doc names
        values = tuple(dict.fromkeys(re.findall(r'``"([^"`]+)"``', _argument_doc(env_class, argument))))
    if not values:
        return None
    default = parameters[argument].default
    return Choice(argument, values, default if isinstance(default, str) else None)


def _summary(env_id: str, env_class: type) -> str:
    """The first line of the env module's docstring, without its ``ENV_ID:`` prefix."""
    module = sys.modules.get(env_class.__module__)
    line = ((module.__doc__ if module else None) or env_class.__doc__ or env_id).strip().splitlines()[0]
    return line.removeprefix(f"{env_id}:").strip()


def declaration(env_id: str) -> Declaration:
    """What ``env_id``'s class declares: datasets, splits, observation modes, action formats.

    >>> d = declaration("WebShop-v0")
    >>> d.datasets.values, d.held_out_split, d.observation_modes.default
    (('generated', 'official'), 'test', 'text')
    """
    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    if not (inspect.isclass(creator) and issubclass(creator, TextEnv)):
        raise TypeError(f"{env_id} is not an agentenvs TextEnv")
    parameters = inspect.signature(creator).parameters
    try:
        hints = typing.get_type_hints(creator.__init__)
    except (NameError, TypeError):  # an annotation that only resolves under TYPE_CHECKING
        hints = {}
    dataset_argument = next((name for name in DATASET_ARGUMENTS if name in parameters), "dataset")
    return Declaration(
        env_id=env_id,
        entry_point=str(entry_point),
        env_class=creator,
        summary=_summary(env_id, creator),
        datasets=_choice(creator, parameters, hints, dataset_argument),
        splits=_choice(creator, parameters, hints, "split"),
        held_out_split=creator.held_out_split,
        split_roles=getattr(creator, "split_roles", {}),
        observation_modes=_choice(creator, parameters, hints, "observation_mode"),
        takes_action_format="action_format" in parameters,
        lists_admissible_actions=creator._admissible_actions is not TextEnv._admissible_actions,
    )
