"""The embedded procedural shop: schema, determinism, goals, near-duplicates, and scale."""

from __future__ import annotations

from collections import Counter

import pytest

from agentenvs.webshop.data import clean_products, product_prices, synthetic_goals
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.generator import generate_catalog
from agentenvs.webshop.reward import get_option_reward
from agentenvs.webshop.search import ProductSearch

RAW_KEYS = {
    "asin",
    "name",
    "category",
    "query",
    "product_category",
    "full_description",
    "small_description",
    "pricing",
    "customization_options",
    "images",
    "average_rating",
    "reviews",
}


def test_official_schema_and_determinism():
    catalog = generate_catalog(200, seed=4)
    assert catalog == generate_catalog(200, seed=4) and catalog != generate_catalog(200, seed=5)
    for record in catalog.raw_products:
        assert set(record) == RAW_KEYS and len(record["asin"]) == 10 and record["pricing"].startswith("$")
        assert "›" in record["product_category"] and record["small_description"]
    assert len({r["asin"] for r in catalog.raw_products}) == 200
    annotated = [a for a in catalog.annotations.values() if "instruction" in a]
    assert all(set(a["instruction_attributes"]) <= set(a["attributes"]) for a in annotated)
    with pytest.raises(ValueError, match="num_products"):
        generate_catalog(0)


def test_default_shop_has_enough_goals_and_near_duplicates():
    engine = WebShopEngine.generated(1000, seed=0, cache_index=False)
    assert len(engine.products) == 1000 and len(engine.goals) >= 1500
    per_query = Counter(p.query for p in engine.products.values())
    assert len(per_query) == 50 and min(per_query.values()) >= 5 and len(engine.products) / 50 == 20
    by_query: dict[str, list] = {}
    for p in engine.products.values():
        by_query.setdefault(p.query, []).append(p)
    near_duplicates = sum(
        any(
            q is not p and len(set(p.attributes) & set(q.attributes)) >= len(p.attributes) - 1
            for q in by_query[p.query]
        )
        for p in engine.products.values()
    )
    assert near_duplicates / len(engine.products) > 0.5  # families: same type, all attributes but one
    assert any(p.pricing[1:] for p in engine.products.values())  # some price ranges
    goals_with_bound = [g for g in engine.goals if g.price_upper < 1_000_000]
    assert len(goals_with_bound) / len(engine.goals) > 0.9
    assert all(engine.prices[g.asin] <= g.price_upper for g in engine.goals)
    # distractors: another product of the same type lacks one of the goal's attributes
    goal = engine.goals[0]
    same_type = [p for p in engine.products.values() if p.query == goal.query and p.asin != goal.asin]
    assert any(not set(goal.attributes) <= set(p.attributes) for p in same_type)


def test_every_goal_option_can_be_matched():
    """The original colour rule reduces an option to a colour it contains ("standard" -> "tan"),
    which makes such a goal unwinnable; the generator offers no such values."""
    engine = WebShopEngine.generated(1000, seed=0, cache_index=False)
    values = {(name, value) for p in engine.products.values() for name, vs in p.options.items() for value in vs}
    unmatchable = [(n, v) for n, v in values if get_option_reward([v], {n: v}) != (1.0, 1)]
    assert unmatchable == []
    assert get_option_reward(["standard"], {"size": "standard"}) == (0.0, 0)  # the quirk itself


@pytest.mark.slow
def test_scale_100k_products():
    catalog = generate_catalog(100_000, seed=1)
    products = clean_products(catalog.raw_products, catalog.annotations, with_reviews=True)
    assert len(products) == 100_000
    goals = synthetic_goals(products[:5000], product_prices(products[:5000]))
    assert len(goals) > 5000
    search = ProductSearch(products[:20_000], cache=False)
    assert products[123].asin in search.search(products[123].title)[:10]
