"""``Stairs-v0``: a deterministic toy env with snapshots and an expert, and scripted policies for it.

The agent climbs ``goal`` steps within ``max_turns`` turns: ``up`` climbs one (reward 1 and the
win on reaching the goal), ``wait`` stays, anything else is invalid (nothing moves). Every
observation names the turn and the step, so a scripted policy can read its state off the
prompt and a step value is known by hand. Its snapshots are TextEnv's (a replay, as the real
envs' are); it counts restores (:attr:`StairsEnv.restores`), and its expert always says ``up``.

Example:
    >>> env = StairsEnv()
    >>> env.reset(options={"task_id": "stairs-2"})[0]
    'Turn 0: you are on step 0 of 2.'
    >>> saved = env.snapshot()
    >>> env.step("up")[:3]
    ('Turn 1: you are on step 1 of 2.', 0.0, False)
    >>> env.restore(saved)[0]
    'Turn 0: you are on step 0 of 2.'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.snapshots import EnvSnapshot
from agents.policy.generation import Generation

ENV_ID = "Stairs-v0"
STATE = re.compile(r"Turn (\d+): you are on step (\d+) of (\d+)\.")


class StairsEnv(TextEnv):
    """See the module docstring (``max_turns`` defaults to 2, goals are 2 or 3 steps)."""

    restores: ClassVar[int] = 0
    """Restores done by any StairsEnv (a test resets it)."""

    def __init__(self, *, max_turns: int = 2, action_format: str = "raw", **kwargs: Any) -> None:
        super().__init__(max_turns=max_turns, action_format=action_format, **kwargs)
        self._step = 0
        self._goal = 2

    @property
    def task_ids(self) -> tuple[str, ...]:
        return ("stairs-2", "stairs-3")

    def _task_text(self, task_id: str) -> str:
        return f"Climb {task_id[-1]} steps."

    def _seen(self) -> str:
        return f"Turn {self._turn}: you are on step {self._step} of {self._goal}."

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        self._goal, self._step = int(task_id[-1]), 0
        return self._seen(), {}

    def _act(self, action: str) -> Outcome:
        if action == "up":
            self._step += 1
            won = self._step >= self._goal
            return Outcome(self._seen(), reward=float(won), terminated=won, won=won)
        if action == "wait":
            return Outcome(self._seen())
        return Outcome(f"Unknown action. {self._seen()}", action_valid=False)

    def _admissible_actions(self) -> list[str]:
        return ["up", "wait"]

    def expert_action(self) -> str | None:
        return None if self._done or self._task_id is None else "up"

    def _snapshot_scope(self) -> str:
        return repr(self.task_ids)  # nothing builds the world: its tasks are fixed

    def restore(self, snapshot: EnvSnapshot) -> tuple[str, dict[str, Any]]:
        restored = super().restore(snapshot)
        type(self).restores += 1
        return restored


class StairsNoSnapshots(StairsEnv):
    """Stairs without ``snapshot``/``restore`` (turn states come back by replay)."""

    snapshot = None  # type: ignore[assignment]
    restore = None  # type: ignore[assignment]


def register_stairs() -> str:
    """Registers ``Stairs-v0`` and ``StairsNoSnapshots-v0`` (idempotent); returns the first id."""
    from agentenvs.core.registration import register_env

    register_env(ENV_ID, "tests.support.stairs:StairsEnv")
    register_env("StairsNoSnapshots-v0", "tests.support.stairs:StairsNoSnapshots")
    return ENV_ID


def generation(prompt: str, text: str) -> Generation:
    """A one-character-per-token generation of ``text``."""
    ids = [ord(c) % 97 + 1 for c in text]
    return Generation(prompt, [1, 2, 3], ids, text, [-0.5] * len(ids), [(i, i + 1) for i in range(len(text))], "stop")


def state_of(prompt: str) -> tuple[int, int]:
    """The (turn, step) of the current observation in a prompt (its last state line)."""
    turn, step, _ = STATE.findall(prompt)[-1]
    return int(turn), int(step)


class ScriptedPolicy:
    """Collection: answer ``script[turn][member]`` (running members in order, as the collector asks)."""

    pad_token_id = 0

    def __init__(self, script: Sequence[Sequence[str]]) -> None:
        self.script = [list(outputs) for outputs in script]
        self.calls = 0

    def generate(self, prompts: Sequence[str], *, greedy: bool = False, stop: Sequence[str] = ()) -> list[Generation]:
        outputs = self.script[self.calls]
        self.calls += 1
        return [generation(prompt, outputs[i]) for i, prompt in enumerate(prompts)]


class RulePolicy:
    """Continuations: answers ``rule(turn, step, n)`` where ``n`` counts earlier prompts at the same
    (turn, step); counts every prompt it was asked (:attr:`prompts`)."""

    pad_token_id = 0

    def __init__(self, rule: Callable[[int, int, int], str]) -> None:
        self.rule = rule
        self.seen: dict[tuple[int, int], int] = {}
        self.prompts: list[str] = []

    def generate(self, prompts: Sequence[str], *, greedy: bool = False, stop: Sequence[str] = ()) -> list[Generation]:
        out = []
        for prompt in prompts:
            state = state_of(prompt)
            n = self.seen.get(state, 0)
            self.seen[state] = n + 1
            self.prompts.append(prompt)
            out.append(generation(prompt, self.rule(*state, n)))
        return out


SCRIPT = [["up", "wait", "hop"], ["up", "up", "up"]]
"""Member A climbs twice and wins; B waits then climbs (truncated, 0); C writes an invalid 'hop'
then climbs (penalised 0.5, truncated)."""


def collect_stairs(*, record_snapshots: bool, env_id: str | None = None, success_bonus: float = 0.0) -> Any:
    """One group of three playing :data:`SCRIPT` on ``stairs-2`` (max 2 turns), invalid-action
    penalty 0.5: rows A0, A1, B0, B1, C0, C1."""
    from agents.collection.collector import Collector

    env_id = env_id or register_stairs()
    collector = Collector(
        ScriptedPolicy(SCRIPT),
        env_id,
        num_groups=1,
        group_size=3,
        invalid_action_penalty=0.5,
        success_bonus=success_bonus,
        record_snapshots=record_snapshots,
    )
    try:
        batch, _ = collector.collect(["stairs-2"], seed=7)
    finally:
        collector.close()
    return batch


def alternate_at_start(turn: int, step: int, n: int) -> str:
    """``up`` and ``wait`` in turn from the first state (turn 0), ``up`` everywhere else."""
    return ("up", "wait")[n % 2] if turn == 0 else "up"
