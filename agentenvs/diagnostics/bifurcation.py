"""Bifurcation-v0: one fork decides the odds of winning; every other turn is noise.

After the controlled bifurcation tasks of the credit-assignment survey "From Reasoning to Agentic:
Credit Assignment in RL for LLMs" (arXiv 2604.09459). At turn ``fork_at`` of ``length`` the menu
is ``choices`` paths (``"red path"``, ...); the path carrying the signal wins with probability
``p``, any other with ``q``. The outcome is drawn at the last turn (reward 1 and ``won``, or 0),
so a single trajectory's return is a noisy signal of its fork choice; the other turns' choices
change nothing. Put the fork early (0), in the middle or late (``length − 1``), and make
``p − q`` small or large.

Exact credit: under a policy that takes the signal's path with probability ``π``,
``V = π p + (1 − π) q`` up to the fork, the fork's advantage is ``p − V`` or ``q − V``, and
every other turn's is 0.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("Bifurcation-v0", length=3, fork_at=1, p=1.0, q=0.0)
    >>> _ = env.reset(seed=0)
    >>> round(env.unwrapped.start_value(env.unwrapped.task_id), 3)   # a uniform policy: (1 + 0) / 2
    0.5
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from agentenvs.core.checks import check_float, check_int, require
from agentenvs.diagnostics.chain import Demonstrator, DiagnosticEnv, Split, Stage


class BifurcationEnv(DiagnosticEnv):
    """The bifurcation chain (see the module docstring).

    Args:
        length: Turns per episode, 1 to 100.
        fork_at: The fork's turn, 0-based (< ``length``).
        p: Win probability on the signal's path.
        q: Win probability on any other path (or after invalid output at the fork).
        choices: Items per menu.
        split, num_tasks, generator_seed, demonstrator, render_mode, privileged: as
            :class:`~agentenvs.diagnostics.chain.DiagnosticEnv`.
    """

    def __init__(
        self,
        *,
        length: int = 4,
        fork_at: int = 0,
        p: float = 0.9,
        q: float = 0.1,
        choices: int = 2,
        split: Split = "train",
        num_tasks: int = 256,
        generator_seed: int = 0,
        demonstrator: Demonstrator = "expert",
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        owner = type(self).__name__
        self.length = check_int(owner, "length", length, minimum=1, maximum=100)
        self.fork_at = check_int(owner, "fork_at", fork_at, minimum=0)
        require(self.fork_at < self.length, owner, "fork_at", f"< length ({self.length})", fork_at)
        self.p = check_float(owner, "p", p, minimum=0, maximum=1)
        self.q = check_float(owner, "q", q, minimum=0, maximum=1)
        super().__init__(
            num_turns=self.length,
            choices=choices,
            split=split,
            num_tasks=num_tasks,
            generator_seed=generator_seed,
            demonstrator=demonstrator,
            render_mode=render_mode,
            privileged=privileged,
        )

    def _scope_settings(self) -> tuple[object, ...]:
        return (self.choices, self.length, self.fork_at, self.p, self.q)

    def _stages(self, rng: np.random.Generator, signal: str, words: Sequence[str]) -> tuple[Stage, ...]:
        noise = [word for word in words if word != signal]
        return tuple(
            self._menu(rng, "fork", words, noun="path", marked=signal, size=self.choices)
            if turn == self.fork_at
            else self._menu(rng, "noise", noise, noun=self._noun(rng), marked=None, size=self.choices)
            for turn in range(self.length)
        )

    def _status(self) -> str:
        if len(self._chosen) <= self.fork_at:
            return ""
        return f"Path taken: {self._chosen[self.fork_at] or 'none (invalid)'}."

    def _start_state(self) -> Hashable:
        return None  # no path taken yet

    def _next_state(self, state: Hashable, turn: int, took: bool) -> Hashable:
        return took if turn == self.fork_at else state

    def _win_probability(self, turn: int, state: Hashable, took: bool) -> float:
        good = took if turn == self.fork_at else state
        return self.p if good else self.q

    def _expected_reward(self, turn: int, state: Hashable, took: bool) -> float:
        return self._win_probability(turn, state, took) if turn == self.length - 1 else 0.0

    def _drawn_reward(self, turn: int, state: Hashable, took: bool) -> tuple[float, bool]:
        if turn < self.length - 1:
            return 0.0, False
        won = bool(self.np_random.random() < self._win_probability(turn, state, took))
        return float(won), won
