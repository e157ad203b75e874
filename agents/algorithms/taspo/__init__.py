"""TASPO: privileged information from successful siblings, turned into bounded action weights.

- :mod:`~agents.algorithms.taspo.guidance`: guidance items from the group's successful trajectories;
- :mod:`~agents.algorithms.taspo.alignment`: the items the target's own path supports, turn by turn;
- :mod:`~agents.algorithms.taspo.weights`: action support, mean-1 weights and w · A (pure functions);
- :mod:`~agents.algorithms.taspo.rule`: the registered credit rule ``"taspo"`` and its options.
"""

from agents.algorithms.taspo.rule import TASPOCredit, TASPOOptions
from agents.algorithms.taspo.weights import (
    action_support,
    taspo_weights,
    trajectory_row_weights,
    weighted_token_advantages,
)

__all__ = [
    "TASPOCredit",
    "TASPOOptions",
    "action_support",
    "taspo_weights",
    "trajectory_row_weights",
    "weighted_token_advantages",
]
