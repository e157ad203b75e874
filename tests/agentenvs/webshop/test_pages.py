"""Page renderings: the text mode is the HTML page's visible text, as in the original."""

from __future__ import annotations

from html.parser import HTMLParser

from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.pages import Page, clickables, page_html, page_text, page_text_compact, page_text_rich


class VisibleText(HTMLParser):
    """Visible text pieces of an HTML page (the original's rule: skip style, script, head, title)."""

    hidden = {"style", "script", "head", "title"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.pieces: list[str] = []
        self.hidden_depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("meta", "link", "input", "br"):
            return
        self.stack.append(tag)
        if tag in self.hidden or ("hidden", None) in attrs:
            self.hidden_depth += 1

    def handle_endtag(self, tag):
        if tag in ("meta", "link", "input", "br"):
            return
        popped = self.stack.pop()
        if popped in self.hidden or popped == "table":
            self.hidden_depth = max(0, self.hidden_depth - 1)

    def handle_data(self, data):
        if not self.hidden_depth and data.strip():
            self.pieces.append(data.strip())


def visible(html: str) -> str:
    parser = VisibleText()
    parser.feed(html)
    return " [SEP] ".join(parser.pieces)


def pages_of_every_kind(engine: WebShopEngine) -> list[Page]:
    goal = next(g for g in engine.goals if g.goal_options)
    session = engine.session(goal, session_id="s1")
    pages = [session.page]
    session.step("search[ideal for anyone shopping]")
    session.step("click[Next >]")
    pages.append(session.page)
    session.step(f"click[{session.page.products[3].asin}]")
    product = engine.products[session.asin]
    for values in product.options.values():
        session.step(f"click[{values[-1]}]")
    pages.append(session.page)
    for sub in ("Description", "Features", "Reviews"):
        session.step(f"click[{sub}]")
        pages.append(session.page)
        session.step("click[< Prev]")
    session.step("click[Buy Now]")
    pages.append(session.page)
    return pages


def test_text_is_the_visible_text_of_the_html(engine: WebShopEngine):
    for page in pages_of_every_kind(engine):
        assert visible(page_html(page)) == page_text(page), page.kind


def test_search_and_item_text(engine: WebShopEngine):
    page = Page(kind="search", instruction="i want socks")
    assert page_text(page) == "WebShop [SEP] Instruction: [SEP] i want socks [SEP] Search"
    product = next(p for p in engine.products.values() if len(p.options) == 2)
    item = engine.item_page("i want socks", product.asin, "socks", 1, {})
    (name1, values1), (name2, values2) = product.options.items()
    expected = [
        "Instruction:",
        "i want socks",
        "Back to Search",
        "< Prev",
        name1,
        *values1,
        name2,
        *values2,
        product.title,
        f"Price: {product.price_tag}",
        f"Rating: {product.rating}",
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
    ]
    assert page_text(item) == " [SEP] ".join(expected)
    assert list(clickables(item)) == [
        "back to search",
        "< prev",
        *values1,
        *values2,
        "description",
        "features",
        "reviews",
        "buy now",
    ]


def test_text_rich_marks_buttons_and_choices(engine: WebShopEngine):
    product = next(p for p in engine.products.values() if p.options)
    name, values = next(iter(product.options.items()))
    item = engine.item_page("i want it", product.asin, "it", 1, {name: values[0]})
    rich = page_text_rich(item)
    assert rich.startswith(f"You have clicked {values[0]}.\n")
    assert f"  [clicked button] {values[0]} [clicked button_]\n" in rich
    assert f"  [button] {values[1]} [button_]\n" in rich and "[button] Buy Now [button_]\n" in rich


def test_text_compact_shows_every_piece_a_line_per_part(engine: WebShopEngine):
    product = next(p for p in engine.products.values() if len(p.options) >= 2)
    (name1, values1), (name2, values2) = list(product.options.items())[:2]
    item = engine.item_page("i want it", product.asin, "it", 1, {name1: values1[1]})
    lines = page_text_compact(item).split("\n")
    assert lines[:2] == ["Instruction: i want it", "Back to Search | < Prev"]
    assert lines[2] == f"{name1}: " + " | ".join(f"{v} (chosen)" if i == 1 else v for i, v in enumerate(values1))
    assert lines[3] == f"{name2}: " + " | ".join(values2)  # nothing chosen in this group
    assert lines[-2] == "Description | Features | Reviews | Buy Now"
    unchosen = [name for name in product.options if name != name1]
    assert lines[-1] == f"Not chosen yet: {', '.join(unchosen)}"  # the state the (chosen) marks hold, said once
    every = {name: values[0] for name, values in product.options.items()}
    assert page_text_compact(engine.item_page("i want it", product.asin, "it", 1, every)).endswith("\nOptions chosen")
    bare = next(p for p in engine.products.values() if not p.options)
    # A product with nothing to choose has no such line.
    assert page_text_compact(engine.item_page("i want it", bare.asin, "it", 1, {})).endswith("Buy Now")
    # The same visible text as the original's text mode, bar the markers and separators.
    plain = page_text_compact(engine.item_page("i want it", product.asin, "it", 1, {}))
    for piece in page_text(engine.item_page("i want it", product.asin, "it", 1, {})).split(" [SEP] "):
        assert piece.rstrip(":") in plain
    results = engine.results_page("i want it", "it", 1)
    listed = page_text_compact(results).split("\n")[2:]
    assert listed == [f"{p.asin} | {p.title} | {p.price_tag}" for p in results.products]


def test_html_escapes_and_links_carry_the_session(engine: WebShopEngine):
    page = Page(kind="search", instruction="<script>alert(1)</script>", session_id="a b/c")
    html = page_html(page)
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert 'action="/a%20b%2Fc"' in html
