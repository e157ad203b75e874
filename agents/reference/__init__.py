"""Reference step values of a collected batch: what each turn was worth, measured by playing on.

- :mod:`~agents.reference.starts`: where each turn started (a snapshot, or a replay from reset)
  and the envs put back there;
- :mod:`~agents.reference.values`: the step values V(s_t), V(s_{t+1}) and the advantage
  r_t + V(s_{t+1}) − V(s_t) of every turn, from any player of returns;
- :mod:`~agents.reference.continuations`: the current policy as that player (VinePPO's Monte
  Carlo values, ``credit="vine"``);
- :mod:`~agents.reference.expert`: the env's expert as that player (QVal-style Q^E, V^E, A^E).
"""

from agents.reference.continuations import ContinuationRunner
from agents.reference.expert import ExpertPlayer
from agents.reference.starts import EnvPool, TurnStart, put_at, turn_starts
from agents.reference.values import ReturnPlayer, StepValues, state_keys, step_advantages, step_values

__all__ = [
    "ContinuationRunner",
    "EnvPool",
    "ExpertPlayer",
    "ReturnPlayer",
    "StepValues",
    "TurnStart",
    "put_at",
    "state_keys",
    "step_advantages",
    "step_values",
    "turn_starts",
]
