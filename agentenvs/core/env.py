"""The base class of every agentenvs environment: text in, text out.

A :class:`TextEnv` owns what all our envs share — seeded task selection, turn
counting and truncation, action projection, the ``info`` contract, the error of a step
after the episode ended, and ``ansi``/``human`` rendering — so that an env implements
only its world: :meth:`TextEnv._begin` and :meth:`TextEnv._act`.

The turn limit is ``max_turns``, the env's own: ``env.spec.max_episode_steps`` reports it,
and ``gym.make(id, max_episode_steps=n)`` sets it (see
:func:`agentenvs.core.registration.one_turn_limit`), so an episode has one limit and
reports ``truncated`` once.

``info`` always holds ``task_id``, ``task``, ``turn``, ``won``, ``action_valid``,
``admissible_actions`` (list or None), ``action`` (the executed action, "" if none),
``action_span`` (``(start, end)`` character offsets in the raw action string, or
None; a tuple, not a dict, so Gymnasium vector envs can merge infos in which some
members have a span and others None). With ``privileged=True`` (off by default) it also
holds ``privileged``: what the env knows about the episode that the agent must not see (a
JSON dict whose schema each env documents; ``{}`` for an env that defines none; see
:mod:`agentenvs.core.privileged`), and the env's other :attr:`TextEnv.privileged_info_keys`
(SearchQA's ``gold_answers``, ALFWorld's ``expert_action`` and ``game_file``). A subclass
returns the dict from :meth:`TextEnv._privileged`; every info gets its own copy.

:meth:`TextEnv.snapshot` and :meth:`TextEnv.restore` save and rebuild the state of an episode
(:mod:`agentenvs.core.snapshots`): a restore replays the episode's actions from its start, so an
env whose episode depends only on its task, its generator and the actions (each :meth:`_begin`
starting afresh) implements only :meth:`TextEnv._snapshot_scope`.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from agentenvs.core.actions import ACTION_FORMATS
from agentenvs.core.checks import check_bool, check_choice, check_int, did_you_mean, shown
from agentenvs.core.parsers import Projection, sanitize_model_text
from agentenvs.core.privileged import PRIVILEGED_KEY, copy_json
from agentenvs.core.snapshots import (
    SNAPSHOT_FORMAT,
    Action,
    EnvSnapshot,
    NonText,
    check_snapshot,
    class_name,
    restored_rng,
    rng_state,
)
from agentenvs.core.spaces import TextSpace


@dataclass
class Outcome:
    """What an env's world returns for one executed action.

    Attributes:
        observation: Text the agent sees next.
        reward: Reward for this step.
        terminated: Whether the episode reached a terminal state.
        won: Whether the task is accomplished.
        action_valid: Whether the world accepted the action.
        info: Extra env-specific info entries.
    """

    observation: str
    reward: float = 0.0
    terminated: bool = False
    won: bool = False
    action_valid: bool = True
    info: dict[str, Any] = field(default_factory=dict)


_KEYWORDS: dict[type, frozenset[str] | None] = {}


def _keywords(cls: type) -> frozenset[str] | None:
    """The keyword arguments ``cls``'s constructor takes (None: any, it takes ``**kwargs``); read once a class."""
    if cls not in _KEYWORDS:
        parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        names = (name for name, p in parameters.items() if name != "self" and p.kind is not p.VAR_POSITIONAL)
        _KEYWORDS[cls] = None if takes_any else frozenset(names)
    return _KEYWORDS[cls]


class TextEnv(gym.Env[str, str]):
    """Base of text environments; subclasses implement the world.

    Subclasses define :attr:`task_ids`, :meth:`_task_text`, :meth:`_begin`,
    :meth:`_act` and optionally :meth:`_admissible_actions` and :meth:`_privileged`.

    Args:
        max_turns: Steps before the episode is truncated.
        action_format: How raw actions are written and parsed: the name of one of
            :data:`agentenvs.core.actions.ACTION_FORMATS`.
        render_mode: None, ``"ansi"`` (:meth:`render` returns the text) or ``"human"``
            (reset and step print it).
        max_observation_length: Longest observation the observation space admits.
        max_action_length: Longest raw action the action space admits.
        privileged: Put what the agent must not see (``info["privileged"]`` and the
            :attr:`privileged_info_keys`) in every info. Off by default, so that code reading
            ``info`` cannot use gold answers without asking for them; credit rules that
            condition on privileged information, evaluation and the expert's demonstrations
            turn it on (``agents`` does it for its runs).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1}
    held_out_split: ClassVar[str | None] = None
    """The ``split`` argument value that selects held-out tasks (None: the env has no splits).

    Trainers evaluate on it by default (``split=<held_out_split>``)."""
    split_roles: ClassVar[Mapping[str, str]] = {}
    """What each split is for, in the words the recipes and results use (the training set, the
    tuning set a recipe was chosen on, the report set its figures are measured on); shown by
    ``agentenvs info``."""
    privileged_info_keys: ClassVar[tuple[str, ...]] = ()
    """Top-level ``info`` keys that, like ``info["privileged"]``, tell the agent what it must
    not know (ALFWorld's ``expert_action``); absent unless ``privileged=True``, and
    ``wrappers.StripPrivileged`` removes them too."""
    action_kinds: ClassVar[tuple[str, ...]] = ()
    """The kinds :meth:`action_kind` names (empty: the env names none)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # A misspelt keyword (gym.make("WebShop-v0", max_turn=5)) is named with the closest one the
        # constructor takes, where Python's own TypeError would name it alone.
        accepted = _keywords(cls)
        for key in kwargs:
            if accepted is not None and key not in accepted:
                raise TypeError(
                    f"{cls.__name__} takes no argument {key!r}{did_you_mean(key, sorted(accepted))}; "
                    f"it takes: {', '.join(sorted(accepted))}"
                )
        return super().__new__(cls)

    def __init__(
        self,
        *,
        max_turns: int,
        action_format: str = "raw",
        render_mode: str | None = None,
        max_observation_length: int = 1 << 20,
        max_action_length: int = 1 << 16,
        privileged: bool = False,
    ) -> None:
        owner = type(self).__name__
        self.max_turns = check_int(owner, "max_turns", max_turns, minimum=1)
        self.action_format = check_choice(owner, "action_format", action_format, tuple(ACTION_FORMATS))
        render_mode = check_choice(owner, "render_mode", render_mode, (None, *self.metadata["render_modes"]))
        max_observation_length = check_int(owner, "max_observation_length", max_observation_length, minimum=1)
        max_action_length = check_int(owner, "max_action_length", max_action_length, minimum=1)
        self.privileged = check_bool(owner, "privileged", privileged)
        """Whether infos carry the privileged keys (see the class docstring)."""
        self._project = ACTION_FORMATS[action_format].parse
        self.render_mode = render_mode
        self.observation_space = TextSpace(max_observation_length)
        self.action_space = TextSpace(max_action_length)
        self.next_task_id: str | None = None
        """Task for the next reset that names none (lets vector envs assign tasks per env)."""
        self._task_id: str | None = None
        self._turn = 0
        self._done = True
        self._won = False
        self._last_observation = ""
        self._actions: list[Action] = []
        self._episode_rng: dict[str, Any] = {}

    # -- what subclasses implement -------------------------------------------------
    @property
    def task_ids(self) -> Sequence[str]:
        """Ids of the tasks this env can play, in a fixed order."""
        raise NotImplementedError

    def _task_text(self, task_id: str) -> str:
        """The instruction or question of ``task_id``."""
        raise NotImplementedError

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        """Starts ``task_id``; returns the first observation and extra info."""
        raise NotImplementedError

    def _act(self, action: str) -> Outcome:
        """Executes a projected, well-formed action."""
        raise NotImplementedError

    def _admissible_actions(self) -> list[str] | None:
        """Actions the env accepts now, or None where the action set is open."""
        return None

    def _privileged(self) -> Mapping[str, Any]:
        """What the env knows about the current episode that the agent must not see.

        Called for the info of every reset and step, after :meth:`_begin` / :meth:`_act`
        (``self._turn`` is then the number of steps taken). Return JSON values that were
        computed at reset (step must stay fast); the base copies the dict into the info
        under ``"privileged"``, so returning the same dict every time is fine.
        """
        return {}

    def _snapshot_scope(self) -> str:
        """What this env's world is made of (the settings that build its catalogue, corpus or games).

        A snapshot restores only into an env of the same class whose scope is equal. Implementing
        it says the env can be replayed: :meth:`_begin` starts the episode afresh and the episode
        depends only on the task, the env's generator and the actions.
        """
        raise NotImplementedError(f"{type(self).__name__} does not support snapshots")

    def expert_action(self) -> str | None:
        """The env's own expert's next action from the current state (None: no expert, or done).

        The action is the executable one, in the env's action language (what ``info["action"]``
        reports for it; a think format's tags are the agent's to add). Experts know the goal:
        use them to make demonstrations (behaviour cloning), never as the agent's input.
        """
        return None

    def action_kind(self, action: str) -> str | None:
        """What kind of action ``action`` (executable, in the env's action language) is in the current
        state: one of :attr:`action_kinds` (WebShop: ``search``, or the kind of what it clicks, e.g.
        ``option``), None where the env names no kinds or would refuse the action here. Changes nothing."""
        return None

    def _invalid_format_observation(self, projection: Projection) -> str:
        """Observation after output that holds no well-formed action."""
        return f"Invalid action: {projection.error}"

    # -- the Gymnasium API ------------------------------------------------------------
    @property  # gym.Env declares a plain attribute; gym.make sets it, the setter below keeps it
    def spec(self) -> EnvSpec | None:
        """The spec ``gym.make`` set, with ``max_episode_steps`` (and ``kwargs["max_turns"]``) the env's limit.

        None for an env built without ``gym.make``. The limit is :attr:`max_turns`, so wrappers and
        libraries reading ``env.spec.max_episode_steps`` see the one limit the env enforces, and
        ``gym.make(env.spec)`` rebuilds the env with it (``kwargs`` name ``max_turns`` where the
        constructor takes it by name).
        """
        spec = self._made_spec
        if spec is None:
            return None
        kwargs = spec.kwargs
        if "max_turns" in inspect.signature(type(self)).parameters:
            kwargs = {**kwargs, "max_turns": self.max_turns}
        return dataclasses.replace(spec, max_episode_steps=self.max_turns, kwargs=kwargs)

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        self._made_spec = value

    @property
    def task_id(self) -> str | None:
        """The task of the current episode (None before the first reset)."""
        return self._task_id

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Starts an episode.

        The task is ``options["task_id"]``, else :attr:`next_task_id`, else drawn
        from the env's seeded generator (so equal seeds give equal tasks).

        A reset that fails (bad options, an unknown task) changes nothing: the env is as it was,
        its generator and :attr:`next_task_id` included.

        Raises:
            ValueError: for options that are not a dict of known keys, or a ``task_id`` that is
                not one of :attr:`task_ids` (the message names it, cut to a sane length).
        """
        task_id = self._requested_task(options)
        super().reset(seed=seed)
        self.next_task_id = None
        if task_id is None:
            task_ids = self.task_ids
            task_id = task_ids[int(self.np_random.integers(len(task_ids)))]
        observation, info = self._start(str(task_id))
        if self.render_mode == "human":
            self.render()
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Projects the raw ``action``, executes it and reports the outcome.

        Malformed output is an invalid action with feedback as the observation.
        Surrogates and NUL in ``action`` become U+FFFD before anything reads it
        (:func:`~agentenvs.core.parsers.sanitize_model_text`): observations and infos
        stay encodable and ``action_span`` still indexes the raw ``action``.

        Raises:
            gymnasium.error.ResetNeeded: before the first reset (as Gymnasium's
                ``OrderEnforcing`` does) and after the episode ended (terminated or truncated):
                nothing is left to step, and a silent no-op would hide a loop's bug.
        """
        if self._task_id is None:
            raise gym.error.ResetNeeded(f"{type(self).__name__}: call reset() before step()")
        if self._done:
            ended = "terminated" if self._terminated else f"was truncated (max_turns={self.max_turns})"
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}: the episode {ended} at turn {self._turn}; call reset() before step()"
            )
        result = self._advance(action if isinstance(action, str) else NonText(type(action).__name__))
        if self.render_mode == "human":
            self.render()
        return result

    def _start(self, task_id: str) -> tuple[str, dict[str, Any]]:
        """Begins ``task_id`` from the generator as it is (what reset and a restore's replay share)."""
        self._task_id = task_id
        self._turn = 0
        self._done = False
        self._won = False
        self._terminated = self._truncated = False
        self._actions = []
        self._episode_rng = rng_state(self.np_random)
        observation, extra = self._begin(task_id)
        self._last_observation = observation
        return observation, self._info(action_valid=True, action="", span=None, extra=extra)

    def _advance(self, action: Action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One step of a running episode (what step and a restore's replay share)."""
        self._turn += 1
        self._actions.append(action)
        projection = (
            self._project(sanitize_model_text(action))
            if isinstance(action, str)
            else Projection.invalid(f"The action must be text, got {action.type_name}.")
        )
        if projection.valid:
            outcome = self._act(projection.action)
        else:
            outcome = Outcome(
                observation=self._invalid_format_observation(projection),
                action_valid=False,
                info={"error": projection.error},
            )
        self._won = self._won or outcome.won
        terminated = bool(outcome.terminated)
        truncated = not terminated and self._turn >= self.max_turns
        self._done, self._terminated, self._truncated = terminated or truncated, terminated, truncated
        self._last_observation = outcome.observation
        span = projection.span if projection.valid else None
        info = self._info(
            action_valid=outcome.action_valid,
            action=projection.action,
            span=None if span is None else (span.start, span.end),
            extra=outcome.info,
        )
        return outcome.observation, float(outcome.reward), terminated, truncated, info

    @classmethod
    def supports_snapshots(cls) -> bool:
        """Whether this class implements :meth:`_snapshot_scope` (every :class:`TextEnv` has
        :meth:`snapshot`, which raises ``NotImplementedError`` where it is missing): a restore
        replays the episode through :meth:`_begin` and :meth:`_act`, so an env whose episode
        depends only on its task, its generator and the actions needs nothing more."""
        return cls._snapshot_scope is not TextEnv._snapshot_scope and callable(getattr(cls, "snapshot", None))

    def snapshot(self) -> EnvSnapshot:
        """How to rebuild the current episode's state, as one value (see :mod:`agentenvs.core.snapshots`).

        It holds the task, the generator at the episode's start and now, and the actions played
        (nothing it shares with the env, nothing privileged), so it can be kept, restored any
        number of times, and sent to another process holding an env built alike.

        Raises:
            gymnasium.error.ResetNeeded: before the first reset (there is no episode to save).
        """
        if self._task_id is None:
            raise gym.error.ResetNeeded(f"{type(self).__name__}: call reset() before snapshot()")
        return EnvSnapshot(
            format=SNAPSHOT_FORMAT,
            env_class=class_name(type(self)),
            scope=self._snapshot_scope(),
            task_id=self._task_id,
            episode_rng_state=copy.deepcopy(self._episode_rng),
            actions=tuple(self._actions),
            rng_state=rng_state(self.np_random),
            rng_seed=self._np_random_seed,
            next_task_id=self.next_task_id,
        )

    def restore(self, snapshot: EnvSnapshot) -> tuple[str, dict[str, Any]]:
        """Rebuilds the state of ``snapshot`` and returns its ``(observation, info)``.

        The env begins the snapshot's task from the generator the episode began with and replays
        its actions (unrendered), so the observation and info are those the env computes there
        (the ones the episode returned at that point) and an episode goes on from here as it went
        on from there: the same actions give the same observations, rewards and infos, and the
        same seedless resets draw the same tasks. A restore costs one reset and one step per
        action played. A fresh env (never reset) can restore too; through ``gym.make``'s
        wrappers reset it once first, as Gymnasium's order check wants a reset before any step.

        Raises:
            TypeError: for an object that is not a snapshot, or a field of the wrong type.
            ValueError: for a snapshot of another env class, world (catalogue, corpus, games) or
                task set, or whose actions go on after the episode ends; the message names the
                field. The env is then as it was.

        Example:
            >>> import gymnasium as gym, agentenvs
            >>> env = gym.make("SearchQA-v0")
            >>> _ = env.reset(seed=0)
            >>> snapshot = env.unwrapped.snapshot()
            >>> first = env.step("<search>capital</search>")
            >>> observation, info = env.unwrapped.restore(snapshot)
            >>> env.step("<search>capital</search>")[0] == first[0], info["turn"]
            (True, 0)
        """
        checked = check_snapshot(snapshot, env_class=type(self), scope=self._snapshot_scope(), max_turns=self.max_turns)
        if not self._has_task(checked.task_id):
            raise ValueError(
                f"EnvSnapshot.task_id must be one of this env's tasks ({len(self.task_ids)} tasks; see "
                f"env.unwrapped.task_ids), got {shown(checked.task_id)}"
            )
        if checked.next_task_id is not None and not self._has_task(checked.next_task_id):
            raise ValueError(
                f"EnvSnapshot.next_task_id must be one of this env's tasks, got {shown(checked.next_task_id)}"
            )
        episode_rng = restored_rng(checked.episode_rng_state, "episode_rng_state")
        generator = restored_rng(checked.rng_state)
        own = None if self._task_id is None else self.snapshot()
        own_generator = (self._np_random, self._np_random_seed)
        try:
            observation, info = self._replay(checked, episode_rng)
        except BaseException:
            self._put_back(own, own_generator)
            raise
        self._np_random, self._np_random_seed = generator, checked.rng_seed
        self.next_task_id = checked.next_task_id
        return observation, info

    def _replay(self, snapshot: EnvSnapshot, episode_rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
        self._np_random, self._np_random_seed = episode_rng, snapshot.rng_seed
        observation, info = self._start(snapshot.task_id)
        for number, action in enumerate(snapshot.actions):
            if self._done:
                raise ValueError(
                    f"EnvSnapshot.actions must end where the episode ends: the episode of {snapshot.task_id!r} "
                    f"ended at turn {self._turn}, and {len(snapshot.actions) - number} action(s) follow"
                )
            observation, _, _, _, info = self._advance(action)
        return observation, info

    def _put_back(self, own: EnvSnapshot | None, generator: tuple[Any, Any]) -> None:
        """The env as it was before a restore that failed (its own snapshot replays, or it was fresh)."""
        if own is None:
            self._task_id, self._turn, self._done, self._won = None, 0, True, False
            self._terminated = self._truncated = False
            self._actions, self._last_observation = [], ""
        else:
            self._replay(own, restored_rng(own.episode_rng_state, "episode_rng_state"))
            self.next_task_id = own.next_task_id
        self._np_random, self._np_random_seed = generator

    def render(self) -> str | None:
        """The current observation and turn as text: returned with ``render_mode="ansi"``,
        printed with ``"human"`` (which reset and step also do, as Gymnasium's human mode does)."""
        text = f"[{self._task_id} turn {self._turn}/{self.max_turns}]\n{self._last_observation}"
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text, flush=True)
        return None

    # -- helpers ----------------------------------------------------------------------
    def has_task(self, task_id: str) -> bool:
        """Whether ``task_id`` is one of :attr:`task_ids` (envs with many tasks answer faster)."""
        return isinstance(task_id, str) and self._has_task(task_id)

    def _has_task(self, task_id: str) -> bool:
        return task_id in self.task_ids

    def reset_options_error(self, options: Any) -> str | None:
        """Why ``reset(options=options)`` would fail, or None; changes nothing.

        A vector env's parent asks this of a worker before a reset: Gymnasium's async vector env
        shuts down a worker whose reset raises, so the check must answer, not raise."""
        try:
            self._requested_task(options)
        except ValueError as error:
            return str(error)
        return None

    def _requested_task(self, options: Any) -> str | None:
        """The task a reset asks for (None: draw one), checked before the reset changes anything."""
        owner = type(self).__name__
        if options is None:
            options = {}
        if not isinstance(options, Mapping):
            raise ValueError(f"{owner}.reset: options must be a dict or None, got {shown(options)}")
        unknown = [key for key in options if key != "task_id"]
        if unknown:
            raise ValueError(f"{owner}.reset: unknown option(s) {shown(unknown)}; supported: ['task_id']")
        task_id = options.get("task_id", self.next_task_id)
        if task_id is None:
            return None
        if not isinstance(task_id, str):
            example = next(iter(self.task_ids), None)
            raise ValueError(
                f"{owner}.reset: task_id must be a string (task ids are strings such as {example!r}; see "
                f"env.unwrapped.task_ids), got {shown(task_id)} of type {type(task_id).__name__}"
            )
        if not self._has_task(task_id):
            raise ValueError(
                f"{owner}.reset: unknown task_id {shown(task_id)} ({len(self.task_ids)} tasks; "
                "see env.unwrapped.task_ids)"
            )
        return task_id

    def _info(
        self, *, action_valid: bool, action: str, span: tuple[int, int] | None, extra: dict[str, Any]
    ) -> dict[str, Any]:
        assert self._task_id is not None, "info is built after reset() only"
        admissible = self._admissible_actions() if not self._done else None
        info: dict[str, Any] = {
            "task_id": self._task_id,
            "task": self._task_text(self._task_id),
            "turn": self._turn,
            "won": self._won,
            "action_valid": bool(action_valid),
            "admissible_actions": None if admissible is None else list(admissible),
            "action": action,
            "action_span": span,
        }
        info.update(extra)
        if self.privileged:
            info[PRIVILEGED_KEY] = copy_json(self._privileged())
        else:
            for key in self.privileged_info_keys:
                info.pop(key, None)
        return info

    _terminated = False
    _truncated = False
    _made_spec: EnvSpec | None = None
    """The spec as ``gym.make`` set it (its ``kwargs`` are the ones the caller passed)."""
