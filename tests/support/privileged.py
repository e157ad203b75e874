"""Deterministic stand-ins for the credit tests (and ``benchmarks/credit_overhead.py``).

A character-level scorer, a batch builder, a hand-checkable ALFWorld-style trajectory
group and ``LetterHunt-v0``, a two-turn toy env for end-to-end training tests.

:class:`CharScorer` scores a response one character-token at a time with a rule of
(prompt, token id, position) — so a test can say exactly how privileged text moves each
token's log-prob — and :func:`batch_from_groups` lays trajectory groups out as a
:class:`~agents.rollout.RolloutBatch` with one token per character of each raw output
(action token span = action character span).

Example:
    >>> scorer = CharScorer(lambda prompt, token, position: -1.0 + ("hint" in prompt) * 0.5)
    >>> scorer(["hint: x", "x"], torch.tensor([[104, 105], [104, 0]]), None,
    ...        response_mask=torch.tensor([[1, 1], [1, 0]]))
    tensor([[-0.5000, -0.5000],
            [-1.0000,  0.0000]])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch

from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
from agents.rollout import RolloutBatch, RolloutRow


class CharScorer:
    """``score(prompts, responses, contexts, *, response_mask)`` from a per-token rule; counts calls.

    ``contexts[i]`` (if given) is put before prompt ``i`` with a blank line, like the real policy.
    It is callable (a score function) and has ``score`` (the part of the policy protocol a
    ``CreditContext`` uses), so it stands in for a policy in rules that only re-score.
    """

    def __init__(self, rule: Callable[[str, int, int], float]) -> None:
        self.rule = rule
        self.calls = 0
        self.rows_scored = 0

    def __call__(
        self,
        prompts: Sequence[str],
        responses: torch.Tensor,
        contexts: Sequence[str | None] | None = None,
        *,
        response_mask: torch.Tensor | None = None,
        reuse_from: Sequence[str] | None = None,  # kept KV changes the cost, never the scores
    ) -> torch.Tensor:
        self.calls += 1
        self.rows_scored += len(prompts)
        mask = torch.ones_like(responses) if response_mask is None else response_mask
        out = torch.zeros(responses.shape, dtype=torch.float32)
        for row, prompt in enumerate(prompts):
            if contexts is not None and contexts[row]:
                prompt = f"{contexts[row]}\n\n{prompt}"
            for position in range(int(mask[row].sum())):
                out[row, position] = self.rule(prompt, int(responses[row, position]), position)
        return out

    score = __call__


class RecordingScorer(CharScorer):
    """A :class:`CharScorer` that also keeps every prompt it scored (in order), contexts not applied,
    and with ``rows`` each scored (prompt, response ids)."""

    def __init__(self, rule: Callable[[str, int, int], float]) -> None:
        super().__init__(rule)
        self.prompts: list[str] = []
        self.rows: list[tuple[str, tuple[int, ...]]] = []

    def __call__(
        self, prompts: Sequence[str], responses: torch.Tensor, *args, response_mask=None, **kwargs
    ) -> torch.Tensor:
        self.prompts += list(prompts)
        mask = torch.ones_like(responses) if response_mask is None else response_mask
        self.rows += [(p, tuple(r[m.bool()].tolist())) for p, r, m in zip(prompts, responses, mask, strict=True)]
        return super().__call__(prompts, responses, *args, response_mask=response_mask, **kwargs)

    def clear(self) -> None:
        """Forgets what was scored so far."""
        self.prompts.clear()
        self.rows.clear()

    def scored_for(self, batch: RolloutBatch, row: int) -> list[str]:
        """The scored prompts that extend ``batch``'s prompt of ``row`` (PI at the end) with its response."""
        response = tuple(batch.response_ids[row][batch.response_mask[row].bool()].tolist())
        return [p for p, r in self.rows if r == response and p.startswith(batch.prompts[row])]

    score = __call__


def default_prompt(task: str, observation: str) -> str:
    """The prompt the test batches use: the task line, then the observation."""
    return f"Task: {task}\n{observation}\nYour action:"


def batch_from_groups(
    groups: Sequence[TrajectoryGroup],
    scorer: Callable[..., torch.Tensor] | None = None,
    *,
    prompt: Callable[[str, str], str] = default_prompt,
) -> RolloutBatch:
    """One row per turn, character tokens; ``old_logprobs`` from ``scorer`` (zeros if None)."""
    rows: list[RolloutRow] = []
    index = 0
    for group in groups:
        for trajectory in group.trajectories:
            for turn_number, turn in enumerate(trajectory.turns):
                ids = [ord(char) for char in turn.raw_output] or [32]
                span = turn.action_span
                token_span = None if span is None else (span.start, span.end)
                rows.append(
                    RolloutRow(
                        default_prompt(trajectory.task, turn.observation)
                        if prompt is None
                        else prompt(trajectory.task, turn.observation),
                        [1],
                        ids,
                        [0.0] * len(ids),
                        token_span,
                        index,
                        turn_number,
                        group.group_id,
                        turn.reward,
                        turn.valid,
                    )
                )
            index += 1
    batch = RolloutBatch.from_groups(rows, list(groups), pad_token_id=0)
    if scorer is not None:
        batch.old_logprobs = scorer(batch.prompts, batch.response_ids, None, response_mask=batch.response_mask)
    return batch


def make_turn(observation: str, action: str, *, reward: float = 0.0, valid: bool = True, thought: str = "ok"):
    """A turn whose raw output is ``<think>thought</think><action>action</action>`` with its span."""
    from agentenvs.core.trajectory import ActionSpan, Turn

    prefix = f"<think>{thought}</think><action>"
    raw = f"{prefix}{action}</action>" if valid else f"<think>{thought}</think>{action}"
    span = ActionSpan(len(prefix), len(prefix) + len(action)) if valid else None
    return Turn(observation, raw, action if valid else "", span, reward, valid)


def make_trajectory(
    task: str,
    steps: Sequence[tuple[str, str]],
    success: bool,
    *,
    group_id: int = 0,
    task_id: str = "toy",
    final_observation: str = "",
):
    """A trajectory from (observation, action) pairs; score 1.0 on success."""

    turns = [make_turn(observation, action) for observation, action in steps]
    return Trajectory(
        task_id,
        group_id,
        turns,
        success,
        float(success),
        task=task,
        initial_observation=steps[0][0] if steps else "",
        final_observation=final_observation,
    )


def with_expert_plans(group: TrajectoryGroup) -> TrajectoryGroup:
    """``group`` with ALFWorld-style env PI: after every step ``info["privileged"]["expert_plan"]``
    is the rest of the trajectory's own actions, and the reset's (``initial_privileged``)
    all of them; so the plan that held before turn t starts with turn t's action."""
    for trajectory in group.trajectories:
        actions = [turn.action for turn in trajectory.turns]
        trajectory.initial_privileged = {"expert_plan": actions}
        for t, turn in enumerate(trajectory.turns):
            turn.info = {"privileged": {"expert_plan": actions[t + 1 :]}}
    return group


TOY_TASK = "put a pen in drawer 1."


def toy_group(group_id: int = 0, task_id: str = "toy") -> TrajectoryGroup:
    """Two successes and two failures at an ALFWorld-style task (fixed, hand-checkable)."""
    start = "You are in a room. You see a desk 1 and a drawer 1."
    win_a = [
        (start, "go to desk 1"),
        ("On the desk 1, you see a pen 2 and a mug 1.", "take pen 2 from desk 1"),
        ("You pick up the pen 2 from the desk 1.", "go to drawer 1"),
        ("The drawer 1 is open.", "put pen 2 in/on drawer 1"),
    ]
    win_b = [
        (start, "look"),
        (start, "go to desk 1"),
        ("On the desk 1, you see a pen 2 and a mug 1.", "take pen 2 from desk 1"),
        ("You pick up the pen 2 from the desk 1.", "go to drawer 1"),
        ("The drawer 1 is open.", "put pen 2 in/on drawer 1"),
    ]
    lose_a = [
        (start, "go to drawer 1"),
        ("The drawer 1 is open. In it, you see nothing.", "look"),
        ("You are facing the drawer 1.", "go to desk 1"),
        ("On the desk 1, you see a pen 2 and a mug 1.", "take mug 1 from desk 1"),
    ]
    lose_b = [
        (start, "look"),
        (start, "go to drawer 1"),
        ("The drawer 1 is open. In it, you see nothing.", "look"),
    ]

    def make(steps: list[tuple[str, str]], ok: bool) -> Trajectory:
        final = "Done." if ok else "Nothing happens."
        return make_trajectory(TOY_TASK, steps, ok, group_id=group_id, task_id=task_id, final_observation=final)

    return TrajectoryGroup(
        task_id, group_id, [make(win_a, True), make(lose_a, False), make(win_b, True), make(lose_b, False)]
    )


class LetterHuntEnv(TextEnv):
    """A two-turn toy env a random tiny model sometimes wins (so groups have mixed outcomes).

    The agent wins when its (raw) action contains the task's letter; the observation names
    the objects, so guidance has something to align to.
    """

    LETTERS = "eaoit"

    def __init__(self, *, max_turns: int = 2, action_format: str = "raw", **kwargs) -> None:
        super().__init__(max_turns=max_turns, action_format=action_format, **kwargs)

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(f"letter-{letter}" for letter in self.LETTERS)

    def _task_text(self, task_id: str) -> str:
        return f"Say a word with the letter {task_id[-1]} near the red box 1."

    def _begin(self, task_id: str):
        self._letter = task_id[-1]
        return "You see a red box 1 and a blue cup 2.", {}

    def _act(self, action: str):
        if self._letter in action.lower():
            return Outcome("You win.", reward=1.0, terminated=True, won=True)
        return Outcome("Nothing happens. You see a red box 1 and a blue cup 2.")


def register_letter_hunt() -> str:
    """Registers the toy env as ``LetterHunt-v0`` (idempotent) and returns its id."""
    from agentenvs.core.registration import register_env

    register_env("LetterHunt-v0", "tests.support.privileged:LetterHuntEnv")
    return "LetterHunt-v0"


def partial_scores(group: TrajectoryGroup) -> TrajectoryGroup:
    """``group`` where nobody won outright: the winners scored 0.8, the others 0.2 (WebShop-like)."""
    return TrajectoryGroup(
        group.task_id,
        group.group_id,
        [dataclasses.replace(t, success=False, score=0.8 if t.success else 0.2) for t in group.trajectories],
    )
