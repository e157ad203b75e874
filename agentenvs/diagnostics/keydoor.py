"""KeyDoor-v0: take the signal's key, eat apples for small rewards, then open the door with the key.

After the key-to-door task of Hung et al. (2019), "Optimizing agent behavior over long time scales
by transporting value". Three phases, each a knob:

- ``key_turns`` turns in the key room: a menu of ``choices`` keys (``"red key"``, ...); the key
  carrying the signal opens the door. Keys taken stay on the agent's ring.
- ``apple_turns`` turns at a table: one of ``choices`` items is an apple, worth ``apple_reward``
  at once (the distractor: rewards that come sooner and vary more than the door's).
- ``door_turns`` turns at the door: ``"open the door"`` or ``"wait"``. Opening ends the episode
  and pays 1 (``won``) if the signal's key is on the ring, else 0; waiting through the last door
  turn ends it with 0.

Exact credit: the door's reward depends only on the key phase (and on opening at all), so a key
turn's advantage carries the outcome; apple turns carry only their own reward.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("KeyDoor-v0", key_turns=1, apple_turns=1, door_turns=1, privileged=True)
    >>> observation, info = env.reset(seed=0)
    >>> info["privileged"]["expert_plan"][1:]
    ['apple', 'open the door']
    >>> for action in info["privileged"]["expert_plan"]:
    ...     observation, reward, terminated, truncated, info = env.step(action)
    >>> reward, info["won"]
    (1.0, True)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from agentenvs.core.checks import check_float, check_int
from agentenvs.diagnostics.chain import Demonstrator, DiagnosticEnv, Split, Stage

TABLE_ITEMS = ("pebble", "twig", "leaf", "feather", "button", "acorn", "marble", "cork")
"""What lies on the table besides the apple (worth nothing)."""
OPEN, WAIT = "open the door", "wait"


class KeyDoorEnv(DiagnosticEnv):
    """The key-to-door chain (see the module docstring).

    Args:
        key_turns: Turns in the key room (≥ 1).
        apple_turns: Turns at the apple table (≥ 0).
        door_turns: Turns at the door (≥ 1).
        apple_reward: What eating an apple pays.
        choices: Items per key and apple menu.
        split, num_tasks, generator_seed, demonstrator, render_mode, privileged: as
            :class:`~agentenvs.diagnostics.chain.DiagnosticEnv`.
    """

    def __init__(
        self,
        *,
        key_turns: int = 1,
        apple_turns: int = 4,
        door_turns: int = 2,
        apple_reward: float = 0.5,
        choices: int = 3,
        split: Split = "train",
        num_tasks: int = 256,
        generator_seed: int = 0,
        demonstrator: Demonstrator = "expert",
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        owner = type(self).__name__
        self.key_turns = check_int(owner, "key_turns", key_turns, minimum=1, maximum=50)
        self.apple_turns = check_int(owner, "apple_turns", apple_turns, minimum=0, maximum=50)
        self.door_turns = check_int(owner, "door_turns", door_turns, minimum=1, maximum=50)
        self.apple_reward = check_float(owner, "apple_reward", apple_reward, minimum=0)
        super().__init__(
            num_turns=self.key_turns + self.apple_turns + self.door_turns,
            choices=choices,
            split=split,
            num_tasks=num_tasks,
            generator_seed=generator_seed,
            demonstrator=demonstrator,
            render_mode=render_mode,
            privileged=privileged,
        )

    def _scope_settings(self) -> tuple[object, ...]:
        return (self.choices, self.key_turns, self.apple_turns, self.door_turns, self.apple_reward)

    def _phase(self, turn: int) -> str:
        if turn < self.key_turns:
            return "key"
        return "apple" if turn < self.key_turns + self.apple_turns else "door"

    def _stages(self, rng: np.random.Generator, signal: str, words: Sequence[str]) -> tuple[Stage, ...]:
        keys = tuple(
            self._menu(rng, "key", words, noun="key", marked=signal, size=self.choices) for _ in range(self.key_turns)
        )
        apples = []
        for _ in range(self.apple_turns):
            table = ["apple"] + [TABLE_ITEMS[i] for i in rng.choice(len(TABLE_ITEMS), self.choices - 1, replace=False)]
            apples.append(Stage("apple", tuple(table[i] for i in rng.permutation(self.choices)), "apple"))
        doors = tuple(Stage("door", (OPEN, WAIT), OPEN) for _ in range(self.door_turns))
        return keys + tuple(apples) + doors

    def _status(self) -> str:
        if not self._chosen:
            return ""
        keys = [item for turn, item in enumerate(self._chosen) if item and self._phase(turn) == "key"]
        return f"Keys held: {', '.join(dict.fromkeys(keys)) or 'none'}."

    def _start_state(self) -> Hashable:
        return False  # the signal's key is not on the ring

    def _next_state(self, state: Hashable, turn: int, took: bool) -> Hashable:
        return bool(state) or (took and self._phase(turn) == "key")

    def _expected_reward(self, turn: int, state: Hashable, took: bool) -> float:
        phase = self._phase(turn)
        if phase == "apple":
            return self.apple_reward if took else 0.0
        if phase == "door":
            return 1.0 if took and state else 0.0
        return 0.0

    def _ends(self, turn: int, state: Hashable, took: bool) -> bool:
        return took and self._phase(turn) == "door"

    def _drawn_reward(self, turn: int, state: Hashable, took: bool) -> tuple[float, bool]:
        reward = self._expected_reward(turn, state, took)
        return reward, self._phase(turn) == "door" and reward > 0
