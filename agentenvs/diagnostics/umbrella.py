"""Umbrella-v0: the first turn's choice decides the reward at the end; the turns between only add noise.

After bsuite's *umbrella_length* and *umbrella_distract*. The task shows a signal word; the first
turn's menu has ``choices`` items of one noun (``"red door"``, ``"blue door"``, ...), and the item
carrying the signal is the right one. ``length − 1`` filler turns follow, whose choices change
nothing; each pays a distractor reward of ``±distractor`` (a fair coin, drawn independently of
everything the agent does; 0 = none). The last turn also pays 1 if the first choice was right
(``won``), else 0. Which item the signal asks for is never stated: the agent learns that the
signal's item pays, and the eval split's signal words are ones no train task shows.

Exact credit: under a policy that takes the right first item with probability ``p``,
``V(s_0) = p`` and the first turn's advantage is ``1 − p`` (right) or ``−p`` (wrong); every filler
turn's advantage is 0, whatever the distractor paid.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("Umbrella-v0", length=3, privileged=True)
    >>> observation, info = env.reset(seed=0)
    >>> right = info["privileged"]["right_choice"]
    >>> right in info["admissible_actions"] and right.split()[0] == info["task"].split()[1].rstrip(".")
    True
    >>> for action in (right, "x", "y"):
    ...     observation, reward, terminated, truncated, info = env.step(action)
    >>> reward, terminated, info["won"]
    (1.0, True, True)
    >>> env.unwrapped.exact_credit(info["task_id"], [right, "x", "y"]).advantages
    (0.6666666666666667, 0.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from agentenvs.core.checks import check_float, check_int
from agentenvs.diagnostics.chain import Demonstrator, DiagnosticEnv, Split, Stage


class UmbrellaEnv(DiagnosticEnv):
    """The umbrella chain (see the module docstring).

    Args:
        length: Turns per episode (the decisive one and ``length − 1`` fillers), 1 to 100.
        choices: Items per menu.
        distractor: Scale of each filler turn's coin-flip reward (0: none).
        split, num_tasks, generator_seed, demonstrator, render_mode, privileged: as
            :class:`~agentenvs.diagnostics.chain.DiagnosticEnv`.
    """

    def __init__(
        self,
        *,
        length: int = 4,
        choices: int = 3,
        distractor: float = 0.0,
        split: Split = "train",
        num_tasks: int = 256,
        generator_seed: int = 0,
        demonstrator: Demonstrator = "expert",
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        owner = type(self).__name__
        self.length = check_int(owner, "length", length, minimum=1, maximum=100)
        self.distractor = check_float(owner, "distractor", distractor, minimum=0)
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
        return (self.choices, self.length, self.distractor)

    def _stages(self, rng: np.random.Generator, signal: str, words: Sequence[str]) -> tuple[Stage, ...]:
        first = self._menu(rng, "signal", words, noun=self._noun(rng), marked=signal, size=self.choices)
        fillers = [signal_free for signal_free in words if signal_free != signal]
        return (first,) + tuple(
            self._menu(rng, "filler", fillers, noun=self._noun(rng), marked=None, size=self.choices)
            for _ in range(self.length - 1)
        )

    def _status(self) -> str:
        if not self._chosen:
            return ""
        return f"Your first choice: {self._chosen[0] or 'none (invalid)'}."

    def _start_state(self) -> Hashable:
        return None  # the first choice is not made yet

    def _next_state(self, state: Hashable, turn: int, took: bool) -> Hashable:
        return took if turn == 0 else state

    def _expected_reward(self, turn: int, state: Hashable, took: bool) -> float:
        if turn < self.length - 1:
            return 0.0  # a filler's coin is fair
        right = took if turn == 0 else state
        return 1.0 if right else 0.0

    def _drawn_reward(self, turn: int, state: Hashable, took: bool) -> tuple[float, bool]:
        coin = 0.0
        if turn > 0 and self.distractor > 0:
            coin = self.distractor if self.np_random.random() < 0.5 else -self.distractor
        final = self._expected_reward(turn, state, took)
        return coin + final, final > 0
