"""Every credit rule on scripted batches of the diagnostic envs, against their exact credit (no model).

One group per env plays a script: half the members take the signal's item where it matters, half
a wrong one, and every member takes the same item elsewhere (the apple, the door, the first filler).
The policy stand-ins are scripted: the batch's policy writes the script; :class:`PlanReader`
re-scores a response as a model that reads the env's privileged information would (higher where
the PI's plan names the response, lower where it names another item of the menu); VinePPO's
continuations pick uniformly random menu items. Then:

- GRPO and RLOO give every turn of a trajectory the same credit;
- every rule that claims step-level credit (:data:`STEP_LEVEL`: GiGPO, VinePPO, ORSD and TASPO with
  the env's PI) ranks the turns as the exact advantages do (within-trajectory ρ) and gives the
  decisive turn of Umbrella and Bifurcation more credit, in the direction of its exact advantage,
  than the other turns;
- TASPO's weights are positive, within ``[1 − ε_w, 1 + ε_w]`` and average 1 over a trajectory's turns.

A rule registered later is tested here by adding it to :data:`STEP_LEVEL` or :data:`FLAT`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import agentenvs  # noqa: F401  (registers the envs)
from agents.algorithms import TASPOOptions
from agents.algorithms.base import CreditContext, make_credit_rule
from agents.collection.collector import Collector
from agents.config import GRPOConfig
from agents.policy.generation import Generation
from agents.reference.continuations import ContinuationRunner

ENVS: dict[str, dict[str, Any]] = {
    "Umbrella-v0": {"length": 4, "distractor": 0.0},
    "KeyDoor-v0": {"key_turns": 1, "apple_turns": 2, "door_turns": 1},
    "Bifurcation-v0": {"length": 4, "fork_at": 2, "p": 1.0, "q": 0.0, "choices": 3},
}
FLAT: dict[str, tuple[str, dict[str, Any]]] = {"grpo": ("grpo", {}), "rloo": ("rloo", {})}
STEP_LEVEL: dict[str, tuple[str, dict[str, Any]]] = {
    "gigpo": ("gigpo", {}),
    "vine": ("vine", {"continuations": 8}),
    "orsd_env": ("orsd", {"env_pi": "replace", "reuse_prompt_cache": False}),
    "taspo_env": ("taspo", {"env_pi": "replace", "reuse_prompt_cache": False}),
}
GROUP = 6
ADMISSIBLE = re.compile(r"Admissible actions: (\[.*\])")
SIGNAL = re.compile(r"Signal: (\w+)\.")


def menu(prompt: str) -> list[str]:
    found = ADMISSIBLE.findall(prompt)
    return ast.literal_eval(found[-1]) if found else []


def generation(prompt: str, text: str) -> Generation:
    """One token per character (the token id is the character's code)."""
    return Generation(
        prompt, [1], [ord(c) for c in text], text, [-1.0] * len(text), [(i, i + 1) for i in range(len(text))], "stop"
    )


class ScriptPolicy:
    """Member ``i`` of the group takes the signal's item where one is shown iff ``i`` is even,
    else another; the apple and the door always; otherwise the menu's first item."""

    pad_token_id = 0

    def generate(self, prompts: Sequence[str], *, greedy: bool = False, stop: Sequence[str] = ()) -> list[Generation]:
        out = []
        for member, prompt in enumerate(prompts):
            items, signal = menu(prompt), SIGNAL.findall(prompt)[0]
            marked = [item for item in items if item.split()[0] == signal]
            if marked:
                choice = marked[0] if member % 2 == 0 else next(item for item in items if item not in marked)
            else:
                choice = next((item for item in items if item in ("apple", "open the door")), items[0])
            out.append(generation(prompt, choice))
        return out


class UniformPolicy:
    """Continuations: a uniformly random menu item (seeded)."""

    pad_token_id = 0

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def generate(self, prompts: Sequence[str], *, greedy: bool = False, stop: Sequence[str] = ()) -> list[Generation]:
        return [generation(p, (items := menu(p))[int(self.rng.integers(len(items)))]) for p in prompts]


class PlanReader:
    """Scores a response as a model reading the PI would: each token's log-prob is −2, +1.5 where the
    PI's ``Expert plan from here:`` starts with the response's text, −1 where it starts with another
    item of this turn's menu (the PI says the response is wrong)."""

    def score(
        self,
        prompts: Sequence[str],
        responses: torch.Tensor,
        contexts: Sequence[str | None] | None = None,
        *,
        response_mask: torch.Tensor | None = None,
        reuse_from: Sequence[str] | None = None,
    ) -> torch.Tensor:
        mask = torch.ones_like(responses) if response_mask is None else response_mask
        out = torch.full(responses.shape, -2.0) * mask
        for row, prompt in enumerate(prompts):
            text = "".join(chr(int(t)) for t, m in zip(responses[row], mask[row], strict=True) if m)
            pi = f"{contexts[row] if contexts is not None and contexts[row] else ''}\n{prompt}"
            plan = re.findall(r"Expert plan from here: ([^;\n]+)", pi)
            if plan and plan[0].strip() == text:
                out[row] += 1.5 * mask[row]
            elif plan and plan[0].strip() in menu(prompt):
                out[row] -= 1.0 * mask[row]
        return out


@pytest.fixture(scope="module", params=list(ENVS))
def scripted(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The env's scripted group as a batch, its exact credit, and each rule's per-turn credit."""
    env_id = request.param
    env_kwargs = {**ENVS[env_id], "privileged": True}
    collector = Collector(
        ScriptPolicy(), env_id, num_groups=1, group_size=GROUP, env_kwargs=env_kwargs, record_snapshots=True
    )
    try:
        batch, _ = collector.collect(["train-3"], seed=0)
    finally:
        collector.close()
    env = gym.make(env_id, **ENVS[env_id]).unwrapped
    exact = {t: env.trajectory_credit(trajectory) for t, trajectory in enumerate(batch.trajectories)}
    runner = ContinuationRunner(UniformPolicy(), env_id, env_kwargs=env_kwargs, width=64)
    credits, weights = {}, {}
    try:
        for name, (credit, options) in {**FLAT, **STEP_LEVEL}.items():
            config = GRPOConfig(
                credit=credit, credit_options=options, scale_rewards="none" if name == "rloo" else "group"
            )
            torch.manual_seed(0)
            context = CreditContext(config, policy=PlanReader(), continuations=runner)
            result = make_credit_rule(credit, config).compute(batch, context)
            credits[name] = per_turn(result.advantages, batch)
            if "weight" in result.token_values:
                weights[name] = per_turn(result.token_values["weight"], batch)
    finally:
        runner.close()
    return {"env": env_id, "batch": batch, "exact": exact, "credits": credits, "weights": weights}


def per_turn(values: torch.Tensor, batch: Any) -> dict[int, list[float]]:
    """Per trajectory, each turn's mean value over its action's tokens."""
    action = batch.action_mask()
    mask = torch.where(action.any(dim=1, keepdim=True), action, batch.response_mask).double()
    means = ((values.double() * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)).tolist()
    return {t: [means[row] for row in rows] for t, rows in enumerate(batch.rows_by_trajectory())}


def test_the_script_wins_exactly_with_the_signal(scripted: dict[str, Any]) -> None:
    successes = scripted["batch"].trajectory_success.tolist()
    assert successes == [member % 2 == 0 for member in range(GROUP)]


@pytest.mark.parametrize("rule", list(FLAT))
def test_outcome_rules_give_every_turn_of_a_trajectory_the_same_credit(scripted: dict[str, Any], rule: str) -> None:
    for turns in scripted["credits"][rule].values():
        assert turns == pytest.approx([turns[0]] * len(turns), abs=1e-6)
        assert abs(turns[0]) > 0.1  # wins and losses differ


@pytest.mark.parametrize("rule", list(STEP_LEVEL))
def test_step_level_rules_rank_turns_as_the_exact_advantages_do(scripted: dict[str, Any], rule: str) -> None:
    from scipy.stats import spearmanr

    rhos = []
    for t, turns in scripted["credits"][rule].items():
        exact = scripted["exact"][t].advantages
        if np.ptp(exact) > 1e-9:
            rho = spearmanr(turns, exact).statistic
            rhos.append(0.0 if np.isnan(rho) else rho)
    assert rhos and float(np.mean(rhos)) > 0.3, rhos


@pytest.mark.parametrize("rule", list(STEP_LEVEL))
def test_step_level_rules_give_the_decisive_turn_more_credit(scripted: dict[str, Any], rule: str) -> None:
    if scripted["env"] == "KeyDoor-v0":
        pytest.skip("KeyDoor's apples and door are decisive too: the ranking test covers it")
    margins = []
    for t, turns in scripted["credits"][rule].items():
        exact = scripted["exact"][t]
        decisive = exact.decisive.index(True)
        others = [c for k, c in enumerate(turns) if k != decisive]
        margins.append(np.sign(exact.advantages[decisive]) * (turns[decisive] - np.mean(others)))
    assert min(margins) >= -1e-6 and np.mean(margins) > 0.1, margins


def test_taspo_weights_are_positive_bounded_and_mean_preserving(scripted: dict[str, Any]) -> None:
    weights = scripted["weights"]["taspo_env"]
    epsilon = TASPOOptions().epsilon_w
    assert any(np.ptp(turns) > 1e-6 for turns in weights.values())  # the PI moved some weights
    for turns in weights.values():
        assert all(1 - epsilon - 1e-6 <= w <= 1 + epsilon + 1e-6 for w in turns)
        assert np.mean(turns) == pytest.approx(1.0, abs=1e-5)
