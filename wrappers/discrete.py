"""A ``Discrete(N)`` action space over the current candidate actions of any agentenvs env.

Classic RL libraries (Stable-Baselines3, sb3-contrib, Tianshou) act in fixed-size discrete
spaces; our envs take text. :class:`DiscreteActions` lists, each turn, at most ``N``
candidate actions and maps index ``i`` to the ``i``-th of them:

- **Closed action sets** (ALFWorld, WebShop: ``info["admissible_actions"]`` is a list): the
  admissible actions in the env's order. A template such as WebShop's ``search[<query>]``
  becomes one search per query made from the task: the instruction itself, then its
  phrases (runs of content words between punctuation and function words).
- **Open action sets** (SearchQA: ``admissible_actions`` is None, ``action_format=
  "search_answer"``): ``<search>`` the question, ``<search>`` each title of the passages
  retrieved so far in the episode (``info["retrieved_titles"]``, else parsed from the
  observation's ``Doc i(Title: t) text`` lines), ``<answer>`` each entity (capitalised
  name or number) in those passages, then ``<search>`` each entity that is not a title.
  Latest passages first.

``info`` gains ``candidate_actions`` (the list, in the env's own action language),
``action_mask`` (``np.int8``, length ``N``: 1 where an index names a candidate) and
``candidates_dropped`` (how many did not fit in ``N``); :meth:`DiscreteActions.action_masks`
returns the mask as booleans (the sb3-contrib ``MaskablePPO`` convention). The chosen
candidate is passed to the env rendered in its action format
(:func:`agentenvs.core.actions.render_action`: ``<action>…</action>`` for the think formats). An index past the candidates, or anything that is not an integer index,
is passed as an empty action: the env reports it as an invalid action with its usual
feedback and the turn counts, as for a model that wrote nothing usable. Nothing raises.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = DiscreteActions(gym.make("SearchQA-v0"), max_actions=8)
    >>> _, info = env.reset(seed=0)
    >>> info["candidate_actions"], info["action_mask"].tolist()
    (['<search>Who founded Fethstoul Systems?</search>'], [1, 0, 0, 0, 0, 0, 0, 0])
    >>> _, _, _, _, info = env.step(0)
    >>> info["candidate_actions"][:3]
    ['<search>Who founded Fethstoul Systems?</search>', '<search>Fethstoul Systems</search>', '<search>Hondith Zusmior</search>']
    >>> "<answer>Grouxvio Pounbae</answer>" in info["candidate_actions"]
    True
    >>> _, _, _, _, info = env.step(99)  # no such candidate: an invalid action, not an error
    >>> info["action_valid"]
    False
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentenvs.core.actions import ACTION_FORMATS, render_action
from agentenvs.core.checks import check_int, is_integer

_TEMPLATE = re.compile(r"\[<[^\[\]<>]+>\]")
"""A placeholder argument such as WebShop's ``search[<query>]``."""
_DOC_TITLE = re.compile(r"Doc \d+\(Title: (.+?)\) ")
_DOC_PREFIX = re.compile(r"Doc \d+\(Title: .+?\) ")
_ENTITY = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*|\b\d{3,4}\b")
_PHRASE_BREAK = re.compile(r"[,.;:!?()\[\]\"]")
_WORD = re.compile(r"\w+(?:['.-]\w+)*")

QUERY_STOPWORDS = frozenset(
    """a an the and or but for with without of in on at to by from into than that this these those
    which who whom whose what when where why how is are was were be been it its i me my we our you
    your he she his her they their them want wants need needs looking look find buy get please
    would like can could some any""".split()
)
"""Words that end a phrase when the task is cut into search queries."""
_LEADING_NON_NAMES = frozenset("the a an in on at he she it his her they this that doc title".split())


def search_queries(task: str, max_queries: int = 6) -> list[str]:
    """Search queries made from a task: the task itself, then its phrases.

    A phrase is a run of words with no punctuation and no word of
    :data:`QUERY_STOPWORDS` in it. Duplicates are dropped, order kept.

    Example:
        >>> search_queries("i want a red t-shirt, slim fit, and price lower than 30.00 dollars")
        ['i want a red t-shirt, slim fit, and price lower than 30.00 dollars', 'red t-shirt', 'slim fit', 'price lower', '30.00 dollars']
    """
    task = " ".join(task.split())
    queries = [task] if task else []
    # A period between digits is part of a number ("30.00"), not the end of a sentence.
    pieces = _PHRASE_BREAK.split(re.sub(r"(?<=\d)\.(?=\d)", "\0", task))
    for piece in pieces:
        run: list[str] = []
        for word in [*_WORD.findall(piece.replace("\0", ".")), ""]:
            if word and word.lower() not in QUERY_STOPWORDS:
                run.append(word)
            elif run:
                queries.append(" ".join(run))
                run = []
    return _unique(queries)[:max_queries]


def passage_titles(observation: str) -> list[str]:
    """The titles of ``Doc i(Title: t) text`` passages in an observation, in order.

    Example:
        >>> passage_titles("<information>Doc 1(Title: Ada Lovelace) Ada was ...\\nDoc 2(Title: Byron) He ...")
        ['Ada Lovelace', 'Byron']
    """
    return _unique(_DOC_TITLE.findall(observation))


def passage_entities(observation: str) -> list[str]:
    """Names (runs of capitalised words) and 3-4 digit numbers in an observation's passages.

    Only text inside ``<information>…</information>`` counts when the observation has
    such a block; the ``Doc i(Title: t)`` prefixes are skipped, and a leading article or
    pronoun is cut from a name ("The Hague" gives "Hague").

    Example:
        >>> passage_entities("<information>Doc 1(Title: Acme) Acme Works was founded by Ada Byron in 1901.</information>")
        ['Acme Works', 'Ada Byron', '1901']
    """
    start, end = observation.find("<information>"), observation.find("</information>")
    if 0 <= start < end:
        observation = observation[start + len("<information>") : end]
    found: list[str] = []
    for match in _ENTITY.finditer(_DOC_PREFIX.sub("\n", observation)):
        words = match.group(0).split()
        while words and words[0].lower() in _LEADING_NON_NAMES:
            words.pop(0)
        if words:
            found.append(" ".join(words))
    return _unique(found)


class DiscreteActions(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Actions are indices into the current candidate actions (see the module docstring).

    Args:
        env: Any env following the agentenvs info contract.
        max_actions: ``N``, the size of the ``Discrete`` action space; candidates past it
            are dropped (counted in ``info["candidates_dropped"]``).
        max_queries: Search queries a search template becomes (the task and its phrases).

    Raises:
        TypeError, ValueError: for a bad ``max_actions``/``max_queries`` or an env whose
            ``action_format`` is not one of :data:`ACTION_FORMATS`.
    """

    def __init__(self, env: gym.Env[Any, str], max_actions: int = 64, max_queries: int = 6) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, max_actions=max_actions, max_queries=max_queries)
        super().__init__(env)
        owner = type(self).__name__
        self.max_actions = check_int(owner, "max_actions", max_actions, minimum=1)
        self.max_queries = check_int(owner, "max_queries", max_queries, minimum=1)
        self.action_format = str(getattr(env.unwrapped, "action_format", "raw"))
        if self.action_format not in ACTION_FORMATS:
            raise ValueError(
                f"{owner}: the env's action_format must be one of {', '.join(ACTION_FORMATS)}, "
                f"got {self.action_format!r}"
            )
        self.action_space = spaces.Discrete(self.max_actions)
        self._candidates: list[str] = []
        self._mask = np.zeros(self.max_actions, dtype=np.int8)
        self._titles: list[str] = []  # seen this episode, latest first (open action sets)
        self._entities: list[str] = []

    @property
    def candidate_actions(self) -> list[str]:
        """The current candidates (a copy), index ``i`` being action ``i``."""
        return list(self._candidates)

    def action_masks(self) -> np.ndarray:
        """Which indices name a candidate now (bool, length ``N``; sb3-contrib's convention)."""
        return self._mask.astype(bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._titles, self._entities = [], []
        return observation, self._update(observation, info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        index = self._index(action)
        if index is not None and index < len(self._candidates):
            text = render_action(self._candidates[index], self.action_format)
        else:
            text = ""  # no candidate: every projector reports an empty action as invalid
        observation, reward, terminated, truncated, info = self.env.step(text)
        return observation, reward, terminated, truncated, self._update(observation, info)

    # -- helpers ----------------------------------------------------------------------
    @staticmethod
    def _index(action: Any) -> int | None:
        """``action`` as an index, or None where it is not one integer (floats and bools are not)."""
        if isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
            action = action.reshape(()).item()
        if not is_integer(action) or int(action) < 0:
            return None
        return int(action)

    def _update(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        candidates = self._build(str(observation), info)
        self._candidates = candidates[: self.max_actions]
        self._mask = np.zeros(self.max_actions, dtype=np.int8)
        self._mask[: len(self._candidates)] = 1
        info = dict(info)
        info["candidate_actions"] = list(self._candidates)
        info["action_mask"] = self._mask.copy()
        info["candidates_dropped"] = len(candidates) - len(self._candidates)
        return info

    def _build(self, observation: str, info: dict[str, Any]) -> list[str]:
        task = str(info.get("task", ""))
        admissible = info.get("admissible_actions")
        if admissible is not None:
            return _unique(self._expand(str(action), task) for action in admissible)
        if self.action_format != "search_answer":
            return []  # an open action set we cannot enumerate (or an episode that ended)
        titles = list(info.get("retrieved_titles") or passage_titles(observation))
        self._titles = _unique([*titles, *self._titles])
        self._entities = _unique([*passage_entities(observation), *self._entities])
        others = [entity for entity in self._entities if entity not in self._titles]
        return _unique(
            [
                *([f"<search>{task}</search>"] if task.strip() else []),
                *(f"<search>{title}</search>" for title in self._titles),
                *(f"<answer>{entity}</answer>" for entity in self._entities),
                *(f"<search>{entity}</search>" for entity in others),
            ]
        )

    def _expand(self, action: str, task: str) -> list[str]:
        """A template action (``search[<query>]``) as one action per query; others as themselves."""
        match = _TEMPLATE.search(action)
        if match is None:
            return [action]
        head, tail = action[: match.start()], action[match.end() :]
        return [f"{head}[{query}]{tail}" for query in search_queries(task, self.max_queries)]


def _unique(items: Iterable[str | Sequence[str]]) -> list[str]:
    """Items (or the items of nested lists) without repeats or blanks, first occurrence kept."""
    seen: dict[str, None] = {}
    for item in items:
        for text in [item] if isinstance(item, str) else item:
            if text.strip():
                seen.setdefault(text, None)
    return list(seen)
