"""Diagnostic credit-assignment envs: tiny text chains whose credit is known exactly.

- ``Umbrella-v0`` (:mod:`~agentenvs.diagnostics.umbrella`): the first choice decides the end's
  reward; fillers add coin-flip distractor rewards (after bsuite's umbrella_length / _distract).
- ``KeyDoor-v0`` (:mod:`~agentenvs.diagnostics.keydoor`): key, apples, door (after Hung et al., 2019).
- ``Bifurcation-v0`` (:mod:`~agentenvs.diagnostics.bifurcation`): one fork sets the odds of a noisy
  outcome, early, middle or late in the chain.

Each env's difficulty is its constructor arguments; :meth:`DiagnosticEnv.exact_credit` gives the
exact value of every state and advantage of every action along a trajectory (:mod:`.chain`).
"""

from agentenvs.diagnostics.bifurcation import BifurcationEnv
from agentenvs.diagnostics.chain import DiagnosticEnv, DiagnosticPrivileged, DiagnosticTask, ExactCredit, Stage
from agentenvs.diagnostics.keydoor import KeyDoorEnv
from agentenvs.diagnostics.umbrella import UmbrellaEnv

__all__ = [
    "BifurcationEnv",
    "DiagnosticEnv",
    "DiagnosticPrivileged",
    "DiagnosticTask",
    "ExactCredit",
    "KeyDoorEnv",
    "Stage",
    "UmbrellaEnv",
]
