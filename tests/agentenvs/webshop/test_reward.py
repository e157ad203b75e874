"""Every part of the reward on hand-made cases (values computed by hand from the original's rules)."""

from __future__ import annotations

import pytest

from agentenvs.webshop.data import Goal, Product
from agentenvs.webshop.reward import (
    fuzzy_match,
    get_attribute_reward,
    get_option_reward,
    get_reward,
    get_type_reward,
    normalize_color,
)


def product(**overrides) -> Product:
    fields = dict(
        asin="B1",
        title="Lavender Shampoo Bottle",
        category="beauty",
        query="shampoo",
        product_category="Beauty › Hair Care › Shampoo",
        pricing=(10.0,),
        price_tag="$10.0",
        options={"size": ["8 oz", "12 oz"], "color": ["navy blue", "red"]},
        attributes=["sulfate free", "argan oil"],
        bullet_points=["Great for dry hair", "Made with TEA TREE"],
        description="A gentle, paraben free formula.",
    )
    fields.update(overrides)
    return Product(**fields)


def goal(**overrides) -> Goal:
    fields = dict(
        asin="B1",
        category="beauty",
        query="shampoo",
        name="Lavender Shampoo Bottle",
        product_category="Beauty › Hair Care › Shampoo",
        instruction_text="i need shampoo",
        attributes=["sulfate free"],
        price_upper=20.0,
        goal_options={"size": "12 oz"},
    )
    fields.update(overrides)
    return Goal(**fields)


def fixed_nouns(mapping):
    return lambda text: mapping[text]


# -- type reward ----------------------------------------------------------------------------
def test_type_reward_all_match():
    r = get_type_reward(product(), goal())
    assert (r.r_type, r.query_match, r.category_match, r.title_score) == (1.0, True, True, 1.0)


def test_type_reward_category_needs_two_shared_levels():
    assert get_type_reward(product(product_category="Beauty › Skin › Lotion"), goal()).category_match is False
    assert get_type_reward(product(product_category="Hair Care › X ›  Shampoo "), goal()).category_match is True


@pytest.mark.parametrize(
    ("bought", "desired", "query", "category", "expected_score", "expected_r_type"),
    [
        (["a", "b"], ["a", "b", "c", "d"], "x", "X › Y", 0.5, 1.0),  # title overlap > 0.2 is a match
        (["a"], ["a", "b", "c", "d", "e"], "x", "X › Y", 0.2, 0.5),  # exactly 0.2: no match -> 0.5
        (["a"], ["a", "b", "c", "d", "e"], "shampoo", "X › Y", 0.2, 1.0),  # query match
        (["a"], list("abcdefghijk"), "shampoo", "X › Y", 1 / 11, 0.1),  # < 0.1 -> 0.1 even with a match
        (["z"], ["a", "b"], "shampoo", "Beauty › Hair Care", 0.0, 0.0),  # no overlap -> 0
        (["z"], [], "x", "X › Y", 0.2, 0.5),  # no goal nouns counts as 0.2
    ],
)
def test_type_reward_title_score_thresholds(bought, desired, query, category, expected_score, expected_r_type):
    nouns = fixed_nouns({"bought": bought, "desired": desired})
    r = get_type_reward(product(title="bought", query=query, product_category=category), goal(name="desired"), nouns)
    assert r.title_score == pytest.approx(expected_score)
    assert r.r_type == expected_r_type


# -- attribute reward -----------------------------------------------------------------------
def test_attribute_reward_fuzzy_and_text_matches():
    wanted = ["Sulfate-Free", "argan oils", "tea tree", "paraben free", "dry hair", "vegan"]
    # fuzzy: "sulfate free" (100), "argan oil" vs "argan oils" (token-set 95);
    # verbatim: "tea tree" in bullets (lower-cased), "paraben free" in description, "dry hair" in bullets
    share, matches = get_attribute_reward(product(), goal(attributes=wanted))
    assert matches == 5 and share == pytest.approx(5 / 6)
    assert fuzzy_match("argan oil", "argan oils") == 95


def test_attribute_reward_fuzzy_threshold():
    assert fuzzy_match("slim fitting", "slim fit") == 80  # below the threshold, and not in the text
    assert get_attribute_reward(product(attributes=["slim fitting"]), goal(attributes=["slim fit"])) == (0.0, 0)
    assert fuzzy_match("machine washable", "machine wash") == 86  # just above
    assert get_attribute_reward(product(attributes=["machine washable"]), goal(attributes=["machine wash"])) == (1.0, 1)


# -- option reward --------------------------------------------------------------------------
def test_normalize_color():
    assert normalize_color("navy blue") == "blue"  # first colour in the original's order
    assert normalize_color("dark grey") == "dark"
    assert normalize_color("x-large") == "x-large"
    assert normalize_color(("color", "red")) == "red"  # a (name, value) pair: equality per part
    assert normalize_color(("color", "light red")) == ("color", "light red")


def test_option_reward_synthetic_dict_goal():
    assert get_option_reward(["12 oz", "red"], {"size": "12 oz", "color": "red"}) == (1.0, 2)
    assert get_option_reward(["8 oz"], {"size": "12 oz"}) == (0.0, 0)
    # colour normalisation: "navy blue" and "light blue" both reduce to blue
    assert get_option_reward(["navy blue"], {"color": "light blue"}) == (1.0, 1)


def test_option_reward_human_list_goal_and_no_options():
    assert get_option_reward(["navy | red", "x-large"], ["navy", "x-large", "cotton"]) == (pytest.approx(2 / 3), 2)
    assert get_option_reward(["red"], []) == (None, 0)
    assert get_option_reward([], ["red"]) == (0.0, 0)


# -- total ----------------------------------------------------------------------------------
def test_total_reward_combination():
    r = get_reward(product(), goal(), price=10.0, options={"size": "12 oz"})
    assert r.total == 1.0 and r.r_price == 1.0 and (r.w_att, r.w_option, r.w_price) == (1 / 3, 1 / 3, 1 / 3)
    # wrong option, too expensive: (1 attribute + 0 + 0) / 3
    r = get_reward(product(), goal(), price=25.0, options={"size": "8 oz"})
    assert r.total == pytest.approx(1 / 3) and r.r_option == 0.0 and r.r_price == 0.0
    # half type reward (different query and category, title overlap exactly 0.2)
    nouns = fixed_nouns({"bought": ["a"], "desired": list("abcde")})
    r = get_reward(
        product(title="bought", query="q", product_category="A › B"),
        goal(name="desired"),
        price=10.0,
        options={"size": "12 oz"},
        nouns=nouns,
    )
    assert r.r_type == 0.5 and r.total == pytest.approx(0.5)
    # no goal options: weights over attributes + price only
    r = get_reward(product(), goal(goal_options={}, attributes=["sulfate free", "vegan", "argan oil"]), 10.0, {})
    assert r.total == pytest.approx(3 / 4) and r.r_option is None and r.w_option is None
    assert r.as_info()["num_attribute_matches"] == 2


def test_reward_reads_the_originals_dicts():
    purchased = {
        "query": "shampoo",
        "product_category": "A › B",
        "name": "Argan Shampoo",
        "Title": "Argan Shampoo",
        "Attributes": ["argan oil"],
        "BulletPoints": [""],
        "Description": "",
    }
    target = {
        "query": "shampoo",
        "product_category": "A › B",
        "name": "Argan Shampoo",
        "attributes": ["argan oil"],
        "goal_options": ["red"],
        "price_upper": 5.0,
    }
    assert get_reward(purchased, target, price=4.0, options={"color": "bright red"}).total == 1.0
    # the original's quirk: "dark red" reduces to "dark" (first in its colour order), so it misses "red"
    assert get_reward(purchased, target, price=4.0, options={"color": "dark red"}).total == pytest.approx(2 / 3)
