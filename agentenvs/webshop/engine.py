"""The shop's engine: catalog, search, pages and purchases, and one shopper's session.

:class:`WebShopEngine` holds what all shoppers share (products, prices, goals, the search
index) and builds pages; :class:`ShopSession` is one shopper moving through them with the
original text env's rules:

- ``search[query]`` (from any page, as in the original) shows results page 1 for the
  lower-cased query and forgets the chosen product and options;
- ``click[button]`` (case-insensitive) on a clickable of the current page:
  ``Back to Search`` → search page; ``Next >`` / ``< Prev`` on results → next/previous
  10 of the top 50; a product ASIN → its item page; an option value → chosen (one per
  option group); ``Description``/``Features``/``Reviews`` → sub-page; ``< Prev`` on a
  sub-page → the item page, on an item page → the results page; ``Buy Now`` → the
  purchase is scored and the session is done.

Anything else raises :class:`InvalidAction` and changes nothing.

Example:
    >>> engine = WebShopEngine.generated(num_products=60, seed=0, cache_index=False)
    >>> session = engine.session(engine.goals[0])
    >>> session.search(engine.goals[0].instruction_text)
    >>> session.page.kind, session.page.page_number
    ('results', 1)
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentenvs.core.checks import check_int
from agentenvs.webshop.data import (
    Goal,
    Product,
    clean_products,
    load_json_object,
    load_products,
    product_prices,
    synthetic_goals,
)
from agentenvs.webshop.data import (
    human_goals as build_human_goals,
)
from agentenvs.webshop.generator import generate_catalog
from agentenvs.webshop.nouns import NounExtractor, make_noun_extractor
from agentenvs.webshop.pages import (
    PRODUCT_WINDOW,
    SUB_PAGES,
    Clickable,
    Page,
    clickables,
)
from agentenvs.webshop.reward import Reward, get_reward
from agentenvs.webshop.search import SEARCH_RETURN_N, ProductSearch

MAX_QUERY_CHARS = 500
MAX_PRODUCTS = 1_200_000
"""The most products a shop holds: the official catalogue's size (1,181,436). A caller's size is
bounded so that a typo cannot grow a shop until the kernel kills it."""
_ACTION = re.compile(r"^(search|click)\[(.*)\]$", re.DOTALL)


class InvalidAction(ValueError):
    """An action the current page does not accept (the message says why)."""


def parse_action(action: str) -> tuple[str, str]:
    """``("search" | "click", argument)`` of ``search[...]`` / ``click[...]``.

    Raises:
        InvalidAction: for anything else.

    >>> parse_action("click[Buy Now]")
    ('click', 'Buy Now')
    """
    match = _ACTION.match(action.strip())
    if match is None:
        raise InvalidAction(f"Unknown action {action[:80]!r}: use search[query] or click[button].")
    name, argument = match.groups()
    if not argument.strip():
        raise InvalidAction(f"{name}[...] needs a non-empty argument.")
    return name, argument


class WebShopEngine:
    """Products, prices, goals and search, shared by every session.

    Args:
        products: The catalog.
        goals: The goals sessions can be given.
        prices: ASIN -> the price a purchase pays.
        cache_index: Whether to cache the search index on disk.
        noun_tagger: ``"rules"`` or ``"spacy"`` (see :mod:`agentenvs.webshop.nouns`).
        show_attrs: Whether item pages offer the ``Attributes`` sub-page.
        search_cache_size: How many recent queries' results to keep.
    """

    def __init__(
        self,
        products: Sequence[Product],
        goals: Sequence[Goal],
        prices: dict[str, float],
        *,
        cache_index: bool = True,
        noun_tagger: str = "rules",
        show_attrs: bool = False,
        search_cache_size: int = 4096,
    ) -> None:
        if not products:
            raise ValueError("WebShopEngine needs at least one product")
        self.products = {product.asin: product for product in products}
        self.goals = list(goals)
        self.prices = prices
        self.show_attrs = show_attrs
        self.nouns: NounExtractor = make_noun_extractor(noun_tagger)
        self.index = ProductSearch(list(self.products.values()), cache=cache_index)
        self._search_cache: OrderedDict[str, list[str]] = OrderedDict()
        self._search_cache_size = search_cache_size

    @classmethod
    def generated(cls, num_products: int = 1000, seed: int = 0, **kwargs) -> WebShopEngine:
        """The embedded procedural shop (synthetic goals).

        Raises:
            ValueError: ``num_products`` outside [1, :data:`MAX_PRODUCTS`].
        """
        num_products = check_int(
            "WebShopEngine.generated", "num_products", num_products, minimum=1, maximum=MAX_PRODUCTS
        )
        catalog = generate_catalog(num_products, seed)
        products = clean_products(catalog.raw_products, catalog.annotations, with_reviews=True)
        prices = product_prices(products, seed)
        return cls(products, synthetic_goals(products, prices, seed), prices, **kwargs)

    @classmethod
    def from_files(
        cls,
        product_file: str | os.PathLike[str],
        attribute_file: str | os.PathLike[str],
        human_instruction_file: str | os.PathLike[str] | None = None,
        num_products: int | None = None,
        seed: int = 0,
        **kwargs,
    ) -> WebShopEngine:
        """The official files; human goals when ``human_instruction_file`` is given, else synthetic.

        Raises:
            ValueError: ``num_products`` outside [1, :data:`MAX_PRODUCTS`] (None: every product in the file).
        """
        num_products = check_int(
            "WebShopEngine.from_files", "num_products", num_products, minimum=1, maximum=MAX_PRODUCTS, optional=True
        )
        products = load_products(product_file, attribute_file, num_products)
        prices = product_prices(products, seed)
        if human_instruction_file is not None:
            goals = build_human_goals(products, load_json_object(human_instruction_file), prices, seed)
        else:
            goals = synthetic_goals(products, prices, seed)
        return cls(products, goals, prices, **kwargs)

    # -- search and pages -----------------------------------------------------------------
    def top_asins(self, keywords: str) -> list[str]:
        """The top-50 ASINs for ``keywords`` (recent queries are cached)."""
        cached = self._search_cache.get(keywords)
        if cached is not None:
            self._search_cache.move_to_end(keywords)
            return cached
        asins = self.index.search(keywords, SEARCH_RETURN_N) if keywords.strip() else []
        self._search_cache[keywords] = asins
        if len(self._search_cache) > self._search_cache_size:
            self._search_cache.popitem(last=False)
        return asins

    def product(self, asin: str) -> Product:
        """The product ``asin`` (KeyError naming it when unknown)."""
        try:
            return self.products[asin]
        except KeyError:
            raise KeyError(f"unknown product {asin!r}") from None

    def results_page(
        self,
        instruction: str,
        keywords: str,
        page_number: int,
        session_id: str = "fixed",
        results_per_page: int = PRODUCT_WINDOW,
    ) -> Page:
        asins = self.top_asins(keywords)
        first = (page_number - 1) * results_per_page
        window = asins[first : first + results_per_page] if page_number >= 1 else []
        return Page(
            kind="results",
            instruction=instruction,
            session_id=session_id,
            keywords=keywords,
            page_number=page_number,
            total=len(asins),
            products=[self.products[a] for a in window],
        )

    def item_page(
        self,
        instruction: str,
        asin: str,
        keywords: str,
        page_number: int,
        options: dict[str, str],
        session_id: str = "fixed",
        sub_page: str = "",
    ) -> Page:
        return Page(
            kind="sub" if sub_page else "item",
            instruction=instruction,
            session_id=session_id,
            keywords=keywords,
            page_number=page_number,
            product=self.product(asin),
            options=dict(options),
            sub_page=sub_page,
            show_attrs=self.show_attrs,
        )

    def purchase(self, goal: Goal, asin: str, options: dict[str, str]) -> Reward:
        """The reward for buying ``asin`` with ``options`` against ``goal``."""
        return get_reward(self.product(asin), goal, self.prices[asin], options, self.nouns)

    def session(self, goal: Goal, session_id: str = "fixed", results_per_page: int = PRODUCT_WINDOW) -> ShopSession:
        """A new shopper on the search page."""
        return ShopSession(self, goal, session_id, results_per_page=results_per_page)


@dataclass
class ShopSession:
    """One shopper's state (see the module docstring for the rules)."""

    engine: WebShopEngine
    goal: Goal
    session_id: str = "fixed"
    results_per_page: int = PRODUCT_WINDOW
    keywords: str = ""
    page_number: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    done: bool = False
    reward: Reward | None = None
    page: Page = field(init=False)

    def __post_init__(self) -> None:
        self.page = Page(kind="search", instruction=self.goal.instruction_text, session_id=self.session_id)

    @property
    def clickables(self) -> dict[str, Clickable]:
        """What can be clicked now, keyed by lower-cased text."""
        return {} if self.done else clickables(self.page)

    def action_kind(self, action: str) -> str | None:
        """``search``, or the :class:`Clickable` kind ``action`` would click here; None where :meth:`step` would refuse it.

        Nothing changes (an over-long or empty query counts as ``search``: the kind is the action's, not its outcome).
        """
        if self.done:
            return None
        try:
            name, argument = parse_action(action)
        except InvalidAction:
            return None
        if name == "search":
            return "search"
        clickable = self.clickables.get(argument.strip().lower())
        return None if clickable is None else clickable.kind

    def available_actions(self) -> list[str]:
        """``search[<query>]`` on the search page and ``click[...]`` for each clickable."""
        if self.done:
            return []
        actions = ["search[<query>]"] if self.page.kind == "search" else []
        return actions + [f"click[{c.text}]" for c in self.clickables.values()]

    def step(self, action: str) -> None:
        """Executes ``search[...]`` or ``click[...]`` (raises :class:`InvalidAction`)."""
        name, argument = parse_action(action)
        if name == "search":
            self.search(argument)
        else:
            self.click(argument)

    def search(self, query: str) -> None:
        """Shows results page 1 for ``query`` (lower-cased, as in the original)."""
        if self.done:
            raise InvalidAction("The purchase is done.")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidAction(f"The query is longer than {MAX_QUERY_CHARS} characters.")
        self.keywords = " ".join(query.lower().split())
        if not self.keywords:
            raise InvalidAction("search[...] needs a non-empty query.")
        self._show_results(1)

    def click(self, button: str) -> None:
        """Clicks the clickable shown as ``button`` (case-insensitive)."""
        if self.done:
            raise InvalidAction("The purchase is done.")
        clickable = self.clickables.get(button.strip().lower())
        if clickable is None:
            raise InvalidAction(f"There is no {button[:80]!r} to click on this page.")
        kind, instruction = clickable.kind, self.goal.instruction_text
        if kind == "back":
            self.keywords, self.page_number, self.asin, self.options = "", 1, None, {}
            self.visited = set()
            self.page = Page(kind="search", instruction=instruction, session_id=self.session_id)
        elif kind == "next":
            self._show_results(self.page_number + 1)
        elif kind == "prev" and self.page.kind == "results":
            self._show_results(self.page_number - 1)
        elif kind == "prev" and self.page.kind == "item":
            self._show_results(self.page_number)
        elif kind in ("prev", "product", "option"):
            if kind == "product":
                self.asin = clickable.text
                self.visited.add(self.asin)
            elif kind == "option":
                self.options[clickable.option_name] = clickable.text
            self._show_item()
        elif kind == "sub":
            self._show_item(sub_page=next(s for s in SUB_PAGES if s.lower() == clickable.text.lower()))
        elif kind == "buy":
            assert self.asin is not None
            self.reward = self.engine.purchase(self.goal, self.asin, self.options)
            self.done = True
            self.page = Page(
                kind="done",
                instruction=instruction,
                session_id=self.session_id,
                reward=self.reward.total,
                reward_info=self.reward.as_info(),
            )

    def _show_results(self, page_number: int) -> None:
        self.page_number, self.asin, self.options = page_number, None, {}
        self.page = self.engine.results_page(
            self.goal.instruction_text, self.keywords, page_number, self.session_id, self.results_per_page
        )
        self.page.visited = frozenset(self.visited)

    def _show_item(self, sub_page: str = "") -> None:
        assert self.asin is not None
        self.page = self.engine.item_page(
            self.goal.instruction_text,
            self.asin,
            self.keywords,
            self.page_number,
            self.options,
            self.session_id,
            sub_page,
        )
        self.page.visited = frozenset(self.visited)
