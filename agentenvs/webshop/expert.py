"""WebShop's expert: a scripted shopper that knows the goal (``WebShopEnv.expert_action``), the
reference policy for tests, benchmarks and SFT demonstrations.

It searches the goal instruction (or, with ``query="product"``, the instruction before its
option and price clauses: what a shopper types, and a far shorter response for a policy that
learns from it), pages through the results until the goal product shows
(at most through the top 50, whatever the page size), opens it, clicks each goal option not yet chosen
and buys. It scores 1.0 whenever search finds the goal product, so its success rate
measures how well search ranks the goal product in the top 50.

Example:
    >>> from agentenvs.webshop.engine import WebShopEngine
    >>> engine = WebShopEngine.generated(num_products=60, seed=0, cache_index=False)
    >>> session = engine.session(engine.goals[0])
    >>> while not session.done:
    ...     session.step(expert_action(session.goal, session.page))
    >>> session.reward.total
    1.0
"""

from __future__ import annotations

import re
from typing import Literal

from agentenvs.webshop.data import Goal
from agentenvs.webshop.pages import BACK_TO_SEARCH, BUY_NOW, NEXT_PAGE, PREV_PAGE, Page

MAX_RESULTS = 50
"""Search returns the top 50 (as in the original); the expert pages through them at most."""

QueryStyle = Literal["instruction", "product"]
QUERY_STYLES: tuple[QueryStyle, ...] = ("instruction", "product")

_CLAUSES = re.compile(r",? with [a-z][a-z ]*:|,? and price lower than")
"""Where a synthetic goal's option and price clauses begin ("with flavor name: …", "and price lower than …")."""


def search_query(goal: Goal, style: QueryStyle = "instruction") -> str:
    """What the expert searches: the whole instruction, or (``"product"``) the part before its clauses.

    An instruction without such clauses (e.g. a human-written one) is searched whole.

    >>> goal = Goal(asin="B0", category="", query="", name="", product_category="", attributes=[],
    ...             instruction_text="i need green tea that is fair trade with flavor name: sea salt, "
    ...             "and price lower than 70.00 dollars", price_upper=70.0, goal_options={})
    >>> search_query(goal, "product")
    'i need green tea that is fair trade'
    """
    if style == "instruction":
        return goal.instruction_text
    return _CLAUSES.split(goal.instruction_text, maxsplit=1)[0].strip() or goal.instruction_text


def _wanted_options(goal: Goal, page: Page) -> list[str]:
    """Goal option values this product offers and that are not chosen yet."""
    assert page.product is not None
    wanted = goal.goal_options.values() if isinstance(goal.goal_options, dict) else goal.goal_options
    offered = {value for values in page.product.options.values() for value in values}
    chosen = set(page.options.values())
    return [value for value in wanted if value in offered and value not in chosen]


def expert_action(goal: Goal, page: Page, query: QueryStyle = "instruction") -> str:
    """The expert's next action on ``page`` for ``goal`` (``query``: see :func:`search_query`)."""
    if page.kind == "search":
        return f"search[{search_query(goal, query)}]"
    if page.kind == "results":
        asins = [product.asin for product in page.products]
        if goal.asin in asins:
            return f"click[{goal.asin}]"
        if asins and page.page_number * len(asins) < min(page.total, MAX_RESULTS):
            return f"click[{NEXT_PAGE}]"
        return f"click[{asins[0]}]" if asins else f"click[{BACK_TO_SEARCH}]"
    if page.kind == "sub":
        return f"click[{PREV_PAGE}]"
    if page.kind == "item":
        missing = _wanted_options(goal, page)
        return f"click[{missing[0]}]" if missing else f"click[{BUY_NOW}]"
    raise ValueError("the episode is over: nothing to do on the done page")
