"""Navigation rules of a shopping session (the original text env's pages and buttons)."""

from __future__ import annotations

import pytest

from agentenvs.webshop.engine import MAX_QUERY_CHARS, InvalidAction, WebShopEngine, parse_action
from agentenvs.webshop.pages import page_text


def goal_with_options(engine: WebShopEngine):
    return next(g for g in engine.goals if len(g.goal_options) == 2)


def test_parse_action():
    assert parse_action(" search[red socks] ") == ("search", "red socks")
    assert parse_action("click[< Prev]") == ("click", "< Prev")
    for bad in ("buy", "click[]", "search[ ]", "Click[x]", "search red"):
        with pytest.raises(InvalidAction):
            parse_action(bad)


def test_search_results_paging(engine: WebShopEngine):
    goal = engine.goals[0]
    session = engine.session(goal)
    assert session.available_actions() == ["search[<query>]"]
    session.step("search[Ideal  FOR Anyone Shopping]")
    assert session.keywords == "ideal for anyone shopping"  # lower-cased as in the original
    page = session.page
    assert page.kind == "results" and page.page_number == 1 and page.total == 50 and len(page.products) == 10
    assert session.available_actions()[:2] == ["click[Back to Search]", "click[Next >]"]
    first_page = [p.asin for p in page.products]
    session.step("click[next >]")
    assert session.page.page_number == 2 and "click[< Prev]" in session.available_actions()
    assert [p.asin for p in session.page.products] == engine.top_asins("ideal for anyone shopping")[10:20]
    session.step("click[< Prev]")
    assert [p.asin for p in session.page.products] == first_page
    for _ in range(5):
        session.step("click[Next >]")
    assert session.page.page_number == 6 and session.page.products == []  # past the top 50, as in the original
    text = page_text(session.page)
    assert text.endswith("Page 6 (Total results: 50) [SEP] < Prev [SEP] Next >")


def test_item_options_subpages_and_back(engine: WebShopEngine):
    goal = goal_with_options(engine)
    session = engine.session(goal)
    session.step(f"search[{goal.instruction_text}]")
    asin = session.page.products[0].asin
    session.step(f"click[{asin.lower()}]")
    assert session.page.kind == "item" and session.asin == asin
    product = engine.products[asin]
    name, values = next(iter(product.options.items()))
    session.step(f"click[{values[0]}]")
    session.step(f"click[{values[1]}]")
    assert session.options == {name: values[1]}  # one choice per option group
    session.step("click[Features]")
    assert session.page.kind == "sub" and session.page.sub_page == "Features"
    assert page_text(session.page).split(" [SEP] ")[4:] == product.bullet_points
    assert session.available_actions() == ["click[Back to Search]", "click[< Prev]"]
    session.step("click[< Prev]")
    assert session.page.kind == "item" and session.page.options == {name: values[1]}
    session.step("click[< Prev]")
    assert session.page.kind == "results" and session.options == {}  # options forgotten, as in the original
    session.step("click[Back to Search]")
    assert session.page.kind == "search" and session.visited == set()


def test_invalid_actions_change_nothing(engine: WebShopEngine):
    session = engine.session(engine.goals[0])
    with pytest.raises(InvalidAction, match="no 'Buy Now'"):
        session.step("click[Buy Now]")
    session.step("search[lotion]")
    before = page_text(session.page)
    for action in ("click[B0NOTHERE1]", "click[Description]", "jump", "search[" + "x" * (MAX_QUERY_CHARS + 1) + "]"):
        with pytest.raises(InvalidAction):
            session.step(action)
        assert page_text(session.page) == before
    session.step("click[Description]".replace("Description", session.page.products[0].asin))
    assert session.page.kind == "item"
    session.step("search[socks]")  # searching from an item page is allowed, as in the original
    assert session.page.kind == "results"


def test_buy_scores_and_ends(engine: WebShopEngine):
    goal = goal_with_options(engine)
    session = engine.session(goal)
    session.step(f"search[{goal.instruction_text}]")
    while goal.asin not in [p.asin for p in session.page.products]:
        session.step("click[Next >]")
    session.step(f"click[{goal.asin}]")
    for value in goal.goal_options.values():
        session.step(f"click[{value}]")
    session.step("click[Buy Now]")
    assert session.done and session.reward.total == 1.0 and session.available_actions() == []
    assert page_text(session.page) == "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 1.0"
    with pytest.raises(InvalidAction, match="done"):
        session.step("search[more]")


def test_buy_without_options_scores_partially(engine: WebShopEngine):
    goal = goal_with_options(engine)
    session = engine.session(goal)
    session.step(f"search[{goal.instruction_text}]")
    while goal.asin not in [p.asin for p in session.page.products]:
        session.step("click[Next >]")
    session.step(f"click[{goal.asin}]")
    session.step("click[Buy Now]")
    # attributes and price match, neither of the two options: (A + 0 + 1) / (A + 2 + 1)
    attributes = len(goal.attributes)
    assert session.reward.total == pytest.approx((attributes + 1) / (attributes + 3))


def test_action_kind_names_what_an_action_would_do_and_changes_nothing(engine: WebShopEngine):
    goal = goal_with_options(engine)
    session = engine.session(goal)
    assert session.action_kind("search[socks]") == "search"
    assert [session.action_kind(a) for a in ("click[Buy Now]", "jump", "click[]")] == [None, None, None]
    session.step(f"search[{goal.instruction_text}]")
    asin = session.page.products[0].asin
    kinds = {a: session.action_kind(a) for a in ("click[Next >]", f"click[{asin.lower()}]", "click[back to search]")}
    assert kinds == {"click[Next >]": "next", f"click[{asin.lower()}]": "product", "click[back to search]": "back"}
    assert session.page.kind == "results" and session.page.page_number == 1  # nothing was clicked
    session.step(f"click[{asin}]")
    value = next(iter(engine.products[asin].options.values()))[0]
    kinds = {
        a: session.action_kind(a) for a in (f"click[ {value} ]", "click[Buy Now]", "click[Features]", "click[< Prev]")
    }
    assert list(kinds.values()) == ["option", "buy", "sub", "prev"] and session.options == {}
    session.step("click[Buy Now]")
    assert session.action_kind("search[more]") is None  # the purchase is done
