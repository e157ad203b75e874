"""Frozen verifiers: every rubric item judged against every trajectory of a group.

A verifier returns a satisfaction matrix ``S`` of shape (items, trajectories) with 1.0
(satisfied), 0.0 (not satisfied) or NaN (could not judge: a free-text item for the
programmatic verifier, an unreadable answer from an LM). Selection ignores NaN entries.

Example:
    >>> from agentenvs.core.trajectory import Trajectory, Turn
    >>> t = Trajectory("t", 0, [Turn("", "go to desk 1", "go to desk 1", None, 0.0, True)], True, 1.0)
    >>> items = [RubricItem.requires("go to desk 1"), RubricItem.avoids("go to desk 1"),
    ...          RubricItem("text", "Be careful")]
    >>> ProgrammaticVerifier()(items, [t]).tolist()
    [[1.0], [0.0], [nan]]
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentenvs.core.trajectory import Trajectory
from agents.algorithms.orsd.rubrics import RubricItem
from agents.algorithms.privileged.endpoints import CompleteFn
from agents.algorithms.privileged.text import (
    content_terms,
    normalize_action,
    render_transcript,
    shorten,
    trajectory_actions,
)


class Verifier:
    """Base class: ``verifier(items, trajectories) -> (items × trajectories) float matrix``."""

    def __call__(self, items: Sequence[RubricItem], trajectories: Sequence[Trajectory]) -> np.ndarray:
        raise NotImplementedError


def check_item(item: RubricItem, actions: Sequence[str]) -> float:
    """A structured item against a trajectory's normalised actions (NaN for ``text`` items)."""
    if item.kind == "requires":
        return float(item.args[0] in actions)
    if item.kind == "avoids":
        return float(item.args[0] not in actions)
    if item.kind == "order":
        first, then = item.args
        return float(first in actions and then in actions and actions.index(first) < actions.index(then))
    if item.kind == "mentions":
        return float(any(item.args[0] in content_terms(action) for action in actions))
    return math.nan


@dataclass(frozen=True)
class ProgrammaticVerifier(Verifier):
    """Checks structured items against the executed (valid) actions; free text → NaN."""

    def __call__(self, items: Sequence[RubricItem], trajectories: Sequence[Trajectory]) -> np.ndarray:
        matrix = np.full((len(items), len(trajectories)), math.nan)
        for column, trajectory in enumerate(trajectories):
            actions = [normalize_action(a) for a in trajectory_actions(trajectory)]
            for row, item in enumerate(items):
                matrix[row, column] = check_item(item, actions)
        return matrix


def build_verification_prompt(items: Sequence[RubricItem], trajectory: Trajectory, *, max_actions: int = 20) -> str:
    """One prompt per trajectory listing every item; the answer is one yes/no line per item."""
    lines = [
        "You check whether an agent's attempt satisfies each rubric item.",
        f"Task: {shorten(trajectory.task, 300)}",
        "Actions taken:",
        render_transcript([shorten(a, 80) for a in trajectory_actions(trajectory)], limit=max_actions) or "(none)",
        f"Final observation: {shorten(trajectory.final_observation, 200)}",
        "Rubric items:",
    ]
    lines += [f"{index}. {item.text}" for index, item in enumerate(items, start=1)]
    lines.append("Answer each item on its own line as '<number>: yes' or '<number>: no'.")
    return "\n".join(lines)


_ANSWER = re.compile(r"^\s*(\d+)\s*[:.)\-]\s*\**\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


def parse_verification(text: str, num_items: int) -> np.ndarray:
    """Per-item 1.0/0.0 from ``'<n>: yes|no'`` lines; unanswered items NaN (first answer wins)."""
    answers = np.full(num_items, math.nan)
    for match in _ANSWER.finditer(text):
        index = int(match.group(1)) - 1
        if 0 <= index < num_items and math.isnan(answers[index]):
            answers[index] = 1.0 if match.group(2).lower() == "yes" else 0.0
    return answers


@dataclass
class LMVerifier(Verifier):
    """Asks a frozen text generator about all items of one trajectory in one prompt.

    Attributes:
        complete: The frozen verifier model (initial policy, another local model or an
            :class:`~agents.algorithms.privileged.endpoints.OpenAIChatClient`), greedy decoding advised.
        structured_programmatically: Judge structured items with the program (exact and free)
            and send only ``text`` items to the LM.
    """

    complete: CompleteFn
    structured_programmatically: bool = True

    def __call__(self, items: Sequence[RubricItem], trajectories: Sequence[Trajectory]) -> np.ndarray:
        matrix = np.full((len(items), len(trajectories)), math.nan)
        if not trajectories:
            return matrix
        if self.structured_programmatically:
            matrix = ProgrammaticVerifier()(items, trajectories)
        ask = [row for row in range(len(items)) if math.isnan(matrix[row, 0])]
        if not ask:
            return matrix
        asked = [items[row] for row in ask]
        outputs = self.complete([build_verification_prompt(asked, t) for t in trajectories])
        for column, text in enumerate(outputs):
            matrix[ask, column] = parse_verification(text, len(asked))
        return matrix


def build_item_question(item: RubricItem, trajectory: Trajectory, *, max_actions: int = 20) -> str:
    """One yes/no question: does this trajectory satisfy this item?"""
    return "\n".join(
        [
            "You check whether an agent's attempt satisfies a rubric item.",
            f"Task: {shorten(trajectory.task, 300)}",
            "Actions taken:",
            render_transcript([shorten(a, 80) for a in trajectory_actions(trajectory)], limit=max_actions) or "(none)",
            f"Rubric item: {item.text}",
            "Is the item satisfied? Answer yes or no.",
        ]
    )


@dataclass
class LogprobVerifier(Verifier):
    """A frozen local model that answers by likelihood: yes iff log π(yes) − log π(no) > margin.

    No text is generated, so the verdict is deterministic and cheap: every (item, trajectory)
    question is scored twice (with the answer ``yes_ids`` and ``no_ids``) in one batched
    ``score`` call. With ``score = partial(policy.score, reference=True)`` the verifier is the
    frozen initial policy; with another model's ``score`` it is that model.

    Attributes:
        score: ``score(prompts, responses[B, T], contexts, *, response_mask)`` → ``[B, T]``.
        yes_ids: Token ids of the answer "yes". no_ids: of "no".
        margin: Log-odds a "yes" must win by.
        structured_programmatically: Judge structured items with the program, ask only ``text`` ones.
    """

    score: object
    yes_ids: Sequence[int]
    no_ids: Sequence[int]
    margin: float = 0.0
    structured_programmatically: bool = True

    def __call__(self, items: Sequence[RubricItem], trajectories: Sequence[Trajectory]) -> np.ndarray:
        import torch

        matrix = np.full((len(items), len(trajectories)), math.nan)
        if not trajectories or not items:
            return matrix
        if self.structured_programmatically:
            matrix = ProgrammaticVerifier()(items, trajectories)
        ask = [
            (row, column)
            for row in range(len(items))
            for column in range(len(trajectories))
            if math.isnan(matrix[row, column])
        ]
        if not ask:
            return matrix
        questions = [build_item_question(items[row], trajectories[column]) for row, column in ask]
        width = max(len(self.yes_ids), len(self.no_ids))
        answers = torch.zeros((2 * len(ask), width), dtype=torch.long)
        mask = torch.zeros_like(answers)
        for offset, ids in ((0, self.yes_ids), (len(ask), self.no_ids)):
            answers[offset : offset + len(ask), : len(ids)] = torch.tensor(list(ids))
            mask[offset : offset + len(ask), : len(ids)] = 1
        logprobs = self.score(questions + questions, answers, None, response_mask=mask)  # type: ignore[operator]
        totals = (logprobs.float().cpu() * mask).sum(dim=1)
        verdict = (totals[: len(ask)] - totals[len(ask) :] > self.margin).numpy()
        for (row, column), yes in zip(ask, verdict, strict=True):
            matrix[row, column] = float(yes)
        return matrix
