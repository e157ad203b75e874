"""The rule-based noun tagger, and how well the total reward agrees with a noun-tagged reference."""

from __future__ import annotations

import random

import pytest

from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.nouns import is_noun, make_noun_extractor, title_nouns, tokenize
from agentenvs.webshop.reward import get_reward
from tests.agentenvs.webshop.noun_reference import reference_nouns


def test_tokenize_keeps_hyphens_and_decimals():
    assert tokenize("T-Shirt, 16.9 Fl Oz (Pack of 2)") == [
        "t-shirt",
        ",",
        "16.9",
        "fl",
        "oz",
        "(",
        "pack",
        "of",
        "2",
        ")",
    ]


@pytest.mark.parametrize(
    ("token", "noun"),
    [
        ("shampoo", True),
        ("the", False),
        ("12", False),
        ("3.4oz", False),
        ("2-pack", False),
        ("washable", False),
        ("waterproof", False),
        ("natural", False),
        ("quickly", False),
        ("table", True),
        ("bottle", True),
        ("plastic", True),
        ("sulfate-free", False),
        (",", False),
        ("women", True),
    ],
)
def test_is_noun(token, noun):
    assert is_noun(token) is noun


def test_extractor_choice():
    assert make_noun_extractor("rules") is title_nouns
    with pytest.raises(ValueError, match="noun tagger"):
        make_noun_extractor("magic")


def reward_agreement(engine: WebShopEngine, num_goals: int, seed: int = 0) -> tuple[float, float, int]:
    """Share of purchases whose total reward is equal under both taggers, mean |difference|, cases."""
    rng = random.Random(seed)
    by_query: dict[str, list] = {}
    for product in engine.products.values():
        by_query.setdefault(product.query, []).append(product)
    products = list(engine.products.values())
    equal, total_difference, cases = 0, 0.0, 0
    for goal in rng.sample(engine.goals, num_goals):
        candidates = rng.sample(by_query[goal.query], min(3, len(by_query[goal.query]))) + rng.sample(products, 3)
        for product in candidates:
            options = {name: values[0] for name, values in product.options.items()}
            price = engine.prices[product.asin]
            ours = get_reward(product, goal, price, options, nouns=title_nouns).total
            reference = get_reward(product, goal, price, options, nouns=reference_nouns).total
            equal += ours == reference
            total_difference += abs(ours - reference)
            cases += 1
    return equal / cases, total_difference / cases, cases


def test_total_reward_agrees_with_the_noun_tagged_reference():
    engine = WebShopEngine.generated(num_products=1000, seed=0, cache_index=False)
    agreement, mean_difference, cases = reward_agreement(engine, num_goals=300)
    print(
        f"reward agreement with the reference tagger: {agreement:.4f} ({cases} cases), mean |diff| {mean_difference:.4f}"
    )
    assert agreement >= 0.9 and mean_difference <= 0.05
