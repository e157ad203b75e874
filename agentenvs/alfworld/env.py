"""ALFWorld-v0: ALFWorld's household text games on the real TextWorld engine.

The agent reads the room and the task ("Your task is to: put a clean mug in
coffeemachine.") and types commands ("go to countertop 1", "take mug 1 from countertop
1", ...). Observations, admissible commands and ``won`` are exactly those of the
official ``alfworld`` TextWorld env (``AlfredDemangler`` + ``AlfredInfos`` wrappers);
winning ends the episode with reward ``reward_on_win`` (1.0; verl-agent uses 10).

Games come from ``data_path`` (or ``$ALFWORLD_DATA``) in the official
``json_2.1.1/<split>/...`` layout, or — when neither is given — from the embedded
generator (:mod:`agentenvs.alfworld.generator`), so the env runs anywhere. A generated
game is made and verified on its first reset, in a child process under
``planner_time_limit_s`` (CPU seconds) and ``planner_memory_limit_mb``; ``python -m agentenvs
pregenerate ALFWorld-v0`` makes the whole pool ahead of training.

``info`` adds ``task_type`` to the contract, and with ``privileged=True`` also
``game_file`` (the game's path: the file holds the walkthrough) and ``expert_action`` (the
walkthrough's next command while the agent follows it; with ``expert_plan=True`` the
bounded planner's from the current state once it strays; None when there is no plan).

``info["privileged"]`` (:class:`ALFWorldPrivileged`, with ``privileged=True``; never in an observation) holds the
plan from the current state (the walkthrough's rest while the agent follows it; once it strays,
with ``expert_plan=True``, a plan made from the state by the bounded planner of
:mod:`agentenvs.alfworld.replanning`; else None), why there is none when there is none, the goal
of the game's PDDL problem (the formula and its literals) and the task type. Commands that fail
to parse do not move the agent off the walkthrough: they change nothing in the game.

Snapshots (:meth:`~agentenvs.core.env.TextEnv.snapshot`) replay the episode's commands from the
game's reset, as every env's do (TextWorld's state lives partly in the planner library's C state,
which could not be copied anyway); a restore costs one step per turn played, which
``benchmarks/env_snapshots.py`` measures. The plan followed after a restore is the replay's: the
walkthrough while the agent kept to it, else (with ``expert_plan=True``) a plan from the state
where one is asked for.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("ALFWorld-v0", num_generated_games=4, privileged=True)  # doctest: +SKIP
    >>> observation, info = env.reset(seed=0)  # doctest: +SKIP
    >>> "Your task is to:" in observation  # doctest: +SKIP
    True
    >>> observation, reward, terminated, truncated, info = env.step(info["expert_action"])  # doctest: +SKIP
    >>> info["privileged"]["expert_plan"][:1] == [info["expert_action"]]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from agentenvs.alfworld.data import (
    SPLIT_FOLDERS,
    GameRecord,
    find_games,
    normalize_task_types,
    read_task_sentence,
)
from agentenvs.core.checks import check_bool, check_choice, check_float, check_int, check_path
from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.paths import data_folder

DATA_ENV_VAR = "ALFWORLD_DATA"


class ALFWorldPrivileged(TypedDict):
    """``info["privileged"]`` of ALFWorld-v0.

    Attributes:
        expert_plan: Commands that win from the current state (``[]`` once the game is
            won): the walkthrough's rest while every command so far followed it; once the
            agent strays, with ``expert_plan=True``, a plan from the current state by the
            bounded planner (:mod:`agentenvs.alfworld.replanning`), kept while the agent
            follows it. None when there is none: ``expert_plan_status`` says why.
        expert_plan_status: Where ``expert_plan`` comes from: ``"walkthrough"``,
            ``"planned"`` (the state reduced to the goal), ``"planned on the whole state"``,
            ``"won"``; or why there is none: ``"not planned: ..."`` (``expert_plan=False``),
            ``"unsolvable: ..."``, ``"planner limit: ..."`` (the time or memory limit).
        goal: The ``(:goal ...)`` formula of the game's PDDL problem, on one line.
        goal_facts: The literals of that formula in order, each once (e.g.
            ``"(objectType ?o MugType)"``, ``"(inReceptacle ?o ?r)"``,
            ``"(not (= ?o1 ?o2))"``); variables are bound by the formula's ``exists``.
        task_type: ALFWorld's task type (``"pick_and_place_simple"``, ...).
    """

    expert_plan: list[str] | None
    expert_plan_status: str
    goal: str
    goal_facts: list[str]
    task_type: str


_PDDL_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_PDDL_CONNECTIVES = frozenset({"and", "or", "not", "imply", "when", "exists", "forall"})


def pddl_goal(problem: str) -> tuple[str, list[str]]:
    """The goal formula of a PDDL problem on one line, and its literals (see :class:`ALFWorldPrivileged`).

    >>> pddl_goal("(define (problem p) (:goal (and (isClean ?o) (not (= ?a ?b)) (isClean ?o))))")
    ('(and (isClean ?o) (not (= ?a ?b)) (isClean ?o))', ['(isClean ?o)', '(not (= ?a ?b))'])
    """
    start = problem.find("(:goal")
    if start < 0:
        return "", []
    stack: list[list[Any]] = [[]]
    for token in _PDDL_TOKEN.findall(problem, start):
        if token == "(":
            stack.append([])
        elif token == ")":
            node = stack.pop()
            stack[-1].append(node)
            if len(stack) == 1:
                break
        else:
            stack[-1].append(token)
    if len(stack) != 1 or not stack[0] or len(stack[0][0]) < 2:
        return "", []  # unbalanced or empty goal: nothing to report
    formula = stack[0][0][1]
    literals: dict[str, None] = {}

    def render(node: Any) -> str:
        return "(" + " ".join(render(part) for part in node) + ")" if isinstance(node, list) else str(node)

    def is_literal(node: Any) -> bool:
        head = node[0].lower() if isinstance(node, list) and node and isinstance(node[0], str) else None
        if head == "not":
            return len(node) == 2 and is_literal(node[1])
        return head is not None and head not in _PDDL_CONNECTIVES

    def walk(node: Any) -> None:
        if not isinstance(node, list) or not node:
            return
        if is_literal(node):
            literals.setdefault(render(node), None)
            return
        head = str(node[0]).lower()
        for part in node[2:] if head in ("exists", "forall") else node[1:]:
            walk(part)

    walk(formula)
    return render(formula), list(literals)


SPLIT_SEED_OFFSETS = {"train": 0, "eval_in_distribution": 1_000_003, "eval_out_of_distribution": 2_000_003}
"""What each split adds to ``generator_seed``: the generated pools of different splits are drawn apart."""


def generated_pool_seed(generator_seed: int, split: str) -> int:
    """The generator seed of ``split``'s pool (a split's folder name, e.g. ``valid_seen``, counts as the split).

    >>> generated_pool_seed(0, "train"), generated_pool_seed(0, "eval_in_distribution"), generated_pool_seed(0, "valid_seen")
    (0, 1000003, 1000003)
    """
    name = next((key for key, folder in SPLIT_FOLDERS.items() if split in (key, folder)), split)
    return generator_seed + SPLIT_SEED_OFFSETS[name]


class ALFWorldEnv(TextEnv):
    """ALFWorld's TextWorld games as a :class:`~agentenvs.core.env.TextEnv` (see module docstring).

    Args:
        split: ``"train"``, ``"eval_in_distribution"`` (valid_seen) or
            ``"eval_out_of_distribution"`` (valid_unseen).
        data_path: An ``$ALFWORLD_DATA`` root, a ``json_2.1.1`` folder or a folder of
            games. Default: ``$ALFWORLD_DATA``; without either, generated games.
        task_types: Names or ALFWorld's ids 1-6 of the task types to play (default all).
        source: ``"data"``, ``"generated"`` or None (data when a path is known).
        num_generated_games: Size of the generated game pool.
        generator_seed: Seed of the generated pools, >= 0 (same seed, same games). Each
            split draws its own pool (:func:`generated_pool_seed`), so a held-out split
            plays games made apart from the training ones.
        cache_dir: Where generated games are written (default ``$AGENTENVS_CACHE`` or
            ``~/.cache/agentenvs``).
        planner_time_limit_s: CPU seconds one plan from a state may take (``expert_plan``),
            and the verification of one generated game before the draw is rejected (a safety
            net that a loaded machine does not trip, never below
            :data:`~agentenvs.alfworld.generator.MIN_VERIFICATION_TIME_S` there, so the pool is
            the same on every machine: see :mod:`agentenvs.alfworld.generator`).
        planner_memory_limit_mb: Memory (MiB) the verification of one generated game
            may add before the draw is rejected.
        reward_on_win: Reward of the step that wins.
        max_turns: Steps before truncation (ALFWorld's evaluations use 50).
        action_format: How raw model output becomes a command (default ``"raw"``).
        expert_plan: Once the agent leaves the walkthrough, plan from the current state
            for ``expert_action`` and ``info["privileged"]["expert_plan"]``: the state reduced
            to the goal, planned and checked in the generator's child process under
            ``planner_time_limit_s`` and ``planner_memory_limit_mb``
            (:mod:`agentenvs.alfworld.replanning`); plans are kept per state and followed
            without planning again. Off by default: a plan costs about a second (official games)
            to several (generated scenes), most of it the check on the whole state.
        prefetch: Translate the next seeded game in a helper process (not inside
            daemonic processes such as ``AsyncVectorEnv`` workers).
        translation_cache_size: Games whose translation the engine keeps.
        render_mode: None, ``"ansi"`` or ``"human"``.
        privileged: Put ``info["privileged"]``, ``expert_action`` and ``game_file`` in infos
            (see :class:`~agentenvs.core.env.TextEnv`).
    """

    held_out_split = "eval_in_distribution"
    split_roles = MappingProxyType(
        {
            "train": "training set",
            "eval_in_distribution": "held-out set (valid_seen with the official data): trainers and the README's figures evaluate here",
            "eval_out_of_distribution": "second held-out set (valid_unseen with the official data: unseen rooms)",
        }
    )
    # The next expert command is the first step of the privileged plan; the game file holds the walkthrough.
    privileged_info_keys = ("expert_action", "game_file")

    def __init__(
        self,
        *,
        split: str = "train",
        data_path: str | os.PathLike[str] | None = None,
        task_types: Iterable[str | int] | None = None,
        source: str | None = None,
        num_generated_games: int = 256,
        generator_seed: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
        planner_time_limit_s: float = 20.0,
        planner_memory_limit_mb: int = 1024,
        reward_on_win: float = 1.0,
        max_turns: int = 50,
        action_format: str = "raw",
        expert_plan: bool = False,
        prefetch: bool = True,
        translation_cache_size: int = 32,
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        super().__init__(
            max_turns=max_turns, action_format=action_format, render_mode=render_mode, privileged=privileged
        )
        owner = type(self).__name__
        self.split = check_choice(owner, "split", split, (*SPLIT_FOLDERS, *SPLIT_FOLDERS.values()))
        data_path = check_path(owner, "data_path", data_path)
        try:
            self.task_types = normalize_task_types(task_types)
        except (TypeError, ValueError) as error:  # its message names task_types; ours names the env too
            raise type(error)(f"{owner}: {error}") from None
        source = check_choice(owner, "source", source, (None, "data", "generated"))
        num_generated_games = check_int(owner, "num_generated_games", num_generated_games, minimum=1)
        generator_seed = check_int(owner, "generator_seed", generator_seed, minimum=0)
        cache_dir = check_path(owner, "cache_dir", cache_dir)
        planner_time_limit_s = check_float(
            owner, "planner_time_limit_s", planner_time_limit_s, minimum=0.0, min_inclusive=False
        )
        planner_memory_limit_mb = check_int(owner, "planner_memory_limit_mb", planner_memory_limit_mb, minimum=64)
        self._planner_limits = (planner_time_limit_s, planner_memory_limit_mb)
        self.reward_on_win = check_float(owner, "reward_on_win", reward_on_win)
        self.expert_plan = check_bool(owner, "expert_plan", expert_plan)
        self._prefetch = check_bool(owner, "prefetch", prefetch)
        self._translation_cache_size = check_int(owner, "translation_cache_size", translation_cache_size, minimum=0)
        if source == "generated" and data_path is not None:
            raise ValueError(f"{owner}: data_path needs source='data' or None; source='generated' reads no files")
        if data_path is None and source != "generated":
            # ``import alfworld`` creates and exports $ALFWORLD_DATA (~/.cache/alfworld) even
            # when nothing was downloaded: only a folder holding json_2.1.1 counts as data.
            from_env = data_folder(None, DATA_ENV_VAR)
            if from_env is not None and (source == "data" or (from_env / "json_2.1.1").is_dir()):
                data_path = from_env
        if source is None:
            source = "data" if data_path is not None else "generated"
        if source == "data" and data_path is None:
            raise ValueError(f"{owner}: source='data' needs data_path or ${DATA_ENV_VAR}")
        self.source = source
        # What the games are made of: a snapshot restores only into an env playing the same ones.
        self._scope = repr(
            (source, str(Path(data_path).expanduser().resolve()))
            if data_path is not None
            else (source, generated_pool_seed(generator_seed, self.split))
        )
        if data_path is not None:
            self._games: dict[str, GameRecord] = {g.task_id: g for g in find_games(data_path, split, self.task_types)}
            self._generated = None
        else:
            from agentenvs.alfworld.generator import MIN_VERIFICATION_TIME_S, GeneratedGames
            from agentenvs.alfworld.verifier import PlannerLimits

            verification = max(planner_time_limit_s, MIN_VERIFICATION_TIME_S)  # a tighter limit is the replanner's
            self._generated = GeneratedGames(
                seed=generated_pool_seed(generator_seed, self.split),
                count=num_generated_games,
                task_types=self.task_types,
                cache_dir=cache_dir,
                planner_limits=PlannerLimits(verification, planner_memory_limit_mb),
            )
            self._games = {g.task_id: g for g in self._generated.records}
        self._task_ids = tuple(self._games)
        self._engine = None  # built on first reset, so constructing and pickling stay cheap
        self._task_sentences: dict[str, str] = {}
        self._admissible: list[str] = []
        # The plan the agent is followed on: the walkthrough at reset, a plan from a state once replanned.
        self._plan: list[str] | None = None  # None: none, or the agent left it (planned again when asked)
        self._plan_position = 0  # plan commands executed, in order, since it was made
        self._plan_status = "not planned: no episode"
        self._replanner: Any = None  # a Replanner, started on the first plan
        self._plans: dict[tuple[str, frozenset[tuple[str, tuple[str, ...]]]], Any] = {}  # (task, state) -> PlanResult
        self._game_data: dict[str, Any] = {}  # the current game's file content (what a plan is made from)
        self._goals: dict[str, tuple[str, list[str]]] = {}  # task id -> pddl_goal() of its game
        self._episode_goal: dict[str, Any] = {}

    # -- TextEnv -----------------------------------------------------------------------
    @property
    def task_ids(self) -> Sequence[str]:
        """Trial folders relative to the split folder (or ``generated/...`` ids), sorted."""
        return self._task_ids

    def _has_task(self, task_id: str) -> bool:
        return task_id in self._games

    def _task_text(self, task_id: str) -> str:
        if task_id not in self._task_sentences:
            self._task_sentences[task_id] = read_task_sentence(self._game_file(task_id))
        return self._task_sentences[task_id]

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        observation = self._start_game(task_id)
        self._prefetch_next()
        return observation, self._extra(task_id)

    def _start_game(self, task_id: str) -> str:
        """Loads and resets ``task_id``'s game and this episode's records; returns the first observation."""
        engine = self._get_engine()
        game_file = self._game_file(task_id)
        observation, infos = engine.start(game_file)
        self._admissible = list(infos["admissible_commands"])
        walkthrough = list(engine.walkthrough or [])
        self._plan = walkthrough or None
        self._plan_position = 0
        self._plan_status = "walkthrough" if walkthrough else "not planned: the game has no walkthrough"
        if task_id not in self._goals:
            with open(game_file, encoding="utf-8") as handle:
                self._goals[task_id] = pddl_goal(json.load(handle).get("pddl_problem", ""))
        goal, goal_facts = self._goals[task_id]
        self._episode_goal = {"goal": goal, "goal_facts": goal_facts, "task_type": self._games[task_id].task_type}
        return observation

    def _play(self, command: str) -> tuple[str, bool, bool]:
        """Executes ``command`` in the game and keeps this episode's records; (observation, done, won)."""
        valid = command.strip() in self._admissible
        if valid:  # an inadmissible command changes nothing ("Nothing happens.")
            plan, position = self._plan, self._plan_position
            if plan is not None and position < len(plan) and command.strip() == plan[position]:
                self._plan_position += 1
            elif plan is not None:
                self._plan, self._plan_position, self._plan_status = None, 0, "left the plan"
        observation, _, done, infos = self._get_engine().step(command)
        self._admissible = list(infos["admissible_commands"])
        return observation, bool(done), bool(infos["won"])

    def _act(self, action: str) -> Outcome:
        valid = action.strip() in self._admissible
        observation, done, won = self._play(action)
        extra = self._extra(str(self._task_id), done=won)
        if not valid:
            extra["error"] = f"{action.strip()!r} is not an admissible command"
        return Outcome(
            observation=observation,
            reward=self.reward_on_win if won else 0.0,
            terminated=bool(done or won),
            won=won,
            action_valid=valid,
            info=extra,
        )

    def _admissible_actions(self) -> list[str] | None:
        return list(self._admissible)

    def _snapshot_scope(self) -> str:
        return self._scope

    def _privileged(self) -> Mapping[str, Any]:
        plan = self._current_plan()
        return {"expert_plan": plan, "expert_plan_status": self._plan_status, **self._episode_goal}

    def _current_plan(self) -> list[str] | None:
        """The commands that win from here ([] once won), planning from this state when needed and allowed."""
        if self._won:
            self._plan_status = "won"
            return []
        if self._plan is not None and self._plan_position < len(self._plan):
            return self._plan[self._plan_position :]
        if not self.expert_plan:
            self._plan_status = "not planned: off the walkthrough (expert_plan=False)"
            return None
        result = self._plan_from_here()
        self._plan, self._plan_position, self._plan_status = result.plan and list(result.plan), 0, result.status
        return None if self._plan is None else list(self._plan)

    def _plan_from_here(self) -> Any:
        """The bounded planner's :class:`~agentenvs.alfworld.replanning.PlanResult` for the current state (cached)."""
        from agentenvs.alfworld.replanning import Replanner
        from agentenvs.alfworld.verifier import PlannerLimits, PlannerProcess

        task_id = str(self._task_id)
        facts = self._get_engine().state_facts()
        key = (task_id, frozenset(facts))
        if key not in self._plans:
            if self._game_data.get("task_id") != task_id:
                with open(self._game_file(task_id), encoding="utf-8") as handle:
                    self._game_data = {"task_id": task_id, "game": json.load(handle)}
            if self._replanner is None:
                self._replanner = Replanner(PlannerProcess(PlannerLimits(*self._planner_limits)))
            goal = self._episode_goal.get("goal", "")
            self._plans[key] = self._replanner.plan(self._game_data["game"], facts, goal)
            if len(self._plans) > 256:  # a bound for long random walks: the oldest state goes
                self._plans.pop(next(iter(self._plans)))
        return self._plans[key]

    def close(self) -> None:
        """Stops the engine's prefetch process and the generator's planner process."""
        if self._engine is not None:
            self._engine.close()
        if self._generated is not None:
            self._generated.close()
        if self._replanner is not None:
            self._replanner.close()
            self._replanner = None
        super().close()

    # -- helpers ----------------------------------------------------------------------
    def _get_engine(self):
        if self._engine is None:
            try:
                from agentenvs.alfworld.engine import AlfredEngine
            except ImportError as error:  # e.g. "No module named 'fast_downward'": say which install brings it
                raise ImportError(
                    f'ALFWorld-v0 needs the alfworld extra ({error}): pip install "agentenvs[alfworld]" (README: Install)'
                ) from error

            self._engine = AlfredEngine(translation_cache_size=self._translation_cache_size)
        return self._engine

    def _game_file(self, task_id: str) -> Path:
        if self._generated is not None:
            return self._generated.game_file(task_id)
        return self._games[task_id].path

    def _extra(self, task_id: str, *, done: bool = False) -> dict[str, Any]:
        if not self.privileged:  # the expert (a planner search with expert_plan=True) is not asked
            return {"task_type": self._games[task_id].task_type}
        return {
            "game_file": str(self._game_file(task_id)),
            "task_type": self._games[task_id].task_type,
            "expert_action": None if done else self._expert_action(),
        }

    def expert_action(self) -> str | None:
        """The first command of ``info["privileged"]["expert_plan"]``: the walkthrough's next while the
        agent follows it; once off it, with ``expert_plan=True``, the bounded planner's from this state
        (None when there is no plan: the status says why), as ``info["expert_action"]``."""
        return None if self._done or self.task_id is None else self._expert_action()

    def _expert_action(self) -> str | None:
        plan = self._current_plan()
        return plan[0] if plan else None

    def _prefetch_next(self) -> None:
        """Translates the game the next seeded reset will draw, while the agent plays."""
        if not self._prefetch or len(self._task_ids) < 2:
            return
        rng = copy.deepcopy(self.np_random)
        next_id = self._task_ids[int(rng.integers(len(self._task_ids)))]
        if self._generated is not None and not self._generated.is_ready(next_id):
            return  # generating is heavier than translating: leave it to reset
        self._get_engine().prepare(self._game_file(next_id))
