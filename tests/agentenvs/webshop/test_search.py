"""The indexed product text and BM25 product search."""

from __future__ import annotations

from agentenvs.webshop.data import Product
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.pages import page_text_rich
from agentenvs.webshop.search import SEARCH_RETURN_N, ProductSearch, product_document


def product(asin: str, title: str, **overrides) -> Product:
    fields = dict(
        asin=asin,
        title=title,
        category="c",
        query="q",
        product_category="A › B",
        pricing=(1.0,),
        price_tag="$1.0",
        options={"color": ["Red", "blue"], "size": ["xl"]},
        attributes=[],
        bullet_points=["First Bullet", "second bullet is not indexed"],
        description="A Description.",
    )
    fields.update(overrides)
    return Product(**fields)


def test_product_document_is_the_originals_indexed_text():
    assert product_document(product("B1", "Wool Socks")) == (
        "wool socks a description. first bullet color: red, blue, and size: xl"
    )
    assert product_document(product("B2", "Cap", bullet_points=[], options={})) == "cap a description.  "


def test_search_ranks_and_limits():
    products = [product(f"B{i}", f"cotton shirt number{i}") for i in range(80)]
    products.append(product("BX", "wool socks", description="warm wool"))
    search = ProductSearch(products, cache=False)
    assert search.search("WOOL")[0] == "BX"
    assert len(search.search("cotton shirt")) == SEARCH_RETURN_N
    assert search.search("second") == []  # only the first bullet point is indexed
    assert search.search("zzz unknown") == []


def test_engine_caches_queries_and_handles_empty(engine: WebShopEngine):
    assert engine.top_asins("   ") == []
    first = engine.top_asins("ideal for anyone shopping")
    assert engine.top_asins("ideal for anyone shopping") is first


def test_visited_products_are_marked_on_results(engine: WebShopEngine):
    session = engine.session(engine.goals[0])
    session.step("search[ideal for anyone shopping]")
    asin = session.page.products[1].asin
    session.step(f"click[{asin}]")
    session.step("click[< Prev]")
    rich = page_text_rich(session.page)
    assert f"[clicked button] {asin} [clicked button_]" in rich
    assert f"[button] {session.page.products[0].asin} [button_]" in rich
