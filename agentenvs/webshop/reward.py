"""The WebShop reward: how well a purchase matches the goal (the original's ``get_reward``).

With ``A`` goal attributes, ``O`` goal options, ``a``/``o`` of them matched and ``p`` = 1
when the price is within the goal's bound::

    reward = r_type * (a + o + p) / (A + O + 1)

- ``r_type`` (type reward): 1.0 when the query matches, or two or more
  ``product_category`` levels are shared, or more than 20% of the goal title's nouns
  appear in the purchased title; else 0.5; then 0.1 if under 10% of the nouns are shared,
  0.0 if none (a goal title without nouns counts as 20%).
- attribute match: a goal attribute fuzzy-matches (token-set ratio > 85) one of the
  product's attributes, or appears verbatim in its title, bullet points or description.
- option match: a goal option fuzzy-matches (> 85) a chosen option, both reduced to the
  first colour word they contain (:func:`normalize_color`).

Example:
    >>> product = {"query": "shampoo", "product_category": "Beauty › Hair Care › Shampoo",
    ...            "name": "Lavender Shampoo", "Title": "Lavender Shampoo",
    ...            "Attributes": ["sulfate free"], "BulletPoints": [], "Description": ""}
    >>> goal = {"query": "shampoo", "product_category": "Beauty › Hair Care › Shampoo",
    ...         "name": "Lavender Shampoo", "attributes": ["sulfate free"],
    ...         "goal_options": {"size": "12 oz"}, "price_upper": 20.0}
    >>> get_reward(product, goal, price=15.0, options={"size": "12 oz"}).total
    1.0
    >>> get_reward(product, goal, price=25.0, options={"size": "8 oz"}).total
    0.3333333333333333
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from thefuzz import fuzz

from agentenvs.webshop.data import Goal, Product
from agentenvs.webshop.nouns import NounExtractor, title_nouns

MATCH_THRESHOLD = 85
CATEGORY_SEPARATOR = "›"

# The original's colour vocabulary, in its (alphabetical) order: the first one contained wins.
COLOR_WORDS = tuple(
    """alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze
    brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas
    coffee cognac copper coral cranberry cream crystal dark denim eggplant elephant espresso
    fuchsia gold granite grape graphite grass gray green grey heather indigo ivory ivy khaki
    lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint mocha
    multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple
    rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone
    stonewash sunflower tan taupe teal tiger turquoise violet walnut wheat white wine
    yellow""".split()
)


def normalize_color(option: Any) -> Any:
    """The first colour word ``option`` contains, else ``option`` unchanged.

    A string is searched for colour substrings; a ``(name, value)`` pair (a synthetic
    goal's option) for a colour equal to one of its parts, as in the original.

    >>> normalize_color("light blue | navy")
    'blue'
    >>> normalize_color("x-large")
    'x-large'
    """
    for color in COLOR_WORDS:
        if color in option:
            return color
    return option


def fuzzy_match(left: Any, right: Any) -> int:
    """thefuzz's token-set ratio (0-100, after lower-casing and stripping punctuation)."""
    return fuzz.token_set_ratio(left, right)


@dataclass(frozen=True)
class TypeReward:
    """The type reward and what it was computed from."""

    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


@dataclass(frozen=True)
class Reward:
    """A purchase's reward and its parts (``r_option``/``r_price`` None when not scored)."""

    total: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: float | None
    w_att: float
    w_option: float | None
    w_price: float | None
    query_match: bool
    category_match: bool
    title_score: float
    num_attribute_matches: int
    num_option_matches: int

    def as_info(self) -> dict[str, Any]:
        """The parts as a plain dict (for ``info``)."""
        return asdict(self)


def _field(record: Product | Goal | Mapping[str, Any], name: str) -> Any:
    """Reads a product/goal field from our dataclasses or from the original's dicts."""
    if isinstance(record, Mapping):
        return record[name]
    aliases = {
        "name": "title",
        "Title": "title",
        "Attributes": "attributes",
        "BulletPoints": "bullet_points",
        "Description": "description",
    }
    return getattr(record, aliases.get(name, name) if isinstance(record, Product) else name)


def get_type_reward(
    purchased: Product | Mapping[str, Any], goal: Goal | Mapping[str, Any], nouns: NounExtractor = title_nouns
) -> TypeReward:
    """Whether the purchase is the right kind of product (see the module docstring)."""
    query_match = _field(purchased, "query") == _field(goal, "query")
    purchased_levels = {level.strip() for level in _field(purchased, "product_category").split(CATEGORY_SEPARATOR)}
    goal_levels = {level.strip() for level in _field(goal, "product_category").split(CATEGORY_SEPARATOR)}
    category_match = len(purchased_levels & goal_levels) >= 2
    desired = nouns(_field(goal, "name"))
    bought = nouns(_field(purchased, "name"))
    title_score = 0.2 if not desired else len(set(bought) & set(desired)) / len(desired)
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type, query_match, category_match, title_score)


def get_attribute_reward(purchased: Product | Mapping[str, Any], goal: Goal | Mapping[str, Any]) -> tuple[float, int]:
    """(share of goal attributes matched, number matched)."""
    goal_attributes = list(_field(goal, "attributes"))
    product_attributes = list(_field(purchased, "Attributes"))
    title = _field(purchased, "Title").lower()
    bullets = " ".join(_field(purchased, "BulletPoints")).lower()
    description = _field(purchased, "Description").lower()
    matches = 0
    for wanted in goal_attributes:
        if any(fuzzy_match(have, wanted) > MATCH_THRESHOLD for have in product_attributes):
            matches += 1
        elif wanted in title or wanted in bullets or wanted in description:
            matches += 1
    return matches / len(goal_attributes), matches


def _goal_option_items(goal_options: Mapping[str, str] | Iterable[str]) -> list[Any]:
    return list(goal_options.items()) if isinstance(goal_options, Mapping) else list(goal_options)


def get_option_reward(
    chosen: Iterable[str], goal_options: Mapping[str, str] | Iterable[str]
) -> tuple[float | None, int]:
    """(share of goal options matched by a chosen option, number matched); None share without goal options."""
    chosen_normalized = [normalize_color(option) for option in chosen]
    wanted_normalized = [normalize_color(option) for option in _goal_option_items(goal_options)]
    matches = sum(
        1
        for wanted in wanted_normalized
        if any(fuzzy_match(have, wanted) > MATCH_THRESHOLD for have in chosen_normalized)
    )
    share = matches / len(wanted_normalized) if wanted_normalized else None
    return share, matches


def get_reward(
    purchased: Product | Mapping[str, Any],
    goal: Goal | Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    nouns: NounExtractor = title_nouns,
) -> Reward:
    """The reward for buying ``purchased`` at ``price`` with ``options`` chosen, against ``goal``."""
    type_reward = get_type_reward(purchased, goal, nouns)
    price_upper = float(_field(goal, "price_upper"))
    r_price = float(price <= price_upper) if price_upper > 0 else None
    r_att, attribute_matches = get_attribute_reward(purchased, goal)
    goal_options = _field(goal, "goal_options")
    r_option, option_matches = get_option_reward(list(options.values()), goal_options)
    num_attributes, num_options = len(_field(goal, "attributes")), len(goal_options)
    denominator = num_attributes + num_options + 1
    total = (attribute_matches + option_matches + (r_price or 0.0)) / denominator * type_reward.r_type
    return Reward(
        total=total,
        r_type=type_reward.r_type,
        r_att=r_att,
        r_option=r_option,
        r_price=r_price,
        w_att=num_attributes / denominator,
        w_option=num_options / denominator if r_option is not None else None,
        w_price=1 / denominator if r_price is not None else None,
        query_match=type_reward.query_match,
        category_match=type_reward.category_match,
        title_score=type_reward.title_score,
        num_attribute_matches=attribute_matches,
        num_option_matches=option_matches,
    )
