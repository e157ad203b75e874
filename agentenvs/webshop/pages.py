"""The shop's pages: what each shows, its buttons, and its text and HTML forms.

A :class:`Page` is one screen of the original site: the search page, a results page, an
item page, an item's ``Description``/``Features``/``Reviews``/``Attributes`` sub-page, or
the page after ``Buy Now``. Three renderings share one page model:

- :func:`page_text`: the original text env's ``text`` mode, the page's visible text
  pieces joined by ``" [SEP] "``;
- :func:`page_text_rich`: its ``text_rich`` mode, one piece a line with clickables marked
  ``[button] … [button_]`` (chosen options and visited products ``[clicked button]``);
- :func:`page_text_compact`: ours, not the original's: the same pieces grouped a line per
  part of the page and joined by ``" | "`` (a product a line, an option group a line, chosen
  options marked ``(chosen)``, as ``text_rich`` marks them), for small models on a CPU:
  about 30 % fewer tokens than ``text``, whose ``" [SEP] "`` alone costs four. An item page
  with options ends with a line that says which option groups are still unchosen
  (``Not chosen yet: color, size``) or that all are chosen (``Options chosen``): the state a
  ``(chosen)`` mark holds mid-line, said where a small model reads it (a 135M model cloned
  from the expert told the two item pages apart far better with it);
- :func:`page_html`: the HTML page the Flask shop serves (its visible text is
  :func:`page_text`'s pieces, which the tests check).

Example:
    >>> page = Page(kind="search", instruction="i need a red hoodie")
    >>> page_text(page)
    'WebShop [SEP] Instruction: [SEP] i need a red hoodie [SEP] Search'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Literal
from urllib.parse import quote

from agentenvs.webshop.data import Product

PageKind = Literal["search", "results", "item", "sub", "done"]
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
PRODUCT_WINDOW = 10

BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"


CLICKABLE_KINDS = ("back", "next", "prev", "product", "option", "sub", "buy")
"""The kinds of what a page offers to click."""


@dataclass(frozen=True)
class Clickable:
    """A button, product link or option on a page.

    Attributes:
        text: The shown text (what ``click[...]`` names; matched case-insensitively).
        kind: One of :data:`CLICKABLE_KINDS`.
        option_name: For an option, the option group it sets.
    """

    text: str
    kind: str
    option_name: str = ""


@dataclass
class Page:
    """One screen of the shop (fields unused by a kind keep their defaults).

    Attributes:
        kind: Which screen.
        instruction: The goal instruction shown on every page.
        session_id: The session the page belongs to (used in links).
        keywords: The search query (results, item and sub-pages link back to it).
        page_number: The results page number.
        total: Number of search results.
        products: The products on this results page.
        product: The product of an item page or sub-page.
        options: Options chosen on the item page.
        sub_page: Which sub-page (one of :data:`SUB_PAGES`).
        show_attrs: Whether item pages offer the ``Attributes`` sub-page.
        visited: ASINs opened this episode (for ``text_rich``).
        reward: The purchase's reward (done page).
        reward_info: The reward's parts (done page).
    """

    kind: PageKind
    instruction: str
    session_id: str = "fixed"
    keywords: str = ""
    page_number: int = 1
    total: int = 0
    products: list[Product] = field(default_factory=list)
    product: Product | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str = ""
    show_attrs: bool = False
    visited: frozenset[str] = frozenset()
    reward: float = 0.0
    reward_info: dict[str, object] = field(default_factory=dict)


def clickables(page: Page) -> dict[str, Clickable]:
    """The page's clickables keyed by lower-cased text (later options win ties, as in the original)."""
    found: list[Clickable] = []
    if page.kind in ("results", "item", "sub"):
        found.append(Clickable(BACK_TO_SEARCH, "back"))
    if page.kind == "results":
        if page.page_number > 1:
            found.append(Clickable(PREV_PAGE, "prev"))
        found.append(Clickable(NEXT_PAGE, "next"))
        found.extend(Clickable(product.asin, "product") for product in page.products)
    elif page.kind == "item":
        assert page.product is not None
        found.append(Clickable(PREV_PAGE, "prev"))
        for name, values in page.product.options.items():
            found.extend(Clickable(value, "option", name) for value in values)
        found.extend(Clickable(name, "sub") for name in _sub_pages(page))
        found.append(Clickable(BUY_NOW, "buy"))
    elif page.kind == "sub":
        found.append(Clickable(PREV_PAGE, "prev"))
    return {clickable.text.lower(): clickable for clickable in found}


def _sub_pages(page: Page) -> tuple[str, ...]:
    return SUB_PAGES if page.show_attrs else SUB_PAGES[:3]


def _format_reward(reward: float) -> str:
    return f"{reward:.4f}".rstrip("0").rstrip(".") if reward not in (0.0, 1.0) else f"{reward:.1f}"


# -- text -----------------------------------------------------------------------------------
def page_pieces(page: Page) -> list[tuple[str, str]]:
    """The page's visible text pieces in order, each with its role (``text``, a clickable kind)."""
    pieces: list[tuple[str, str]] = []
    if page.kind == "search":
        return [("text", "WebShop"), ("text", "Instruction:"), ("text", page.instruction), ("search", "Search")]
    if page.kind == "done":
        return [
            ("text", "Thank you for shopping with us!"),
            ("text", "Your score (min 0.0, max 1.0)"),
            ("text", _format_reward(page.reward)),
        ]
    pieces += [("text", "Instruction:"), ("text", page.instruction), ("back", BACK_TO_SEARCH)]
    if page.kind == "results":
        pieces.append(("text", f"Page {page.page_number} (Total results: {page.total})"))
        if page.page_number > 1:
            pieces.append(("prev", PREV_PAGE))
        pieces.append(("next", NEXT_PAGE))
        for listed in page.products:
            pieces += [("product", listed.asin), ("text", listed.title), ("text", listed.price_tag)]
        return [(role, text) for role, text in pieces if text.strip()]
    product = page.product
    assert product is not None
    pieces.append(("prev", PREV_PAGE))
    if page.kind == "item":
        for name, values in product.options.items():
            pieces.append(("text", name))
            pieces += [("option", value) for value in values]
        pieces += [
            ("text", product.title),
            ("text", f"Price: {product.price_tag}"),
            ("text", f"Rating: {product.rating}"),
        ]
        pieces += [("sub", name) for name in _sub_pages(page)]
        pieces.append(("buy", BUY_NOW))
    elif page.sub_page == "Description":
        pieces.append(("text", product.description))
    elif page.sub_page == "Features":
        pieces += [("text", bullet) for bullet in product.bullet_points]
    elif page.sub_page == "Reviews":
        for review in product.reviews:
            pieces += [
                ("text", f'"{review.get("title", "")}"'),
                ("text", str(review.get("score", ""))),
                ("text", str(review.get("body", ""))),
            ]
    elif page.sub_page == "Attributes":
        pieces += [("text", attribute) for attribute in product.attributes]
        pieces += [("text", product.category), ("text", product.query), ("text", product.product_category)]
    return [(role, text.strip()) for role, text in pieces if text.strip()]


def page_text(page: Page) -> str:
    """The ``text`` observation: visible pieces joined by ``" [SEP] "``."""
    return " [SEP] ".join(text for _, text in page_pieces(page))


def page_text_compact(page: Page) -> str:
    """The ``text_compact`` observation: the visible pieces a line per part of the page.

    >>> page_text_compact(Page(kind="search", instruction="i need a red hoodie"))
    'Instruction: i need a red hoodie\\nSearch'
    """
    head = f"Instruction: {page.instruction}"
    if page.kind == "search":
        return f"{head}\nSearch"
    if page.kind == "done":
        return f"Thank you for shopping with us! Your score (min 0.0, max 1.0): {_format_reward(page.reward)}"
    if page.kind == "results":
        buttons = [BACK_TO_SEARCH, *([PREV_PAGE] if page.page_number > 1 else []), NEXT_PAGE]
        lines = [head, f"Page {page.page_number} (Total results: {page.total}) | {' | '.join(buttons)}"]
        lines += [f"{listed.asin} | {listed.title} | {listed.price_tag}" for listed in page.products]
        return "\n".join(lines)
    product = page.product
    assert product is not None
    lines = [head, f"{BACK_TO_SEARCH} | {PREV_PAGE}"]
    if page.kind == "item":
        for name, values in product.options.items():
            shown = [f"{value} (chosen)" if page.options.get(name) == value else value for value in values]
            lines.append(f"{name}: {' | '.join(shown)}")
        lines.append(f"{product.title} | Price: {product.price_tag} | Rating: {product.rating}")
        lines.append(" | ".join([*_sub_pages(page), BUY_NOW]))
        if product.options:
            unchosen = [name for name in product.options if name not in page.options]
            lines.append(f"Not chosen yet: {', '.join(unchosen)}" if unchosen else "Options chosen")
    else:
        lines.append(" | ".join(text for role, text in page_pieces(page)[4:]))  # after instruction, back, prev
    return "\n".join(line for line in lines if line.strip())


def page_text_rich(page: Page) -> str:
    """The ``text_rich`` observation: a piece a line, clickables marked."""
    lines: list[str] = []
    clicked_note: list[str] = []
    chosen = set(page.options.values())
    for role, text in page_pieces(page):
        if role == "option":
            if text in chosen:
                lines.append(f"  [clicked button] {text} [clicked button_]")
                clicked_note.append(f"You have clicked {text}.")
            else:
                lines.append(f"  [button] {text} [button_]")
        elif role == "product":
            marker = "clicked button" if text in page.visited else "button"
            lines.append(f"\n[{marker}] {text} [{marker}_]")
        elif role == "text":
            lines.append(text)
        else:
            lines.append(f"[button] {text} [button_]")
    return "".join(note + "\n" for note in clicked_note[::-1]) + "".join(line + "\n" for line in lines)


# -- html -----------------------------------------------------------------------------------
def _q(text: str) -> str:
    return quote(text, safe="")


def options_token(options: dict[str, str]) -> str:
    """Options as they travel in URLs: compact JSON."""
    return json.dumps(options, separators=(",", ":"), sort_keys=True)


def search_url(session_id: str) -> str:
    return f"/{_q(session_id)}"


def results_url(session_id: str, keywords: str, page_number: int) -> str:
    return f"/search_results/{_q(session_id)}/{_q(keywords)}/{page_number}"


def item_url(session_id: str, asin: str, keywords: str, page_number: int, options: dict[str, str]) -> str:
    return f"/item_page/{_q(session_id)}/{_q(asin)}/{_q(keywords)}/{page_number}/{_q(options_token(options))}"


def sub_page_url(
    session_id: str, asin: str, keywords: str, page_number: int, sub_page: str, options: dict[str, str]
) -> str:
    return (
        f"/item_sub_page/{_q(session_id)}/{_q(asin)}/{_q(keywords)}/{page_number}/{_q(sub_page)}/"
        f"{_q(options_token(options))}"
    )


def done_url(session_id: str, asin: str, options: dict[str, str]) -> str:
    return f"/done/{_q(session_id)}/{_q(asin)}/{_q(options_token(options))}"


_STYLE = """body{font-family:sans-serif;margin:2em auto;max-width:60em;color:#222}
.btn{padding:.4em .9em;margin:.2em;border:1px solid #2a6;background:#eef;cursor:pointer}
.purchase{background:#fc3}.product{border-top:1px solid #ccc;padding:.5em 0}
.radio-toolbar input{display:none}.radio-toolbar label{display:inline-block;padding:.3em .7em;margin:.2em;
border:1px solid #888;cursor:pointer}.radio-toolbar input:checked+label{background:#2a6;color:#fff}
form{display:inline}#instruction-text{background:#f6f6f6;padding:.5em}"""

_OPTION_SCRIPT = """<script>
document.querySelectorAll('input[type=radio]').forEach(function (radio) {
  radio.addEventListener('click', function () { window.location.href = radio.dataset.url; });
});
</script>"""


def _button(url: str, text: str, classes: str = "btn") -> str:
    return f'<form method="post" action="{escape(url)}"><button type="submit" class="{classes}">{escape(text)}</button></form>'


def page_html(page: Page) -> str:
    """The page as HTML (links carry the session id, query, page number and options)."""
    sid = page.session_id
    body: list[str] = []
    instruction = f'<div id="instruction-text"><h4>Instruction:<br>{escape(page.instruction)}</h4></div>'
    if page.kind == "search":
        body += [
            '<div id="logo"><h2>WebShop</h2></div>',
            instruction,
            f'<form method="post" action="{escape(search_url(sid))}">'
            '<input id="search_input" type="text" name="search_query" placeholder="Search..." maxlength="500" required>'
            '<button class="btn" type="submit">Search</button></form>',
        ]
    elif page.kind == "done":
        details = "".join(
            f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in page.reward_info.items()
        )
        body += [
            '<div id="thankyou"><h1>Thank you for shopping with us!</h1></div>',
            f'<h3 id="reward">Your score (min 0.0, max 1.0)<pre>{_format_reward(page.reward)}</pre></h3>',
            f'<table id="reward_info" hidden>{details}</table>',
        ]
    else:
        body += [instruction, f"<div>{_button(search_url(sid), BACK_TO_SEARCH)}</div>"]
        if page.kind == "results":
            body.append(f"<h3>Page {page.page_number} (Total results: {page.total})</h3>")
            if page.page_number > 1:
                body.append(_button(results_url(sid, page.keywords, page.page_number - 1), PREV_PAGE))
            body.append(_button(results_url(sid, page.keywords, page.page_number + 1), NEXT_PAGE))
            for listed in page.products:
                link = item_url(sid, listed.asin, page.keywords, page.page_number, {})
                body.append(
                    f'<div class="product"><h4><a class="product-link" href="{escape(link)}">{escape(listed.asin)}</a></h4>'
                    f'<h4 class="product-title">{escape(listed.title)}</h4><h5 class="product-price">{escape(listed.price_tag)}</h5></div>'
                )
        else:
            product = page.product
            assert product is not None
            if page.kind == "item":
                body.append(f"<div>{_button(results_url(sid, page.keywords, page.page_number), PREV_PAGE)}</div>")
                for name, values in product.options.items():
                    radios = []
                    for index, value in enumerate(values):
                        url = item_url(
                            sid, product.asin, page.keywords, page.page_number, {**page.options, name: value}
                        )
                        checked = " checked" if page.options.get(name) == value else ""
                        radio_id = f"radio_{escape(name)}{index}"
                        radios.append(
                            f'<input type="radio" id="{radio_id}" name="{escape(name)}" value="{escape(value)}" '
                            f'data-url="{escape(url)}"{checked}><label for="{radio_id}">{escape(value)}</label>'
                        )
                    body.append(
                        f'<div class="option"><h4>{escape(name)}</h4><div class="radio-toolbar">{"".join(radios)}</div></div>'
                    )
                body += [
                    f"<h2>{escape(product.title)}</h2>",
                    f"<h4>Price: {escape(product.price_tag)}</h4>",
                    f"<h4>Rating: {escape(product.rating)}</h4>",
                ]
                body.append(
                    "<div>"
                    + "".join(
                        _button(
                            sub_page_url(sid, product.asin, page.keywords, page.page_number, name, page.options), name
                        )
                        for name in _sub_pages(page)
                    )
                    + "</div>"
                )
                body.append(f"<div>{_button(done_url(sid, product.asin, page.options), BUY_NOW, 'btn purchase')}</div>")
                body.append(_OPTION_SCRIPT)
            else:
                prev = item_url(sid, product.asin, page.keywords, page.page_number, page.options)
                body.append(f"<div>{_button(prev, PREV_PAGE)}</div>")
                pieces = page_pieces(page)
                after_prev = next(i for i, (role, _) in enumerate(pieces) if role == "prev") + 1
                texts = [text for _, text in pieces[after_prev:]]
                body.append(
                    '<div class="sub-page">'
                    + "".join(f'<p class="product-info">{escape(t)}</p>' for t in texts)
                    + "</div>"
                )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>WebShop</title><style>{_STYLE}</style>'
        f'<link rel="icon" href="data:,"></head><body>{"".join(body)}</body></html>'
    )
