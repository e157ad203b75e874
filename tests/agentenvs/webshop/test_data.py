"""Loaders, cleaning, goal construction and splits against hand-computed cases and the real goals file."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agentenvs.webshop.data import (
    NO_PRICE_BOUND,
    Product,
    clean_options,
    clean_product,
    clean_products,
    human_goals,
    iter_json_array,
    load_json_object,
    load_products,
    parse_pricing,
    price_bound,
    price_tag,
    product_prices,
    shuffle_goals,
    split_goals,
    split_range,
    synthetic_goals,
)


def raw(asin: str = "B000000001", **overrides):
    record = {
        "asin": asin,
        "name": "Cozy Wool Socks",
        "category": "fashion",
        "query": " Wool Socks ",
        "product_category": "Clothing › Men › Socks",
        "full_description": "Warm socks.",
        "small_description": ["Warm", "Soft"],
        "pricing": "$12.99",
        "images": ["http://x/1.jpg"],
        "customization_options": {"Color": [{"value": "Navy/Red"}, {"value": " Black "}], "Size": None},
        "brand": "dropped",
    }
    record.update(overrides)
    return record


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$12.99", [12.99]),
        ("$10.99 - $15.49", [10.99, 15.49]),
        ("$1,299.00", [1299.0]),
        ("", [100.0]),
        (None, [100.0]),
        ("$1.00 - $2.00 - $3.00", [1.0, 2.0]),
    ],
)
def test_parse_pricing(text, expected):
    assert parse_pricing(text) == expected


def test_price_tag():
    assert price_tag([12.99]) == "$12.99"
    assert price_tag([100.0]) == "$100.0"
    assert price_tag([1.5, 2.0]) == "$1.5 to $2.0"


def test_clean_options_lowercases_splits_slashes_and_drops_empty_groups():
    assert clean_options({"Color": [{"value": "Navy/Red"}, {"value": " Black "}], "Size": None}) == {
        "color": ["navy | red", "black"]
    }
    assert clean_options(None) == {}


def test_clean_product_fields_and_skips():
    product = clean_product(
        raw(),
        {"attributes": ["machine wash"], "instruction": "i need socks", "instruction_attributes": ["machine wash"]},
    )
    assert isinstance(product, Product)
    assert product.query == "wool socks" and product.title == "Cozy Wool Socks"
    assert product.pricing == (12.99,) and product.price_tag == "$12.99"
    assert product.bullet_points == ["Warm", "Soft"] and product.image == "http://x/1.jpg"
    assert product.attributes == ["machine wash"] and product.instruction == "i need socks"
    assert clean_product(raw(small_description="One bullet")).bullet_points == ["One bullet"]
    assert product.rating == "N.A." and product.reviews == []  # as the original: no reviews loaded
    reviewed = clean_product(raw(average_rating="4.5", reviews=[{"title": "ok", "score": 4, "body": "b"}]), None, True)
    assert reviewed.rating == "4.5" and reviewed.reviews[0]["score"] == 4
    assert clean_product(raw()).attributes == ["DUMMY_ATTR"]
    assert clean_product(raw(), {"attributes": []}).attributes == []
    assert clean_product(raw(asin="nan")) is None
    assert clean_product(raw(asin="B0000000001X")) is None


def test_clean_products_dedups_and_limits():
    records = [raw("B1"), raw("B1"), raw("nan"), raw("B2"), raw("B3")]
    assert [p.asin for p in clean_products(records)] == ["B1", "B2", "B3"]
    assert [p.asin for p in clean_products(records, num_products=4)] == ["B1", "B2"]


def test_iter_json_array_streams_in_small_chunks(tmp_path: Path):
    records = [raw(f"B{i:09d}", full_description="x" * (i * 7)) for i in range(40)] + [1, 2.5, "s", None, [1, 2]]
    path = tmp_path / "items.json"
    path.write_text(json.dumps(records, indent=1))
    for chunk in (3, 17, 1 << 20):
        assert list(iter_json_array(path, chunk_chars=chunk)) == records
    (tmp_path / "empty.json").write_text(" [ ] ")
    assert list(iter_json_array(tmp_path / "empty.json")) == []


@pytest.mark.parametrize("text", ['{"a": 1}', '[{"a": 1} {"b": 2}]', '[{"a": 1}, {"b": '])
def test_iter_json_array_rejects_malformed(tmp_path: Path, text: str):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="bad.json"):
        list(iter_json_array(path, chunk_chars=4))


def test_load_products_from_files(tmp_path: Path):
    (tmp_path / "items.json").write_text(json.dumps([raw("B1"), raw("B2", pricing="$5 - $9")]))
    (tmp_path / "ins.json").write_text(json.dumps({"B2": {"attributes": ["soft"]}}))
    products = load_products(tmp_path / "items.json", tmp_path / "ins.json", num_products=5)
    assert [p.attributes for p in products] == [["DUMMY_ATTR"], ["soft"]]
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="JSON object"):
        load_json_object(tmp_path / "list.json")


def test_product_prices_single_and_range():
    products = clean_products([raw("B1"), raw("B2", pricing="$10.00 - $20.00")])
    prices = product_prices(products, seed=3)
    assert prices["B1"] == 12.99
    assert 10.0 <= prices["B2"] <= 20.0
    assert product_prices(products, seed=3) == prices


def test_price_bound():
    rng = random.Random(0)
    bounds = {price_bound(25.0, rng)[0] for _ in range(200)}
    assert bounds == {40.0, 50.0, 60.0}  # larger of two draws from 30, 40, 50, 60
    upper, text = price_bound(25.0, random.Random(1))
    assert text == f", and price lower than {upper:.2f} dollars"
    assert price_bound(985.0, rng) == (NO_PRICE_BOUND, "")
    assert price_bound(10.0, rng)[0] in (30.0, 40.0, 50.0)  # 10 is not above 10


def test_synthetic_goals_one_per_option_combination_with_weights():
    annotations = {
        "B1": {"attributes": ["soft", "warm"], "instruction": "i need warm socks", "instruction_attributes": ["warm"]},
        "B2": {"attributes": ["warm"], "instruction": "i want soft socks", "instruction_attributes": ["soft", "warm"]},
        "B3": {"attributes": ["x"]},
    }
    records = [
        raw("B1", customization_options={"Size": [{"value": "S"}, {"value": "M"}], "Color": [{"value": "Red"}]}),
        raw("B2", customization_options=None, pricing="$995"),
        raw("B3"),
    ]
    products = clean_products(records, annotations)
    goals = synthetic_goals(products, product_prices(products), seed=0)
    assert [g.asin for g in goals] == ["B1", "B1", "B2"]
    assert goals[0].goal_options == {"color": "red", "size": "s"}
    assert goals[0].instruction_text.startswith("i need warm socks with color: red, and size: s, and price lower than ")
    assert goals[2].instruction_text == "i want soft socks" and goals[2].price_upper == NO_PRICE_BOUND
    # "warm" is named by 3 goals, "soft" by 1: weight = mean(1/count)
    assert goals[0].weight == pytest.approx(1 / 3)
    assert goals[2].weight == pytest.approx((1 + 1 / 3) / 2)


def test_human_goals_skip_instructions_without_attributes():
    products = clean_products([raw("B1")])
    instructions = {
        "B1": [
            {
                "instruction": "i want navy socks.",
                "instruction_attributes": ["navy"],
                "instruction_options": ["navy | red"],
            },
            {"instruction": "anything", "instruction_attributes": [], "instruction_options": []},
        ]
    }
    goals = human_goals(products, instructions, {"B1": 12.99}, seed=0)
    assert len(goals) == 1
    assert goals[0].instruction_text.startswith("i want navy socks, and price lower than")
    assert goals[0].goal_options == ["navy | red"] and goals[0].weight == 1.0


def test_split_convention():
    assert split_range("test", 2000) == range(0, 500)
    assert split_range("eval", 2000) == range(500, 1500)
    assert split_range("train", 2000) == range(1500, 2000)
    assert split_range("train", 300) == range(300, 300)
    with pytest.raises(ValueError, match="split"):
        split_range("dev", 10)
    goals = list(range(2000))
    shuffled = list(goals)
    random.seed(233)  # the original: random.seed(233); random.shuffle(goals)
    random.shuffle(shuffled)
    assert shuffle_goals(goals) == shuffled
    assert split_goals(goals, "test") == shuffled[:500]


def test_real_goal_file(shared_data: Path):
    path = shared_data / "webshop" / "items_ins_v2_1000.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    annotations = load_json_object(path)
    assert len(annotations) == 1000
    # The product file is not available: give each annotated ASIN a product with two colours.
    options = {"Color": [{"value": "Black"}, {"value": "White"}]}
    products = clean_products([raw(asin, customization_options=options) for asin in annotations], annotations)
    with_instruction = [p for p in products if p.instruction is not None]
    assert len(products) == 1000 and len(with_instruction) == 415
    goals = synthetic_goals(products, product_prices(products), seed=0)
    assert len(goals) == 2 * 415
    first = with_instruction[0]
    assert goals[0].attributes == annotations[first.asin]["instruction_attributes"]
    assert goals[0].instruction_text.startswith(annotations[first.asin]["instruction"] + " with color: black")
    assert all(0 < g.weight <= 1 for g in goals)
    assert len(split_goals(goals, "test")) == 500 and len(split_goals(goals, "train")) == 0
