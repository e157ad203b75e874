"""Our credit rules (``grpo``, ``rloo``, ``gigpo``, ``orsd``, ``taspo``) inside TRL's ``GRPOTrainer``.

:class:`~agents.integrations.trl.trainer.CreditGRPOTrainer` is ``trl.GRPOTrainer`` plus
``credit=`` and ``credit_options=`` (the options of our trainer's ``GRPOConfig``): after TRL has
generated, stepped the tools and scored the rewards, it turns the batch into the rule's input
(:class:`~agents.rollout.RolloutBatch`, one row per turn, and the trajectory groups), runs the
registered rule, and hands its ``[B, T]`` output to TRL's loss as the advantages. The rule is
the same object our trainer runs; nothing of its maths is repeated here.

The pieces, each a module with one job:

- :mod:`~agents.integrations.trl.turns`: a completion's turns and its ``act`` argument's exact
  token span (pure functions on token ids and ``tool_mask``);
- :mod:`~agents.integrations.trl.episodes`: one completion as a trajectory and its rows;
- :mod:`~agents.integrations.trl.scoring`: the PI pass with the model TRL trains;
- :mod:`~agents.integrations.trl.trainer`: the ``GRPOTrainer`` subclass.

``trl`` is an optional extra: only :mod:`~agents.integrations.trl.trainer` imports it, when its
class is first asked for (``from agents.integrations.trl import CreditGRPOTrainer``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CreditGRPOTrainer"]


def __getattr__(name: str) -> Any:
    if name == "CreditGRPOTrainer":
        from agents.integrations.trl.trainer import CreditGRPOTrainer

        return CreditGRPOTrainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
