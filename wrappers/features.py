"""Fixed-size numeric observations for any agentenvs env: hashed text features.

:class:`TextFeatures` turns the text observation (and the task, and optionally the last
action or all the episode's actions: :data:`FIELDS`) into a ``Box`` vector: each field is
a bag of words hashed by scikit-learn's ``HashingVectorizer`` into ``num_features``
columns (L2-normalised, no vocabulary to fit, no model to download), concatenated.

Over :class:`~wrappers.discrete.DiscreteActions` it can also describe each candidate
action, for agents that score actions (DRRN-style: one network applied to every
candidate) rather than index slots. The observation is then a ``Dict`` of

- ``"observation"``: the vector above;
- ``"candidates"``: ``(N, num_candidate_features + len(CROSS_FEATURES))``: per candidate
  its hashed words, then the :data:`CROSS_FEATURES`; rows past the candidates are 0;
- the action mask (key ``mask_key``, default ``"action_mask"``; Tianshou's DQN reads a
  key named ``"mask"``): ``MultiBinary(N)``.

The same ``(N, d)`` array is in ``info["candidate_features"]`` either way. A candidate's
*context* is the observation text that follows its argument (``B0...`` in
``click[B0...]``, or the whole action) up to the next candidate's argument, outside the
task statement: on WebShop's results page, a product's title and price.

Tianshou's collector stores each step's ``info`` in its replay buffer, which needs one
shape per key on every step; the contract's lists (``admissible_actions``,
``candidate_actions``) vary in length, so pass ``info_keys`` (e.g. ``("won",
"action_valid")``) there.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> from wrappers.discrete import DiscreteActions
    >>> env = TextFeatures(DiscreteActions(gym.make("SearchQA-v0"), max_actions=8),
    ...                    num_features=64, candidate_features=True)
    >>> observation, info = env.reset(seed=0)
    >>> observation["observation"].shape, observation["candidates"].shape, observation["action_mask"].tolist()
    ((128,), (8, 73), [1, 0, 0, 0, 0, 0, 0, 0])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentenvs.core.checks import check_bool, check_choice, check_int, check_str

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import HashingVectorizer

FIELDS = ("observation", "task", "action", "history")
"""Text fields :class:`TextFeatures` can hash: the observation, ``info["task"]``, ``info["action"]`` (the
action executed last) and the history (every action executed in the episode: a memory of what was done,
such as having taken an object)."""

CROSS_FEATURES = (
    "task_overlap",  # share of the candidate's argument words that occur in the task
    "task_overlap_count",  # how many do, /4, at most 1
    "context_task_overlap",  # share of the context's words that occur in the task
    "task_coverage",  # share of the task's words found in the candidate or its context
    "observation_overlap",  # share of the candidate's words in the observation (outside the task)
    "times_taken",  # times this candidate was executed in the episode, /3, at most 1
    "is_last_action",  # whether it is the action executed last
    "position",  # index / N
    "present",  # 1 for a candidate, 0 for an empty row
)
"""The per-candidate features after the hashed words, in order (each in [0, 1])."""

_TOKEN_PATTERN = r"(?u)\b\w+(?:[-'.]\w+)*\b"
_TOKEN = re.compile(_TOKEN_PATTERN)
_ARGUMENT = re.compile(r"^\s*\w+\[(.*)\]\s*$", re.DOTALL)
_TAGGED = re.compile(r"^\s*<(\w+)>(.*)</\1>\s*$", re.DOTALL)
STOPWORDS = frozenset(
    """a an the and or but for with without of in on at to by from into than that this these those
    is are was were be been it its i me my we you your he she his her they their them as not no
    which who what when where how there here""".split()
)
"""Words left out of the overlap features (they are still hashed)."""


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without :data:`STOPWORDS` (hyphenated words stay whole).

    Example:
        >>> sorted(content_words("Size: X-Large, and the price"))
        ['price', 'size', 'x-large']
    """
    return {word for word in _TOKEN.findall(text.lower()) if word not in STOPWORDS}


def action_argument(action: str) -> str:
    """The part of an action that names its object: ``B01`` in ``click[B01]``, ``x`` in ``<search>x</search>``.

    Example:
        >>> action_argument("click[Buy Now]"), action_argument("go to desk 1")
        ('Buy Now', 'go to desk 1')
    """
    match = _ARGUMENT.match(action) or _TAGGED.match(action)
    if match is None:
        return action.strip()
    return match.group(match.lastindex or 1).strip()


def candidate_contexts(candidates: Sequence[str], observation: str, task: str, max_chars: int) -> list[str]:
    """Each candidate's context: the observation text after its argument, up to the next argument.

    The task statement is cut out of the observation first, so that an argument the task
    also mentions ("red") is found on the page, not in the instruction.

    Example:
        >>> candidate_contexts(["click[B1]", "click[B2]"], "Buy red [SEP] B1 [SEP] Red Cap [SEP] B2 [SEP] Hat", "Buy red", 50)
        ['[SEP] Red Cap [SEP]', '[SEP] Hat']
    """
    page = observation.replace(task, " ") if task else observation
    lowered = page.lower()
    starts: list[tuple[int, int]] = []  # (start, end) of each candidate's argument, -1 where absent
    for candidate in candidates:
        argument = action_argument(candidate).lower()
        start = _find_word(lowered, argument) if argument else -1
        starts.append((start, start + len(argument)))
    boundaries = sorted(start for start, _ in starts if start >= 0)
    contexts = []
    for start, end in starts:
        if start < 0:
            contexts.append("")
            continue
        following = [b for b in boundaries if b >= end]
        stop = min([end + max_chars, *following[:1]])
        contexts.append(page[end:stop].strip())
    return contexts


def _find_word(text: str, word: str) -> int:
    """The first occurrence of ``word`` in ``text`` not inside a longer word, else -1."""
    start = text.find(word)
    while start >= 0:
        before = text[start - 1] if start > 0 else " "
        after = text[start + len(word)] if start + len(word) < len(text) else " "
        if not (before.isalnum() or after.isalnum()):
            return start
        start = text.find(word, start + 1)
    return -1


def cross_features(
    candidates: Sequence[str],
    contexts: Sequence[str],
    *,
    task: str,
    observation: str,
    taken: dict[str, int],
    last_action: str,
    max_actions: int,
) -> np.ndarray:
    """The :data:`CROSS_FEATURES` of each candidate, ``(len(candidates), len(CROSS_FEATURES))``.

    Example:
        >>> cross_features(["take mug 1", "look"], ["", ""], task="put a mug in sink", observation="a mug 1",
        ...                taken={"look": 1}, last_action="look", max_actions=4).astype(float).round(2).tolist()
        [[0.33, 0.25, 0.0, 0.33, 0.67, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.33, 1.0, 0.25, 1.0]]
    """
    task_words = content_words(task)
    page_words = content_words(observation.replace(task, " ") if task else observation)
    rows = np.zeros((len(candidates), len(CROSS_FEATURES)), dtype=np.float32)
    for i, (candidate, context) in enumerate(zip(candidates, contexts, strict=True)):
        words, context_words = content_words(action_argument(candidate)), content_words(context)
        in_task = len(words & task_words)
        rows[i] = (
            in_task / max(len(words), 1),
            min(in_task / 4, 1.0),
            len(context_words & task_words) / max(len(context_words), 1),
            len((words | context_words) & task_words) / max(len(task_words), 1),
            len(words & page_words) / max(len(words), 1),
            min(taken.get(candidate, 0) / 3, 1.0),
            float(candidate == last_action),
            i / max_actions,
            1.0,
        )
    return rows


class TextFeatures(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Hashed bag-of-words observations (and candidate features); see the module docstring.

    Args:
        env: An agentenvs env, usually wrapped in :class:`~wrappers.discrete.DiscreteActions`.
        num_features: Hashed columns per field.
        fields: Which of :data:`FIELDS` make up the ``"observation"`` vector, in order.
        ngram_range: Word n-grams hashed, ``(1, 1)`` or ``(1, 2)``.
        candidate_features: Make the observation a ``Dict`` with ``"candidates"`` and the
            mask (needs a ``Discrete`` action space, e.g. from ``DiscreteActions``).
        num_candidate_features: Hashed columns of each candidate's words.
        context_chars: Longest candidate context read from the observation.
        mask_key: The mask's key in the ``Dict`` observation.
        info_keys: Keep only these ``info`` keys (None: all), a key missing on a step
            given as 0. Replay buffers that store ``info`` per step (Tianshou's) need
            entries of one shape on every step; the contract's lists vary in length.

    Raises:
        TypeError, ValueError: naming the bad argument.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        num_features: int = 256,
        fields: Sequence[str] = ("observation", "task"),
        ngram_range: tuple[int, int] = (1, 1),
        candidate_features: bool = False,
        num_candidate_features: int = 64,
        context_chars: int = 160,
        mask_key: str = "action_mask",
        info_keys: Sequence[str] | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            num_features=num_features,
            fields=fields,
            ngram_range=ngram_range,
            candidate_features=candidate_features,
            num_candidate_features=num_candidate_features,
            context_chars=context_chars,
            mask_key=mask_key,
            info_keys=info_keys,
        )
        super().__init__(env)
        owner = type(self).__name__
        self.num_features = check_int(owner, "num_features", num_features, minimum=1)
        if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
            raise TypeError(f"{owner}: fields must be a non-empty sequence of {', '.join(FIELDS)}, got {fields!r}")
        self.fields = tuple(check_choice(owner, "fields", field, FIELDS) for field in fields)
        if len(set(self.fields)) != len(self.fields):
            raise ValueError(f"{owner}: fields must not repeat, got {fields!r}")
        ngram_range = tuple(ngram_range)  # type: ignore[assignment]
        if ngram_range not in ((1, 1), (1, 2)):
            raise ValueError(f"{owner}: ngram_range must be (1, 1) or (1, 2), got {ngram_range!r}")
        self.candidate_features = check_bool(owner, "candidate_features", candidate_features)
        self.num_candidate_features = check_int(owner, "num_candidate_features", num_candidate_features, minimum=1)
        self.context_chars = check_int(owner, "context_chars", context_chars, minimum=0)
        self.mask_key = check_str(owner, "mask_key", mask_key)
        if self.mask_key in ("observation", "candidates"):
            raise ValueError(f"{owner}: mask_key must differ from 'observation' and 'candidates', got {mask_key!r}")
        if info_keys is not None and (isinstance(info_keys, str) or not isinstance(info_keys, Sequence)):
            raise TypeError(f"{owner}: info_keys must be a sequence of strings or None, got {info_keys!r}")
        self.info_keys = None if info_keys is None else tuple(check_str(owner, "info_keys", key) for key in info_keys)
        action_space = env.action_space
        self.max_actions = int(action_space.n) if isinstance(action_space, spaces.Discrete) else 0
        if self.candidate_features and not self.max_actions:
            raise TypeError(
                f"{owner}: candidate_features=True needs a Discrete action space (wrap the env in "
                f"DiscreteActions first), got {action_space}"
            )
        self._vectorizer = self._hasher(self.num_features, ngram_range)
        self._candidate_vectorizer = self._hasher(self.num_candidate_features, (1, 1))
        vector = spaces.Box(0.0, 1.0, (len(self.fields) * self.num_features,), np.float32)
        self.candidate_dim = self.num_candidate_features + len(CROSS_FEATURES)
        if self.candidate_features:
            self.observation_space = spaces.Dict(
                {
                    "observation": vector,
                    "candidates": spaces.Box(0.0, 1.0, (self.max_actions, self.candidate_dim), np.float32),
                    self.mask_key: spaces.MultiBinary(self.max_actions),
                }
            )
        else:
            self.observation_space = vector
        self._taken: dict[str, int] = {}  # executed actions of the episode, in order, with counts

    @staticmethod
    def _hasher(num_features: int, ngram_range: tuple[int, int]) -> HashingVectorizer:
        try:  # imported here: `import wrappers` must not need scikit-learn
            from sklearn.feature_extraction.text import HashingVectorizer
        except ImportError as error:
            raise ImportError("TextFeatures needs scikit-learn: pip install scikit-learn") from error
        return HashingVectorizer(
            n_features=num_features,
            alternate_sign=False,
            norm="l2",
            token_pattern=_TOKEN_PATTERN,
            ngram_range=ngram_range,
            dtype=np.float32,
        )

    def action_masks(self) -> np.ndarray:
        """The mask of the :class:`~wrappers.discrete.DiscreteActions` below (bool, length ``N``), through
        any wrappers between: sb3-contrib's ``action_masks`` convention (``ActionMasker(env, lambda env:
        env.action_masks())``). Gymnasium wrappers do not forward methods, so this one does.

        Raises:
            AttributeError: where no wrapper below has ``action_masks`` (wrap the env in ``DiscreteActions``).
        """
        try:
            masks = self.env.get_wrapper_attr("action_masks")
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__}.action_masks: no wrapper below has action_masks; wrap the env in "
                "wrappers.DiscreteActions first"
            ) from None
        return np.asarray(masks(), dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._taken = {}
        return self._features(observation, info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        executed = str(info.get("action", ""))
        if executed:
            self._taken[executed] = self._taken.get(executed, 0) + 1
        features, info = self._features(observation, info)
        return features, reward, terminated, truncated, info

    def _kept(self, info: dict[str, Any]) -> dict[str, Any]:
        if self.info_keys is None:
            return info
        return {key: info.get(key, 0) for key in self.info_keys}

    def _features(self, observation: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        text = {
            "observation": str(observation),
            "task": str(info.get("task", "")),
            "action": str(info.get("action", "")),
            "history": " | ".join(self._taken),
        }
        hashed = self._vectorizer.transform([text[field] for field in self.fields]).toarray()
        vector = np.clip(hashed.reshape(-1), 0.0, 1.0).astype(np.float32)
        if not self.max_actions:
            return vector, self._kept(info)
        rows = self._candidate_rows(text, info)
        mask = np.asarray(info.get("action_mask", rows[:, -1]), dtype=np.int8)
        info = dict(info)
        info["candidate_features"] = rows
        if not self.candidate_features:
            return vector, self._kept(info)
        return {"observation": vector, "candidates": rows, self.mask_key: mask}, self._kept(info)

    def _candidate_rows(self, text: dict[str, str], info: dict[str, Any]) -> np.ndarray:
        candidates = info.get("candidate_actions")
        if candidates is None:
            candidates = info.get("admissible_actions") or []
        candidates = [str(candidate) for candidate in candidates][: self.max_actions]
        rows = np.zeros((self.max_actions, self.candidate_dim), dtype=np.float32)
        if not candidates:
            return rows
        observation, task = text["observation"], text["task"]
        contexts = candidate_contexts(candidates, observation, task, self.context_chars)
        hashed = self._candidate_vectorizer.transform(candidates).toarray()
        rows[: len(candidates), : self.num_candidate_features] = np.clip(hashed, 0.0, 1.0)
        rows[: len(candidates), self.num_candidate_features :] = cross_features(
            candidates,
            contexts,
            task=task,
            observation=observation,
            taken=self._taken,
            last_action=text["action"],
            max_actions=self.max_actions,
        )
        return rows
