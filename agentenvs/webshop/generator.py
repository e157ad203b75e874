"""A seeded procedural shop in the official WebShop schema (the env's default data).

:func:`generate_catalog` writes raw product records as the official product file has
them (``asin, name, category, query, product_category, full_description,
small_description, pricing, customization_options, images, average_rating``) and the
synthetic-goal annotations as ``items_ins_v2.json`` has them (``attributes, instruction,
instruction_attributes``); the same cleaning and goal construction as for the real files
then turn them into products and goals (:mod:`agentenvs.webshop.data`).

Search matters: each category holds ten product types, so about twenty products at 1k
share a type, query and category path; products come in families of up to four
near-duplicates (same type and title pattern, often the same brand and options: resellers'
copies with the same attributes at prices often past the goal's bound, and sibling models
with one attribute swapped), and
about 60% carry a goal instruction naming one to three of their attributes.

Example:
    >>> catalog = generate_catalog(50, seed=0)
    >>> len(catalog.raw_products), sorted(catalog.raw_products[0])[:3]
    (50, ['asin', 'average_rating', 'category'])
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Any

# category -> (path, product types (title noun phrase, query, sub-path), attribute pool, option kinds)
_CATEGORIES: dict[str, dict[str, Any]] = {
    "beauty": {
        "path": "Beauty & Personal Care",
        "types": [
            ("Shampoo", "shampoo", "Hair Care › Shampoo & Conditioner › Shampoos"),
            ("Conditioner", "conditioner", "Hair Care › Shampoo & Conditioner › Conditioners"),
            ("Body Lotion", "body lotion", "Skin Care › Body › Lotions"),
            ("Face Serum", "face serum", "Skin Care › Face › Serums"),
            ("Lip Balm", "lip balm", "Skin Care › Lips › Balms"),
            ("Deodorant", "deodorant", "Personal Care › Deodorants & Antiperspirants"),
            ("Nail Polish", "nail polish", "Foot, Hand & Nail Care › Nail Polish"),
            ("Hair Extension", "hair extension", "Hair Care › Hair Extensions & Wigs"),
            ("Eyeshadow Palette", "eyeshadow palette", "Makeup › Eyes › Eyeshadow"),
            ("Makeup Brush Set", "makeup brush set", "Tools & Accessories › Makeup Brushes"),
        ],
        "attributes": [
            "sulfate free",
            "paraben free",
            "cruelty free",
            "natural ingredients",
            "long lasting",
            "travel size",
            "sensitive skin",
            "dry skin",
            "tea tree",
            "argan oil",
            "coconut oil",
            "vitamin c",
            "easy to use",
            "high quality",
            "fragrance free",
            "hyaluronic acid",
        ],
        "options": {
            "size": ["2 fl oz", "4 fl oz", "8 fl oz", "12 fl oz", "16.9 fl oz", "pack of 2", "pack of 3"],
            "scent": ["lavender", "unscented", "citrus", "coconut", "vanilla", "eucalyptus mint", "rose"],
        },
        "price": (4.0, 45.0),
    },
    "fashion": {
        "path": "Clothing, Shoes & Jewelry",
        "types": [
            ("T-Shirt", "t-shirt", "Men › Clothing › Shirts › T-Shirts"),
            ("Hoodie", "hoodie", "Women › Clothing › Fashion Hoodies & Sweatshirts"),
            ("Jeans", "jeans", "Men › Clothing › Jeans"),
            ("Sneakers", "sneakers", "Women › Shoes › Fashion Sneakers"),
            ("Summer Dress", "dress", "Women › Clothing › Dresses › Casual"),
            ("Crew Socks", "socks", "Men › Clothing › Socks"),
            ("Rain Jacket", "rain jacket", "Women › Clothing › Coats, Jackets & Vests"),
            ("Yoga Leggings", "leggings", "Women › Clothing › Active › Leggings"),
            ("Slide Sandals", "sandals", "Men › Shoes › Sandals"),
            ("Baseball Cap", "baseball cap", "Men › Accessories › Hats & Caps"),
        ],
        "attributes": [
            "machine wash",
            "slim fit",
            "relaxed fit",
            "long sleeve",
            "short sleeve",
            "button closure",
            "elastic waist",
            "rubber sole",
            "cotton spandex",
            "moisture wicking",
            "quick drying",
            "daily wear",
            "high waist",
            "wide leg",
            "non slip",
            "polyester cotton",
        ],
        "options": {
            "color": ["black", "white", "navy blue", "heather grey", "red", "olive green", "light pink", "burgundy"],
            "size": ["small", "medium", "large", "x-large", "xx-large", "3x-large"],
        },
        "price": (8.0, 80.0),
    },
    "grocery": {
        "path": "Grocery & Gourmet Food",
        "types": [
            ("Green Tea", "green tea", "Beverages › Tea › Green"),
            ("Coffee Beans", "coffee beans", "Beverages › Coffee › Whole Bean"),
            ("Protein Bars", "protein bars", "Snack Foods › Bars › Protein"),
            ("Trail Mix", "trail mix", "Snack Foods › Trail Mix"),
            ("Olive Oil", "olive oil", "Pantry Staples › Cooking Oils › Olive"),
            ("Dark Chocolate", "dark chocolate", "Snacks & Sweets › Chocolate"),
            ("Raw Honey", "honey", "Pantry Staples › Jams, Jellies & Sweet Spreads › Honey"),
            ("Pasta Sauce", "pasta sauce", "Pantry Staples › Sauces › Pasta Sauces"),
            ("Granola", "granola", "Breakfast Foods › Cereals › Granola"),
            ("Sparkling Water", "sparkling water", "Beverages › Water › Sparkling"),
        ],
        "attributes": [
            "gluten free",
            "non gmo",
            "low sugar",
            "keto friendly",
            "usda organic",
            "high protein",
            "sugar free",
            "plant based",
            "kosher certified",
            "caffeine free",
            "individually wrapped",
            "ready to eat",
            "low calorie",
            "dairy free",
            "fair trade",
            "resealable bag",
        ],
        "options": {
            "flavor name": [
                "original",
                "vanilla almond",
                "chocolate chip",
                "sea salt",
                "lemon",
                "peanut butter",
                "mixed berry",
            ],
            "size": ["6 ounce", "12 ounce", "1 pound", "pack of 6", "pack of 12", "24 count"],
        },
        "price": (3.0, 40.0),
    },
    "furniture": {
        "path": "Home & Kitchen",
        "types": [
            ("Bookshelf", "bookshelf", "Furniture › Home Office Furniture › Bookcases"),
            ("Office Chair", "office chair", "Furniture › Home Office Furniture › Desk Chairs"),
            ("Coffee Table", "coffee table", "Furniture › Living Room Furniture › Tables"),
            ("TV Stand", "tv stand", "Furniture › Living Room Furniture › TV & Media Furniture"),
            ("Bed Frame", "bed frame", "Furniture › Bedroom Furniture › Beds & Frames"),
            ("Bar Stool", "bar stool", "Furniture › Game & Recreation Room Furniture › Stools"),
            ("Shoe Rack", "shoe rack", "Storage & Organization › Clothing & Closet Storage › Shoe Organizers"),
            ("Nightstand", "nightstand", "Furniture › Bedroom Furniture › Nightstands"),
            ("Floor Lamp", "floor lamp", "Lighting › Floor Lamps"),
            ("Area Rug", "area rug", "Home Décor › Area Rugs"),
        ],
        "attributes": [
            "easy assembly",
            "solid wood",
            "metal frame",
            "storage space",
            "living room",
            "bedroom",
            "space saving",
            "height adjustable",
            "non slip",
            "mid century",
            "lumbar support",
            "engineered wood",
            "heavy duty",
            "easy clean",
            "steel frame",
            "assembly required",
        ],
        "options": {
            "color": ["walnut", "white", "black", "grey", "oak brown", "espresso", "natural"],
            "size": ["small", "large", "2 tier", "3 tier", "5 tier", "queen", "king", "5x7 ft"],
        },
        "price": (25.0, 260.0),
    },
    "electronics": {
        "path": "Electronics",
        "types": [
            ("Wireless Earbuds", "wireless earbuds", "Headphones, Earbuds & Accessories › Earbud Headphones"),
            ("Phone Case", "phone case", "Cell Phones & Accessories › Cases, Holsters & Sleeves"),
            ("USB C Cable", "usb c cable", "Computers & Accessories › Cables › USB Cables"),
            (
                "Power Bank",
                "power bank",
                "Cell Phones & Accessories › Chargers & Power Adapters › Portable Power Banks",
            ),
            ("Bluetooth Speaker", "bluetooth speaker", "Portable Audio & Video › Portable Speakers"),
            ("Screen Protector", "screen protector", "Cell Phones & Accessories › Screen Protectors"),
            ("HDMI Cable", "hdmi cable", "Television & Video › Accessories › Cables › HDMI Cables"),
            ("Wireless Charger", "wireless charger", "Cell Phones & Accessories › Chargers & Power Adapters"),
            ("Smart Watch Band", "smart watch band", "Wearable Technology › Bands"),
            ("Laptop Sleeve", "laptop sleeve", "Computers & Accessories › Laptop Accessories › Bags, Cases & Sleeves"),
        ],
        "attributes": [
            "fast charging",
            "noise cancelling",
            "water resistant",
            "long battery life",
            "high definition",
            "easy install",
            "wireless charging",
            "bluetooth 5.0",
            "shock absorbing",
            "hands free",
            "aluminum alloy",
            "plug and play",
            "heavy duty",
            "scratch resistant",
            "gold plated",
            "high speed",
        ],
        "options": {
            "color": ["black", "white", "blue", "rose gold", "silver", "dark green", "purple"],
            "size": ["3 ft", "6 ft", "10 ft", "13 inch", "15.6 inch", "2 pack", "regular"],
        },
        "price": (6.0, 120.0),
    },
}

_BRAND_PARTS = (
    "lumi nova terra vita aero zen pure bella urban peak true north blue oak ever bright core "
    "max prime sol luna echo kind bold wild swift fern maple iron silk cloud stone river"
).split()
_OPENINGS = ("i need", "i am looking for", "find me", "i want", "i would like", "show me", "i'm searching for")
_REVIEW_TITLES = ("Great value", "Works as described", "Not bad", "Love it", "Would buy again", "Okay for the price")


@dataclass(frozen=True)
class GeneratedCatalog:
    """Raw product records and their synthetic-goal annotations, in the official schemas."""

    raw_products: list[dict[str, Any]]
    annotations: dict[str, dict[str, Any]]


def _asin(rng: random.Random, taken: set[str]) -> str:
    alphabet = string.ascii_uppercase + string.digits
    while True:
        asin = "B0" + "".join(rng.choices(alphabet, k=8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _brand(rng: random.Random) -> str:
    first, second = rng.sample(_BRAND_PARTS, 2)
    return (first + second).capitalize() if rng.random() < 0.6 else f"{first.capitalize()} {second.capitalize()}"


def _options(rng: random.Random, kinds: dict[str, list[str]]) -> dict[str, list[dict[str, Any]]] | None:
    if rng.random() < 0.12:
        return None
    chosen_kinds = [kind for kind in kinds if rng.random() < 0.75] or [rng.choice(list(kinds))]
    options = {}
    for kind in chosen_kinds:
        values = rng.sample(kinds[kind], rng.randint(2, 3))
        options[kind] = [{"value": value, "image": None} for value in values]
    return options


def _pricing(rng: random.Random, price: float) -> str:
    price = round(price, 2)
    if rng.random() < 0.2:
        return f"${price:.2f} - ${round(price * rng.uniform(1.05, 1.4), 2):.2f}"
    return f"${price:.2f}"


@dataclass(frozen=True)
class _Design:
    """What a family of near-duplicate products shares."""

    noun: str
    query: str
    sub_path: str
    brand: str
    audience: str
    attributes: tuple[str, ...]
    shown: int
    price: float
    options: dict[str, list[dict[str, Any]]] | None


def _design(rng: random.Random, spec: dict[str, Any]) -> _Design:
    noun, query, sub_path = rng.choice(spec["types"])
    audience = rng.choice(("", "", " for Women", " for Men", " for Kids", " for Home", " for Travel"))
    attributes = tuple(rng.sample(spec["attributes"], rng.randint(3, 5)))
    return _Design(
        noun,
        query,
        sub_path,
        _brand(rng),
        audience,
        attributes,
        rng.randint(1, 2),
        rng.uniform(*spec["price"]),
        _options(rng, spec["options"]),
    )


def _variant(rng: random.Random, design: _Design, spec: dict[str, Any]) -> _Design:
    """A near-duplicate: a reseller's copy (same attributes, higher price: often over the goal's
    bound) or a sibling model (one attribute swapped, another price); mostly the same options."""
    attributes = list(design.attributes)
    if rng.random() < 0.5:
        price = design.price * rng.uniform(1.6, 3.0)
    else:
        attributes[rng.randrange(len(attributes))] = rng.choice([a for a in spec["attributes"] if a not in attributes])
        price = design.price * rng.uniform(0.7, 1.6)
    brand = design.brand if rng.random() < 0.5 else _brand(rng)
    options = design.options if rng.random() < 0.7 else _options(rng, spec["options"])
    return _Design(
        design.noun,
        design.query,
        design.sub_path,
        brand,
        design.audience,
        tuple(attributes),
        design.shown,
        price,
        options,
    )


def _product(
    rng: random.Random, asin: str, category: str, spec: dict[str, Any], design: _Design
) -> tuple[dict[str, Any], dict[str, Any]]:
    noun, query, brand, attributes = design.noun, design.query, design.brand, list(design.attributes)
    shown = attributes[: design.shown]
    title = f"{brand} {noun}{design.audience}, " + ", ".join(a.title() for a in shown)
    extras = attributes[len(shown) :]
    bullets = [f"{a.upper()}: this {noun.lower()} is {a}, made by {brand} for everyday use." for a in extras]
    bullets.append(f"WHAT YOU GET: one {noun.lower()} from {brand}, backed by a 30-day guarantee.")
    rng.shuffle(bullets)
    description = (
        f"The {brand} {noun.lower()} is designed to be {', '.join(attributes[:-1])} and {attributes[-1]}. "
        f"Ideal for anyone shopping for a {query}."
    )
    raw = {
        "asin": asin,
        "name": title,
        "category": category,
        "query": query,
        "product_category": f"{spec['path']} › {design.sub_path}",
        "full_description": description,
        "small_description": bullets,
        "pricing": _pricing(rng, design.price),
        "customization_options": design.options,
        "images": [f"/static/images/{category}.svg"],
        "average_rating": f"{rng.uniform(3.0, 5.0):.1f}",
        "reviews": [
            {"title": rng.choice(_REVIEW_TITLES), "score": rng.randint(2, 5), "body": f"My {query} arrived quickly."}
            for _ in range(rng.randint(0, 3))
        ],
    }
    annotation: dict[str, Any] = {"attributes": attributes}
    if rng.random() < 0.6:
        named = rng.sample(attributes, rng.randint(1, min(3, len(attributes))))
        opening = rng.choice(_OPENINGS)
        listed = ", ".join(named[:-1]) + " and " if len(named) > 1 else ""
        annotation["instruction"] = f"{opening} {query} that is {listed}{named[-1]}"
        annotation["instruction_attributes"] = named
    return raw, annotation


def generate_catalog(num_products: int = 1000, seed: int = 0) -> GeneratedCatalog:
    """``num_products`` products (families of near-duplicates over five categories) and their annotations.

    Raises:
        ValueError: if ``num_products`` < 1.
    """
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    rng = random.Random(seed)
    categories = list(_CATEGORIES)
    taken: set[str] = set()
    raw_products: list[dict[str, Any]] = []
    annotations: dict[str, dict[str, Any]] = {}
    family = 0
    while len(raw_products) < num_products:
        category = categories[family % len(categories)]
        spec = _CATEGORIES[category]
        design = _design(rng, spec)
        variants = rng.choices((0, 1, 2, 3), weights=(3, 3, 2.5, 1.5))[0]
        for member in range(1 + variants):
            if len(raw_products) == num_products:
                break
            asin = _asin(rng, taken)
            raw, annotation = _product(
                rng, asin, category, spec, design if member == 0 else _variant(rng, design, spec)
            )
            raw_products.append(raw)
            annotations[asin] = annotation
        family += 1
    rng.shuffle(raw_products)
    return GeneratedCatalog(raw_products, annotations)
