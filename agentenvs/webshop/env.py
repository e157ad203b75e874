"""WebShop-v0: shop for a product that fits an instruction (Yao et al., 2022).

Actions are the original text env's: ``search[query]`` and ``click[button]`` (buttons,
product ASINs and option values as shown; case-insensitive). ``info["admissible_actions"]``
lists them as the original's available actions do: ``search[<query>]`` where the page
has a search bar, and ``click[...]`` for every clickable; as in the original, a search is
also accepted from other pages. An action the page does not accept is reported
(``action_valid=False``, ``info["error"]``) and leaves the page as it was.

``click[Buy Now]`` ends the episode with the original's reward in [0, 1]; ``won`` is
``reward == 1.0``, and ``info`` carries ``score`` (the raw reward) and ``reward_parts``
(type, attribute, option and price parts with their weights).

Observations: ``"text"`` (default: the page's visible text joined by ``" [SEP] "``),
``"text_rich"`` (a piece a line, clickables marked ``[button] … [button_]``),
``"text_compact"`` (ours: a line per part of the page, pieces joined by ``" | "``, chosen
options marked and the option groups still unchosen named; about 30 % fewer tokens than
``text``) or ``"html"``.

With ``privileged=True`` (off by default), ``info["privileged"]`` (:class:`WebShopPrivileged`,
the same at reset and every step of an episode; never in an observation) holds the goal the
reward is computed against: the target product's ASIN, the goal attributes, the goal option
values and the price bound.

Data: ``dataset="generated"`` (default: the embedded 1,000-product shop,
:mod:`agentenvs.webshop.generator`) or ``"official"`` (the release's files from
``data_path`` or ``$AGENTENVS_WEBSHOP_DATA``; ``goal_source="human"`` reads
``items_human_ins.json``). Task ids are goal positions in the original's shuffled goal
list; ``split`` picks the original's test (first 500), eval (next 1,000) or train (rest).

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("WebShop-v0", num_products=100, split="all", privileged=True)
    >>> observation, info = env.reset(seed=0)
    >>> observation.startswith("WebShop [SEP] Instruction:")
    True
    >>> info["admissible_actions"]
    ['search[<query>]']
    >>> sorted(info["privileged"])
    ['goal_attributes', 'goal_options', 'price_upper', 'target_asin']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypedDict

from agentenvs.core.checks import check_bool, check_choice, check_int, check_path
from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.paths import locate_data
from agentenvs.webshop.data import (
    ATTRIBUTE_FILE_FULL,
    ATTRIBUTE_FILE_SMALL,
    DATA_ENV_VAR,
    HUMAN_INSTRUCTION_FILE,
    PRODUCT_FILE_FULL,
    PRODUCT_FILE_SMALL,
    Goal,
    shuffle_goals,
    split_range,
)
from agentenvs.webshop.engine import MAX_PRODUCTS, InvalidAction, ShopSession, WebShopEngine
from agentenvs.webshop.expert import QUERY_STYLES, QueryStyle, expert_action
from agentenvs.webshop.pages import CLICKABLE_KINDS, Page, page_html, page_text, page_text_compact, page_text_rich

ObservationMode = Literal["text", "text_rich", "text_compact", "html"]
_RENDERERS = {"text": page_text, "text_rich": page_text_rich, "text_compact": page_text_compact, "html": page_html}


class WebShopPrivileged(TypedDict):
    """``info["privileged"]`` of WebShop-v0 (the episode's :class:`~agentenvs.webshop.data.Goal`).

    Attributes:
        target_asin: The ASIN of the product the goal was made from (buying another
            product can still earn full reward).
        goal_attributes: The attributes the reward looks for in the bought product.
        goal_options: The option values the goal asks for (for synthetic goals the
            values of ``Goal.goal_options``, whose names are in the instruction text).
        price_upper: The price bound of the goal (a float; ``0.0`` and below: none).
    """

    target_asin: str
    goal_attributes: list[str]
    goal_options: list[str]
    price_upper: float


def goal_privileged(goal: Goal) -> WebShopPrivileged:
    """The privileged dict of ``goal`` (JSON values only; see :class:`WebShopPrivileged`)."""
    options = goal.goal_options.values() if isinstance(goal.goal_options, dict) else goal.goal_options
    return {
        "target_asin": str(goal.asin),
        "goal_attributes": [str(attribute) for attribute in goal.attributes],
        "goal_options": [str(option) for option in options],
        "price_upper": float(goal.price_upper),
    }


class WebShopEnv(TextEnv):
    """Online shopping from an instruction (see the module docstring).

    Args:
        dataset: ``"generated"`` or ``"official"``.
        data_path: Folder with the official files (else ``$AGENTENVS_WEBSHOP_DATA``).
        product_file: Official product file (default: ``items_shuffle_1000.json`` in
            ``data_path``, else ``items_shuffle.json``).
        attribute_file: Official synthetic-goal file (default: the matching ``items_ins_v2``).
        goal_source: ``"synthetic"`` or ``"human"`` (official data only).
        num_products: Products to use (generated default 1,000; official default all).
        split: ``"train"``, ``"eval"``, ``"test"`` or ``"all"``.
        observation_mode: ``"text"``, ``"text_rich"``, ``"text_compact"`` or ``"html"``.
        max_turns: Steps before truncation.
        action_format: How raw actions are projected (see :mod:`agentenvs.core.parsers`).
        generator_seed: Seed of the generated shop, prices and goal price bounds.
        noun_tagger: ``"rules"`` (default) or ``"spacy"`` (needs spaCy and a model).
        show_attrs: Whether item pages offer the ``Attributes`` sub-page.
        results_per_page: Products per results page (the original shows 10; fewer make
            shorter observations, e.g. for small models on a CPU). Search still ranks the top 50.
        max_goal_options: Keep only the split's goals that ask for at most this many options
            (None: all; the generated shop's goals ask for 0–2, most for 2). Task ids stay goal
            positions, so a task means the same goal with or without the filter.
        expert_query: What :meth:`expert_action` searches: ``"instruction"`` (the whole goal
            instruction) or ``"product"`` (the instruction before its option and price clauses,
            a shorter query that search still ranks the goal product for; see
            :func:`agentenvs.webshop.expert.search_query`).
        cache_index: Whether to cache the search index on disk.
        render_mode: None, ``"ansi"`` or ``"human"``.
        privileged: Put ``info["privileged"]`` in infos (see :class:`~agentenvs.core.env.TextEnv`).
    """

    held_out_split = "test"
    split_roles = MappingProxyType(
        {
            "train": "training set: RL rollouts and the expert warm start",
            "test": "tuning set: where trainers evaluate by default; the agents' WebShop recipe was chosen here",
            "eval": "report set: the recipe evaluates here and the README's figures come from it; no recipe "
            "choice looked at it",
            "all": "every goal",
        }
    )
    action_kinds = ("search", *CLICKABLE_KINDS)

    def __init__(
        self,
        *,
        dataset: Literal["generated", "official"] = "generated",
        data_path: str | os.PathLike[str] | None = None,
        product_file: str | os.PathLike[str] | None = None,
        attribute_file: str | os.PathLike[str] | None = None,
        goal_source: Literal["synthetic", "human"] = "synthetic",
        num_products: int | None = None,
        split: Literal["train", "eval", "test", "all"] = "train",
        observation_mode: ObservationMode = "text",
        max_turns: int = 15,
        action_format: str = "raw",
        generator_seed: int = 0,
        noun_tagger: str = "rules",
        show_attrs: bool = False,
        results_per_page: int = 10,
        max_goal_options: int | None = None,
        expert_query: QueryStyle = "instruction",
        cache_index: bool = True,
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        super().__init__(
            max_turns=max_turns, action_format=action_format, render_mode=render_mode, privileged=privileged
        )
        owner = type(self).__name__
        dataset = check_choice(owner, "dataset", dataset, ("generated", "official"))
        files = {
            name: check_path(owner, name, value)
            for name, value in (
                ("data_path", data_path),
                ("product_file", product_file),
                ("attribute_file", attribute_file),
            )
        }
        goal_source = check_choice(owner, "goal_source", goal_source, ("synthetic", "human"))
        num_products = check_int(owner, "num_products", num_products, minimum=1, maximum=MAX_PRODUCTS, optional=True)
        split = check_choice(owner, "split", split, ("train", "eval", "test", "all"))
        self.observation_mode = check_choice(owner, "observation_mode", observation_mode, tuple(_RENDERERS))
        generator_seed = check_int(owner, "generator_seed", generator_seed, minimum=0)
        noun_tagger = check_choice(owner, "noun_tagger", noun_tagger, ("rules", "spacy"))
        show_attrs = check_bool(owner, "show_attrs", show_attrs)
        self.results_per_page = check_int(owner, "results_per_page", results_per_page, minimum=1, maximum=50)
        max_goal_options = check_int(owner, "max_goal_options", max_goal_options, minimum=0, optional=True)
        self.expert_query: QueryStyle = check_choice(owner, "expert_query", expert_query, QUERY_STYLES)
        cache_index = check_bool(owner, "cache_index", cache_index)
        self._render = _RENDERERS[self.observation_mode]
        if dataset == "generated":
            # The generated shop reads no files: a path given with it is a mistake, not a no-op.
            ignored = [name for name, value in files.items() if value is not None]
            ignored += ["goal_source='human'"] if goal_source == "human" else []
            if ignored:
                raise ValueError(
                    f"{owner}: {', '.join(ignored)} need dataset='official'; "
                    "dataset='generated' is built in and reads no files"
                )
            self.engine = _generated_engine(num_products or 1000, generator_seed, cache_index, noun_tagger, show_attrs)
        else:
            paths = official_files(files["data_path"], files["product_file"], files["attribute_file"], goal_source)
            self.engine = _official_engine(*paths, num_products, generator_seed, cache_index, noun_tagger, show_attrs)
        # What builds the catalogue: a snapshot restores only into an env with the same one.
        self._scope = repr(
            (
                dataset,
                *([] if dataset == "generated" else [os.fspath(path) if path is not None else None for path in paths]),
                goal_source,
                num_products,
                generator_seed,
                noun_tagger,
                show_attrs,
            )
        )
        self.goals: list[Goal] = shuffle_goals(self.engine.goals)
        positions = [
            position
            for position in split_range(split, len(self.goals))
            if max_goal_options is None or len(self.goals[position].goal_options) <= max_goal_options
        ]
        if not positions:
            wanted = "" if max_goal_options is None else f" with at most {max_goal_options} options"
            raise ValueError(f"{owner}: split {split!r} has no goals{wanted} ({len(self.goals)} goals in all)")
        self._task_ids = tuple(str(i) for i in positions)
        self._task_set = frozenset(self._task_ids)
        self.session: ShopSession | None = None
        self._episode_privileged: WebShopPrivileged | None = None

    @property
    def task_ids(self) -> Sequence[str]:
        return self._task_ids

    def _has_task(self, task_id: str) -> bool:
        return task_id in self._task_set

    def _task_text(self, task_id: str) -> str:
        return self.goals[int(task_id)].instruction_text

    @property
    def goal(self) -> Goal:
        """The current episode's goal (for the expert and evaluation)."""
        if self.task_id is None:
            raise RuntimeError("call reset() first")
        return self.goals[int(self.task_id)]

    @property
    def page(self) -> Page:
        """The current page."""
        if self.session is None:
            raise RuntimeError("call reset() first")
        return self.session.page

    def expert_action(self) -> str | None:
        """The goal-aware expert's next action (:func:`agentenvs.webshop.expert.expert_action`)."""
        if self._done or self.session is None:
            return None
        return expert_action(self.goal, self.page, self.expert_query)

    def action_kind(self, action: str) -> str | None:
        """``search``, or the kind of what ``action`` clicks (``product``, ``option``, ``buy``, …: :data:`CLICKABLE_KINDS`)."""
        return None if self._done or self.session is None else self.session.action_kind(action)

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        goal = self.goals[int(task_id)]
        self.session = self.engine.session(goal, session_id=f"task_{task_id}", results_per_page=self.results_per_page)
        self._episode_privileged = goal_privileged(goal)
        return self._render(self.session.page), {"page": "search"}

    def _privileged(self) -> Mapping[str, Any]:
        return self._episode_privileged or {}

    def _snapshot_scope(self) -> str:
        return self._scope

    def _admissible_actions(self) -> list[str] | None:
        return None if self.session is None else self.session.available_actions()

    def _act(self, action: str) -> Outcome:
        assert self.session is not None
        try:
            self.session.step(action)
        except InvalidAction as error:
            return Outcome(
                observation=self._render(self.session.page),
                action_valid=False,
                info={"error": str(error), "page": self.session.page.kind},
            )
        info: dict[str, Any] = {"page": self.session.page.kind}
        if not self.session.done:
            return Outcome(observation=self._render(self.session.page), info=info)
        reward = self.session.reward
        assert reward is not None
        info.update(
            score=reward.total,
            reward_parts=reward.as_info(),
            purchased_asin=self.session.asin,
            purchased_options=dict(self.session.options),
        )
        return Outcome(
            observation=self._render(self.session.page),
            reward=reward.total,
            terminated=True,
            won=reward.total == 1.0,
            info=info,
        )


def official_files(
    data_path: str | os.PathLike[str] | None,
    product_file: str | os.PathLike[str] | None,
    attribute_file: str | os.PathLike[str] | None,
    goal_source: str,
) -> tuple[Path, Path, Path | None]:
    """The official product, attribute and (for human goals) instruction files to load.

    Raises:
        FileNotFoundError: naming the file and how to give the data folder.
    """

    def locate(explicit: str | os.PathLike[str] | None, names: tuple[str, ...], what: str, argument: str = "") -> Path:
        return locate_data(
            what,
            explicit=explicit,
            folder=data_path,
            env_var=DATA_ENV_VAR,
            names=names,
            owner="WebShop (dataset='official')",
            hint=f"(or pass {argument}=...)" if argument else "",
        )

    products = locate(product_file, (PRODUCT_FILE_SMALL, PRODUCT_FILE_FULL), "product file", "product_file")
    small = products.name == PRODUCT_FILE_SMALL
    attribute_names = (
        (ATTRIBUTE_FILE_SMALL, ATTRIBUTE_FILE_FULL) if small else (ATTRIBUTE_FILE_FULL, ATTRIBUTE_FILE_SMALL)
    )
    attributes = locate(attribute_file, attribute_names, "attribute file", "attribute_file")
    human = None
    if goal_source == "human":
        human = locate(None, (HUMAN_INSTRUCTION_FILE,), "human instruction file")
    return products, attributes, human


@lru_cache(maxsize=4)
def _generated_engine(
    num_products: int, seed: int, cache_index: bool, noun_tagger: str, show_attrs: bool
) -> WebShopEngine:
    """One engine per configuration per process: vector envs share it instead of re-indexing."""
    return WebShopEngine.generated(
        num_products, seed, cache_index=cache_index, noun_tagger=noun_tagger, show_attrs=show_attrs
    )


@lru_cache(maxsize=2)
def _official_engine(
    product_file: Path,
    attribute_file: Path,
    human_file: Path | None,
    num_products: int | None,
    seed: int,
    cache_index: bool,
    noun_tagger: str,
    show_attrs: bool,
) -> WebShopEngine:
    return WebShopEngine.from_files(
        product_file,
        attribute_file,
        human_file,
        num_products,
        seed,
        cache_index=cache_index,
        noun_tagger=noun_tagger,
        show_attrs=show_attrs,
    )
