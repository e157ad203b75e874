"""WebShop products and goals: loaders for the official files and their cleaning.

The official release has three files:

- the product file (``items_shuffle_1000.json``, or the full ``items_shuffle.json``), a
  JSON list of scraped products (``asin, name, category, query, product_category,
  full_description, small_description, pricing, customization_options, images``...);
  :func:`iter_raw_products` streams it so the full 1.2M-product file is never loaded whole;
- synthetic goal annotations (``items_ins_v2_1000.json`` / ``items_ins_v2.json``):
  ``asin -> {attributes, instruction?, instruction_attributes?}``;
- human instructions (``items_human_ins.json``): ``asin -> [{instruction,
  instruction_attributes, instruction_options}]``.

Cleaning and goal construction follow the original's rules: prices parsed from
``"$a"`` / ``"$a - $b"`` strings (missing: $100.0), option values lower-cased with
``/`` read as ``" | "``, attributes from the annotation file (``DUMMY_ATTR`` when
absent), a price per product (a range draws uniformly inside it), goal price upper
bounds drawn from the first four multiples of $10 above the price, one synthetic goal per
option combination, goal weights ``mean(1 / count(attribute))``, and the split: goals
shuffled with seed 233, the first 500 test, the next 1,000 eval, the rest train.

Example:
    >>> parse_pricing("$12.99 - $15.49")
    [12.99, 15.49]
    >>> price_tag([12.99, 15.49])
    '$12.99 to $15.49'
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

DATA_ENV_VAR = "AGENTENVS_WEBSHOP_DATA"
PRODUCT_FILE_SMALL = "items_shuffle_1000.json"
PRODUCT_FILE_FULL = "items_shuffle.json"
ATTRIBUTE_FILE_SMALL = "items_ins_v2_1000.json"
ATTRIBUTE_FILE_FULL = "items_ins_v2.json"
HUMAN_INSTRUCTION_FILE = "items_human_ins.json"

DEFAULT_PRICE = 100.0
NO_PRICE_BOUND = 1_000_000.0
PRICE_STEPS = tuple(10.0 * i for i in range(1, 100))
SPLIT_SEED = 233
TEST_GOALS = 500
EVAL_GOALS = 1000

Split = Literal["test", "eval", "train", "all"]


@dataclass(frozen=True)
class Product:
    """One cleaned product (the fields the pages and the reward read).

    Attributes:
        asin: Product id (10 characters).
        title: Shown title (the raw ``name``).
        category: Top-level category (e.g. ``beauty``).
        query: The search query the product was scraped under (lower-case).
        product_category: Category path joined by ``›``.
        pricing: One price, or the two ends of a price range.
        price_tag: The shown price (``$12.99`` or ``$12.99 to $15.49``).
        options: Option name -> values (lower-case).
        attributes: Annotated attributes (``["DUMMY_ATTR"]`` when not annotated).
        bullet_points: The feature bullet points.
        description: The full description.
        rating: The shown rating (``N.A.`` for the official files).
        reviews: Reviews as ``{title, score, body}``.
        image: Main image URL ("" when none).
        instruction: Synthetic goal instruction (None when the product has none).
        instruction_attributes: Attributes the synthetic instruction names.
    """

    asin: str
    title: str
    category: str
    query: str
    product_category: str
    pricing: tuple[float, ...]
    price_tag: str
    options: dict[str, list[str]]
    attributes: list[str]
    bullet_points: list[str]
    description: str
    rating: str = "N.A."
    reviews: list[dict[str, Any]] = field(default_factory=list)
    image: str = ""
    instruction: str | None = None
    instruction_attributes: list[str] = field(default_factory=list)


@dataclass
class Goal:
    """A shopping goal: buy ``asin`` (or something as good) with these attributes and options.

    ``goal_options`` is a dict (option name -> value) for synthetic goals and a list of
    values for human goals, as in the original; the option reward reads both.
    """

    asin: str
    category: str
    query: str
    name: str
    product_category: str
    instruction_text: str
    attributes: list[str]
    price_upper: float
    goal_options: dict[str, str] | list[str]
    weight: float = 1.0


# -- reading files ---------------------------------------------------------------------
def iter_json_array(path: str | os.PathLike[str], chunk_chars: int = 1 << 20) -> Iterator[Any]:
    """Yields the elements of the JSON array in ``path`` one at a time (memory: one chunk + one element).

    Raises:
        ValueError: when the file is not a JSON array (the message names the path).
    """
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as handle:
        buffer, position, end_of_file = "", 0, False
        state = "open"  # open -> first (value or "]") -> separator -> value -> separator ...
        while True:
            position = _skip(buffer, position)
            if position >= len(buffer):
                if end_of_file:
                    raise ValueError(f"{path}: the JSON array is not closed")
                buffer, position, end_of_file = _read_more(handle, buffer, position, chunk_chars)
                continue
            char = buffer[position]
            if state == "open":
                if char != "[":
                    raise ValueError(f"{path}: expected a JSON array")
                position, state = position + 1, "first"
            elif state == "first" and char == "]":
                return
            elif state in ("first", "value"):
                try:
                    element, end = decoder.raw_decode(buffer, position)
                except json.JSONDecodeError:
                    if end_of_file:
                        raise ValueError(f"{path}: malformed JSON element") from None
                    buffer, position, end_of_file = _read_more(handle, buffer, position, chunk_chars)
                    continue
                after = _skip(buffer, end)
                if not end_of_file and (after >= len(buffer) or buffer[after] not in ",]"):
                    # Only a visible separator proves the element whole (a number may go on).
                    buffer, position, end_of_file = _read_more(handle, buffer, position, chunk_chars)
                    continue
                yield element
                position, state = end, "separator"
            elif char == ",":
                position, state = position + 1, "value"
            elif char == "]":
                return
            else:
                raise ValueError(f"{path}: expected ',' or ']' between array elements")


def _read_more(handle: Any, buffer: str, position: int, chunk_chars: int) -> tuple[str, int, bool]:
    more = handle.read(chunk_chars)
    return buffer[position:] + more, 0, not more


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def load_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON object file (the annotation and human-instruction files)."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object keyed by ASIN, got {type(data).__name__}")
    return data


# -- cleaning ----------------------------------------------------------------------------
def parse_pricing(pricing: str | None) -> list[float]:
    """Prices in a raw pricing string (``"$a"`` or ``"$a - $b"``); ``[100.0]`` when none."""
    if not pricing:
        return [DEFAULT_PRICE]
    prices = []
    for piece in str(pricing).split("$")[1:]:
        digits = re.sub(r"[^\d.]", "", piece)
        try:
            prices.append(float(Decimal(digits)))
        except InvalidOperation:
            continue
    return prices[:2] if prices else [DEFAULT_PRICE]


def price_tag(pricing: Sequence[float]) -> str:
    """The shown price: ``$a`` or ``$a to $b``."""
    if len(pricing) == 1:
        return f"${pricing[0]}"
    return f"${pricing[0]} to ${pricing[1]}"


def clean_options(customization_options: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Option name (lower-case) -> values (stripped, lower-case, ``/`` shown as `` | ``)."""
    options: dict[str, list[str]] = {}
    for name, contents in (customization_options or {}).items():
        if contents is None:
            continue
        options[str(name).lower()] = [
            str(content.get("value", "")).strip().replace("/", " | ").lower() for content in contents
        ]
    return options


def clean_product(
    raw: Mapping[str, Any], annotation: Mapping[str, Any] | None = None, with_reviews: bool = False
) -> Product | None:
    """One raw product record as a :class:`Product`; None for a record the original skips.

    ``annotation`` is the product's entry in the synthetic-goal file (attributes and
    instruction), if any. Like the original, the rating shows ``N.A.`` and there are no
    reviews unless ``with_reviews`` (the generated shop has them).
    """
    asin = str(raw.get("asin", ""))
    if not asin or asin == "nan" or len(asin) > 10:
        return None
    pricing = parse_pricing(raw.get("pricing"))
    bullets = raw.get("small_description", "")
    annotation = annotation or {}
    # As the original: the annotation's attributes (even an empty list), DUMMY_ATTR without one.
    attributes = list(annotation["attributes"] or []) if "attributes" in annotation else ["DUMMY_ATTR"]
    images = raw.get("images") or [""]
    return Product(
        asin=asin,
        title=str(raw.get("name", "")),
        category=str(raw.get("category", "")),
        query=str(raw.get("query", "")).lower().strip(),
        product_category=str(raw.get("product_category", "")),
        pricing=tuple(pricing),
        price_tag=price_tag(pricing),
        options=clean_options(raw.get("customization_options")),
        attributes=attributes,
        bullet_points=[str(b) for b in bullets] if isinstance(bullets, list) else [str(bullets)],
        description=str(raw.get("full_description", "") or ""),
        rating=str(raw.get("average_rating") or "N.A.") if with_reviews else "N.A.",
        reviews=list(raw.get("reviews") or []) if with_reviews else [],
        image=str(images[0] or ""),
        instruction=annotation.get("instruction"),
        instruction_attributes=list(annotation.get("instruction_attributes") or []),
    )


def clean_products(
    raw_products: Iterable[Mapping[str, Any]],
    annotations: Mapping[str, Any] | None = None,
    num_products: int | None = None,
    with_reviews: bool = False,
) -> list[Product]:
    """Cleans the first ``num_products`` raw records, skipping bad and repeated ASINs."""
    annotations = annotations or {}
    products: list[Product] = []
    seen: set[str] = set()
    for raw in itertools.islice(raw_products, num_products):
        product = clean_product(raw, annotations.get(str(raw.get("asin", ""))), with_reviews)
        if product is None or product.asin in seen:
            continue
        seen.add(product.asin)
        products.append(product)
    return products


def load_products(
    product_file: str | os.PathLike[str],
    attribute_file: str | os.PathLike[str] | None = None,
    num_products: int | None = None,
) -> list[Product]:
    """Streams and cleans the product file (optionally only its first ``num_products``)."""
    annotations = load_json_object(attribute_file) if attribute_file is not None else {}
    return clean_products(iter_json_array(product_file), annotations, num_products)


def product_prices(products: Sequence[Product], seed: int = 0) -> dict[str, float]:
    """The price each product sells at: its one price, or a seeded draw inside its range."""
    rng = random.Random(seed)
    prices = {}
    for product in products:
        low, *rest = product.pricing
        prices[product.asin] = float(low) if not rest else rng.uniform(low, rest[0])
    return prices


# -- goals -------------------------------------------------------------------------------
def price_bound(price: float, rng: random.Random) -> tuple[float, str]:
    """A goal price upper bound above ``price`` and its instruction suffix.

    The larger of two draws from the first four multiples of $10 above the price; no bound
    (and no text) when fewer than two are left.
    """
    above = [step for step in PRICE_STEPS if step > price][:4]
    if len(above) < 2:
        return NO_PRICE_BOUND, ""
    upper = max(rng.sample(above, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def synthetic_goals(products: Sequence[Product], prices: Mapping[str, float], seed: int = 0) -> list[Goal]:
    """One goal per option combination of each product with a synthetic instruction."""
    rng = random.Random(seed)
    goals: list[Goal] = []
    for product in products:
        if product.instruction is None:
            continue
        if not product.instruction_attributes:
            raise ValueError(f"WebShop: product {product.asin} has an instruction but no instruction_attributes")
        upper, price_text = price_bound(prices[product.asin], rng)
        names = sorted(product.options)
        for combination in itertools.product(*(product.options[name] for name in names)):
            goal_options = dict(zip(names, combination, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
            option_text = f" with {option_text}" if option_text else ""
            goals.append(
                _goal_for(
                    product,
                    f"{product.instruction}{option_text}{price_text}",
                    list(product.instruction_attributes),
                    upper,
                    goal_options,
                )
            )
    counts = Counter(attribute for goal in goals for attribute in goal.attributes)
    for goal in goals:
        goal.weight = sum(1.0 / counts[a] for a in goal.attributes) / len(goal.attributes)
    return goals


def _goal_for(
    product: Product,
    instruction_text: str,
    attributes: list[str],
    price_upper: float,
    goal_options: dict[str, str] | list[str],
) -> Goal:
    """A goal for ``product``: the product's identity fields plus what the shopper asks for."""
    return Goal(
        asin=product.asin,
        category=product.category,
        query=product.query,
        name=product.title,
        product_category=product.product_category,
        instruction_text=instruction_text,
        attributes=attributes,
        price_upper=price_upper,
        goal_options=goal_options,
    )


def human_goals(
    products: Sequence[Product],
    human_instructions: Mapping[str, Sequence[Mapping[str, Any]]],
    prices: Mapping[str, float],
    seed: int = 0,
) -> list[Goal]:
    """One goal per human instruction that names at least one attribute (weight 1)."""
    rng = random.Random(seed)
    goals: list[Goal] = []
    for product in products:
        for entry in human_instructions.get(product.asin, ()):
            attributes = list(entry.get("instruction_attributes") or [])
            if not attributes:
                continue
            upper, price_text = price_bound(prices[product.asin], rng)
            goals.append(
                _goal_for(
                    product,
                    str(entry["instruction"]).strip(".") + price_text,
                    attributes,
                    upper,
                    list(entry.get("instruction_options") or []),
                )
            )
    return goals


def split_range(split: Split, num_goals: int) -> range:
    """Positions of ``split`` in the shuffled goal list (first 500 test, next 1,000 eval, rest train).

    >>> split_range("eval", 2000)
    range(500, 1500)
    """
    if split not in ("test", "eval", "train", "all"):
        raise ValueError(f"split must be 'test', 'eval', 'train' or 'all', got {split!r}")
    bounds = {
        "test": (0, TEST_GOALS),
        "eval": (TEST_GOALS, TEST_GOALS + EVAL_GOALS),
        "train": (TEST_GOALS + EVAL_GOALS, num_goals),
        "all": (0, num_goals),
    }
    start, stop = bounds[split]
    return range(min(start, num_goals), min(stop, num_goals))


def shuffle_goals(goals: Sequence[Goal], seed: int = SPLIT_SEED) -> list[Goal]:
    """The goals in the original's fixed order (shuffled with ``seed``)."""
    shuffled = list(goals)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def split_goals(goals: Sequence[Goal], split: Split, seed: int = SPLIT_SEED) -> list[Goal]:
    """The goals of ``split`` under the original convention (see :func:`split_range`)."""
    shuffled = shuffle_goals(goals, seed)
    return [shuffled[i] for i in split_range(split, len(shuffled))]
