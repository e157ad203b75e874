"""The shape every diagnostic env shares: a fixed chain of menus, one per turn, and its exact credit.

A diagnostic task is a *signal* word and a chain of :class:`Stage` menus, one per turn. At each
turn the agent picks one item of the menu (the items are listed in the observation and in
``info["admissible_actions"]``); at some turns one item is *marked* (the item whose choice the
env's outcome depends on: the menu item carrying the signal, the apple, the door), elsewhere no
choice matters. An env subclass says what a choice pays and where the chain stops through three
functions of the compact state its history leads to (:meth:`DiagnosticEnv._summary`): the
expected reward of a step, whether it ends the episode, and a drawn reward. The same three drive
the episodes and the **exact credit** (:meth:`DiagnosticEnv.exact_credit`): by backward induction
over (turn, state), the value ``V(s_t)`` of every state, ``Q(s_t, a)`` of the marked and of any
other choice, and the advantage ``A = Q(s_t, a_t) − V(s_t)`` of the action taken, under the
uniform policy or under any policy given by its per-turn probability of taking the marked item
(the other items, and invalid output, are interchangeable in every diagnostic env). No
sampling: the values are expectations over the env's own randomness too.

An invalid action (not one of the menu's items) uses the turn up like any other choice that is
not the marked one, and the observation says so.

With ``privileged=True`` the infos carry :class:`DiagnosticPrivileged` (the signal, this turn's
right choice, the expert's remaining plan, the turns whose choice can change the return).
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Literal, TypedDict

import numpy as np

from agentenvs.core.checks import check_choice, check_int, shown
from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.trajectory import Trajectory
from agentenvs.diagnostics.vocabulary import NOUNS, SPLITS, Vocabulary

Split = Literal["train", "eval", "all"]
Demonstrator = Literal["expert", "uniform"]
TOLERANCE = 1e-12
"""Two action values closer than this are equal (the choice does not matter)."""


@dataclass(frozen=True)
class Stage:
    """One turn's menu.

    Attributes:
        kind: What the turn is in its env (``"signal"``, ``"filler"``, ``"key"``, ``"apple"``,
            ``"door"``, ``"fork"``, ``"noise"``).
        items: The admissible actions, in the order shown.
        marked: The item whose choice the env's return depends on ("" where none does).
    """

    kind: str
    items: tuple[str, ...]
    marked: str = ""


@dataclass(frozen=True)
class DiagnosticTask:
    """One task: its signal word and the chain of menus."""

    task_id: str
    signal: str
    stages: tuple[Stage, ...]


@dataclass(frozen=True)
class ExactCredit:
    """The exact values along one trajectory, turn by turn (see the module docstring).

    Attributes:
        values: ``V(s_t)``, the expected return from the turn's start under the policy.
        action_values: ``Q(s_t, a_t)``, the expected return after the action taken.
        advantages: ``A(s_t, a_t) = Q(s_t, a_t) − V(s_t)``.
        decisive: Whether the turn's choice changes the expected return (``Q`` of the marked
            item differs from ``Q`` of any other).
        marked_taken: Whether the marked item was taken.
    """

    values: tuple[float, ...]
    action_values: tuple[float, ...]
    advantages: tuple[float, ...]
    decisive: tuple[bool, ...]
    marked_taken: tuple[bool, ...]


class DiagnosticPrivileged(TypedDict):
    """``info["privileged"]`` of the diagnostic envs (as of after the step, like every env's).

    Attributes:
        signal: The task's signal word.
        goal_facts: What the signal means, in words (the same at every turn).
        right_choice: The item to take at the coming turn where that choice changes the
            expected return ("" where it does not, and once the episode is over).
        expert_plan: The expert's choices from the coming turn on that change the return, in order.
        decisive_turns: The turns (0-based) whose choice changes the expected return, on the
            path the episode took so far and the expert's path from here.
    """

    signal: str
    goal_facts: list[str]
    right_choice: str
    expert_plan: list[str]
    decisive_turns: list[int]


class DiagnosticEnv(TextEnv, abc.ABC):
    """Base of the diagnostic envs (see the module docstring).

    Args:
        choices: Items per menu at the turns that matter (≥ 2).
        split: ``"train"`` (default), ``"eval"`` (signal words no train task shows) or ``"all"``.
        num_tasks: Tasks per split.
        generator_seed: Seeds the signal words' split and the tasks.
        demonstrator: What :meth:`expert_action` plays: ``"expert"`` (the marked item where it
            matters) or ``"uniform"`` (a uniformly random item: demonstrations that teach the
            action format and nothing about the signal, for an uninformed warm start).
        render_mode: None, ``"ansi"`` or ``"human"``.
        privileged: Put :class:`DiagnosticPrivileged` in the infos.
    """

    held_out_split = "eval"
    split_roles = MappingProxyType(
        {
            "train": "training set",
            "eval": "held-out set: cue/item pairs the training set never shows; the credit lab reports here",
            "all": "both",
        }
    )

    def __init__(
        self,
        *,
        num_turns: int,
        choices: int,
        split: Split,
        num_tasks: int,
        generator_seed: int,
        demonstrator: Demonstrator,
        render_mode: str | None,
        privileged: bool,
    ) -> None:
        super().__init__(max_turns=num_turns, action_format="raw", render_mode=render_mode, privileged=privileged)
        owner = type(self).__name__
        self.choices = check_int(owner, "choices", choices, minimum=2, maximum=8)
        self.split = check_choice(owner, "split", split, ("train", "eval", "all"))
        self.num_tasks = check_int(owner, "num_tasks", num_tasks, minimum=1, maximum=100_000)
        self.generator_seed = check_int(owner, "generator_seed", generator_seed, minimum=0)
        self.demonstrator = check_choice(owner, "demonstrator", demonstrator, ("expert", "uniform"))
        self.vocabulary = Vocabulary.generate(self.generator_seed)
        splits = SPLITS if self.split == "all" else (self.split,)
        self._task_ids = tuple(f"{name}-{index}" for name in splits for index in range(self.num_tasks))
        self._tasks: dict[str, DiagnosticTask] = {}
        self._uniform_values: dict[str, _Values] = {}
        self._taken: list[bool] = []
        self._chosen: list[str] = []

    # -- what a diagnostic env defines --------------------------------------------------
    @abc.abstractmethod
    def _stages(self, rng: np.random.Generator, signal: str, words: Sequence[str]) -> tuple[Stage, ...]:
        """A task's menus, drawn with ``rng`` (``words``: the split's signal words, ``signal`` among them)."""

    def _start_state(self) -> Hashable:
        """The compact state at an episode's start (what the env's rewards depend on)."""
        return ()

    def _next_state(self, state: Hashable, turn: int, took: bool) -> Hashable:
        """The compact state after turn ``turn`` from ``state`` (``took``: the marked item was taken)."""
        assert isinstance(state, tuple)
        return (*state, took)

    def _summary(self, taken: Sequence[bool]) -> Hashable:
        """The compact state the history ``taken`` (one flag per past turn) leads to."""
        state = self._start_state()
        for turn, took in enumerate(taken):
            state = self._next_state(state, turn, took)
        return state

    @abc.abstractmethod
    def _expected_reward(self, turn: int, state: Hashable, took: bool) -> float:
        """The expected reward of turn ``turn`` from ``state`` for taking the marked item or not."""

    def _ends(self, turn: int, state: Hashable, took: bool) -> bool:
        """Whether that choice ends the episode before the chain's last turn."""
        return False

    @abc.abstractmethod
    def _drawn_reward(self, turn: int, state: Hashable, took: bool) -> tuple[float, bool]:
        """The reward the step pays (drawn with ``self.np_random`` where the env is random) and
        whether the task is won by it."""

    # -- tasks -------------------------------------------------------------------------------
    @property
    def task_ids(self) -> Sequence[str]:
        return self._task_ids

    @property
    def num_turns(self) -> int:
        """Turns of every episode's chain (the turn limit)."""
        return self.max_turns

    def task(self, task_id: str) -> DiagnosticTask:
        """The task ``task_id`` (its signal and menus); built on first use, the same every time.

        Raises:
            ValueError: for an id that is not one of :attr:`task_ids`.
        """
        if not self.has_task(task_id):
            raise ValueError(f"{type(self).__name__}: unknown task_id {shown(task_id)} (see env.unwrapped.task_ids)")
        found = self._tasks.get(task_id)
        if found is None:
            split, _, index = task_id.rpartition("-")
            rng = np.random.default_rng([self.generator_seed, SPLITS.index(split), int(index), 77])
            words = self.vocabulary.signals[split]
            signal = str(words[int(rng.integers(len(words)))])
            found = DiagnosticTask(task_id, signal, self._stages(rng, signal, words))
            if len(found.stages) != self.num_turns:
                raise AssertionError(
                    f"{type(self).__name__} built {len(found.stages)} stages for {self.num_turns} turns"
                )
            self._tasks[task_id] = found
        return found

    def _has_task(self, task_id: str) -> bool:
        split, _, index = task_id.rpartition("-")
        if split not in SPLITS or (self.split != "all" and split != self.split) or not index.isdigit():
            return False
        return str(int(index)) == index and int(index) < self.num_tasks

    def _task_text(self, task_id: str) -> str:
        return f"Signal: {self.task(task_id).signal}."

    # -- menus drawn for the subclasses --------------------------------------------------------
    def _menu(
        self, rng: np.random.Generator, kind: str, words: Sequence[str], *, noun: str, marked: str | None, size: int
    ) -> Stage:
        """``size`` items ``"<word> <noun>"`` in a random order: the one of word ``marked`` and
        others drawn from ``words`` without it (``marked=None``: all drawn, no item marked)."""
        others = [word for word in words if word != marked]
        drawn = [str(others[i]) for i in rng.choice(len(others), size - (marked is not None), replace=False)]
        chosen = ([marked] if marked is not None else []) + drawn
        items = [f"{chosen[i]} {noun}" for i in rng.permutation(size)]
        return Stage(kind, tuple(items), f"{marked} {noun}" if marked is not None else "")

    @staticmethod
    def _noun(rng: np.random.Generator) -> str:
        return NOUNS[int(rng.integers(len(NOUNS)))]

    # -- the episode ---------------------------------------------------------------------------
    def _stage(self) -> Stage:
        assert self.task_id is not None
        return self.task(self.task_id).stages[len(self._taken)]

    def _status(self) -> str:
        """What the agent holds or has done that the rest of the episode depends on ("" for nothing),
        shown in every observation so that the observation is the state (as bsuite's are)."""
        return ""

    def _menu_text(self) -> str:
        stage, status = self._stage(), self._status()
        return f"Step {len(self._taken) + 1} of {self.num_turns}. {status + ' ' if status else ''}Choose one: {', '.join(stage.items)}."

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        self._taken, self._chosen = [], []
        return self._menu_text(), {}

    def _admissible_actions(self) -> list[str] | None:
        return list(self._stage().items)

    def _act(self, action: str) -> Outcome:
        stage = self._stage()
        choice = action.strip().lower()
        valid = choice in stage.items
        took = valid and choice == stage.marked
        turn = len(self._taken)
        state = self._summary(tuple(self._taken))
        reward, won = self._drawn_reward(turn, state, took)
        self._taken.append(took)
        self._chosen.append(choice if valid else "")
        ends = self._ends(turn, state, took) or len(self._taken) == self.num_turns
        if ends:
            observation = f"The episode is over. Last reward: {reward:g}."
        else:
            observation = self._menu_text()
        if not valid:
            observation = f"Invalid action: {shown(action)} is not one of: {', '.join(stage.items)}. {observation}"
        return Outcome(observation, reward=reward, terminated=ends, won=won, action_valid=valid)

    def expert_action(self) -> str | None:
        """The demonstrator's next action (``demonstrator``): the marked item where the choice
        matters, else the first item; or a uniformly random item, drawn from the episode's seed,
        task and turn (so demonstrations are reproducible and the env's generator is untouched)."""
        if self._done or self.task_id is None:
            return None
        stage = self._stage()
        if self.demonstrator == "uniform":
            index = self.task_ids.index(self.task_id) if self.task_id in self.task_ids else 0
            rng = np.random.default_rng([max(self.np_random_seed, 0), index, len(self._taken), 5])
            return stage.items[int(rng.integers(len(stage.items)))]
        turn, state = len(self._taken), self._summary(tuple(self._taken))
        return stage.marked if self._decides(self._require_task(), turn, state) else stage.items[0]

    # -- privileged information ----------------------------------------------------------------
    def _privileged(self) -> Mapping[str, Any]:
        assert self.task_id is not None
        task = self.task(self.task_id)
        taken = tuple(self._taken)
        decisive = [t for t in range(len(taken)) if self._decides(self._require_task(), t, self._summary(taken[:t]))]
        plan: list[str] = []
        if not self._done:
            path = taken
            for turn in range(len(taken), self.num_turns):
                state = self._summary(path)
                matters = self._decides(self._require_task(), turn, state)
                if matters:
                    plan.append(task.stages[turn].marked)
                    decisive.append(turn)
                if self._ends(turn, state, matters):
                    break
                path = (*path, matters)
        return {
            "signal": task.signal,
            "goal_facts": [f"The signal is {task.signal}: the item carrying it is the right one."],
            "right_choice": plan[0] if plan and decisive[-len(plan)] == len(taken) else "",
            "expert_plan": plan,
            "decisive_turns": decisive,
        }

    # -- exact credit ----------------------------------------------------------------------------
    def _decides(self, task_id: str, turn: int, state: Hashable) -> bool:
        """Whether the choice at ``turn`` from ``state`` changes the expected return under the
        uniform policy (so under any policy that does not play that turn or a later one deterministically)."""
        if not self.task(task_id).stages[turn].marked:
            return False
        uniform = self._uniform_values.get(task_id)
        if uniform is None:
            uniform = self._uniform_values[task_id] = self._values(task_id, self.uniform_probabilities(task_id))
        return abs(uniform.q(turn, state, True) - uniform.q(turn, state, False)) > TOLERANCE

    def _require_task(self) -> str:
        if self.task_id is None:
            raise RuntimeError("call reset() first")
        return self.task_id

    def _values(self, task_id: str, marked_probabilities: tuple[float, ...]) -> _Values:
        return _Values(self, self.task(task_id), marked_probabilities)

    def uniform_probabilities(self, task_id: str) -> tuple[float, ...]:
        """The uniform policy's probability of each turn's marked item (0 where none is marked)."""
        return tuple(1.0 / len(stage.items) if stage.marked else 0.0 for stage in self.task(task_id).stages)

    def exact_credit(
        self,
        task_id: str,
        actions: Sequence[str],
        marked_probabilities: Sequence[float] | None = None,
    ) -> ExactCredit:
        """The exact values and advantages of the trajectory that played ``actions`` in ``task_id``.

        Args:
            task_id: The trajectory's task.
            actions: The executed actions, one per turn (``info["action"]``; anything that is not
                the turn's marked item counts as another choice).
            marked_probabilities: Per turn of the chain, the policy's probability of taking the
                marked item (None: the uniform policy, 1 / the menu's size).

        Raises:
            ValueError: for an unknown task, more actions than turns, or probabilities that are
                not one per turn in [0, 1].
        """
        task = self.task(task_id)
        owner = f"{type(self).__name__}.exact_credit"
        if isinstance(actions, str) or len(actions) > self.num_turns:
            raise ValueError(
                f"{owner}: actions must be a list of at most {self.num_turns} strings, got {shown(actions)}"
            )
        if marked_probabilities is None:
            probabilities = self.uniform_probabilities(task_id)
        else:
            probabilities = tuple(float(p) for p in marked_probabilities)
            if len(probabilities) != self.num_turns or not all(0.0 <= p <= 1.0 for p in probabilities):
                raise ValueError(
                    f"{owner}: marked_probabilities must be {self.num_turns} numbers in [0, 1], "
                    f"got {shown(marked_probabilities)}"
                )
        values = self._values(task_id, probabilities)
        taken: list[bool] = []
        rows: list[tuple[float, float, bool]] = []
        state = self._start_state()
        for turn, action in enumerate(actions):
            took = bool(task.stages[turn].marked) and str(action).strip().lower() == task.stages[turn].marked
            rows.append((values.v(turn, state), values.q(turn, state, took), self._decides(task_id, turn, state)))
            taken.append(took)
            if self._ends(turn, state, took):
                break
            state = self._next_state(state, turn, took)
        return ExactCredit(
            values=tuple(v for v, _, _ in rows),
            action_values=tuple(q for _, q, _ in rows),
            advantages=tuple(q - v for v, q, _ in rows),
            decisive=tuple(m for _, _, m in rows),
            marked_taken=tuple(taken),
        )

    def trajectory_credit(
        self, trajectory: Trajectory, marked_probabilities: Sequence[float] | None = None
    ) -> ExactCredit:
        """:meth:`exact_credit` of a recorded trajectory (its task and its turns' executed actions)."""
        return self.exact_credit(trajectory.task_id, [turn.action for turn in trajectory.turns], marked_probabilities)

    def start_value(self, task_id: str, marked_probabilities: Sequence[float] | None = None) -> float:
        """``V(s_0)``: the policy's expected return on ``task_id`` (uniform policy by default)."""
        probabilities = (
            self.uniform_probabilities(task_id) if marked_probabilities is None else tuple(marked_probabilities)
        )
        return self._values(task_id, tuple(float(p) for p in probabilities)).v(0, self._summary(()))

    # -- snapshots ------------------------------------------------------------------------------
    def _snapshot_scope(self) -> str:
        return repr((type(self).__name__, self._scope_settings(), self.split, self.num_tasks, self.generator_seed))

    def _scope_settings(self) -> tuple[Any, ...]:
        """The constructor settings that shape the chain (a snapshot restores only into an env alike)."""
        return (self.choices, self.num_turns)


class _Values:
    """Backward induction over (turn, state) for one task and one policy (memoised)."""

    def __init__(self, env: DiagnosticEnv, task: DiagnosticTask, probabilities: tuple[float, ...]) -> None:
        self.env, self.task, self.probabilities = env, task, probabilities
        self.v = lru_cache(maxsize=None)(self._v)
        self.q = lru_cache(maxsize=None)(self._q)

    def _v(self, turn: int, state: Hashable) -> float:
        if turn >= self.env.num_turns:
            return 0.0
        if not self.task.stages[turn].marked:
            return self.q(turn, state, False)
        p = self.probabilities[turn]
        return p * self.q(turn, state, True) + (1.0 - p) * self.q(turn, state, False)

    def _q(self, turn: int, state: Hashable, took: bool) -> float:
        reward = self.env._expected_reward(turn, state, took)
        if self.env._ends(turn, state, took) or turn + 1 >= self.env.num_turns:
            return reward
        return reward + self.v(turn + 1, self.env._next_state(state, turn, took))
