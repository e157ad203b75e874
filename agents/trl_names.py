"""Where :class:`agents.GRPOConfig` differs from TRL's ``trl.GRPOConfig``, which shares its name.

A field of ours named as a TRL field means what TRL's means and has TRL 1.16's default, except
the few in :data:`DIFFERENT_DEFAULTS` (each with the reason). TRL names we spell differently
are in :data:`TRL_RENAMED`: passing one to ``GRPOConfig`` is an error that names our field, so
code written for TRL fails at once with the fix instead of ``unexpected keyword argument``.
``tests/agents/test_trl_names.py`` checks both tables against the installed TRL and docs/agents.md.

Example:
    >>> trl_hint("num_generations")
    "num_generations is TRL's name; agents.GRPOConfig calls it group_size (rollouts per task, G)"
    >>> trl_hint("group_size") is None
    True
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

C = TypeVar("C", bound=type)

TRL_VERSION = "1.16"
"""The TRL release the tables were checked against."""

DIFFERENT_DEFAULTS: dict[str, str] = {
    "output_dir": "None means a new numbered runs/<rule>-<env>-<n> (TRL: None means 'trainer_output', reused)",
}
"""Fields named as TRL's whose default does not do what TRL's does, and why."""

TRL_RENAMED: dict[str, str] = {
    "num_generations": "group_size (rollouts per task, G)",
    "generation_batch_size": "num_groups × group_size (num_groups: tasks per step)",
    "max_completion_length": "max_new_tokens (per turn)",
    "per_device_train_batch_size": "micro_batch_size",
    "steps_per_generation": "mini_batches",
    "max_steps": "learn(total_steps=...)",
    "eval_steps": "eval_every",
    "save_steps": "save_every",
    "resume_from_checkpoint": "resume (from output_dir)",
    "report_to": "tensorboard",
    "bf16": 'dtype="bfloat16"',
    "fp16": 'dtype="float16"',
    "use_cpu": 'device="cpu" (the default)',
}
"""TRL ``GRPOConfig`` names and what ``agents.GRPOConfig`` (or the agent) calls them."""


def trl_hint(name: str) -> str | None:
    """The message for a TRL field name given to ``agents.GRPOConfig`` (None: not a renamed TRL name)."""
    ours = TRL_RENAMED.get(name)
    if ours is None:
        return None
    return f"{name} is TRL's name; agents.GRPOConfig calls it {ours}"


def refuse_trl_names(cls: C) -> C:
    """Class decorator: the dataclass ``cls`` refuses a renamed TRL keyword with :func:`trl_hint`'s message."""
    init = vars(cls)["__init__"]  # the generated one, not an inherited one

    @functools.wraps(init)  # keeps the dataclass signature (inspect, tyro, IDEs follow __wrapped__)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for name in kwargs:
            hint = trl_hint(name)
            if hint is not None:
                raise TypeError(f"{type(self).__name__} got {name}=...: {hint}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]  # wrapping the generated __init__
    return cls
