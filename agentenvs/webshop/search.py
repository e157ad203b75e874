"""Product search: BM25 over the text the original indexes for each product.

The original (pyserini/Lucene) indexes, per product, the lower-cased title, full
description, first bullet point and option text (``name: v1, v2, and name: ...``) and
returns the top 50 ASINs. Here the same documents go to the in-process BM25 retriever of
:mod:`agentenvs.core.retrieval` (``bm25s``, Lucene scoring, English stemming and stop
words), so no Java is needed.

Example:
    >>> from agentenvs.webshop.data import clean_products
    >>> from agentenvs.webshop.generator import generate_catalog
    >>> catalog = generate_catalog(40, seed=1)
    >>> products = clean_products(catalog.raw_products, catalog.annotations)
    >>> search = ProductSearch(products, cache=False)
    >>> search.search(products[3].title)[0] == products[3].asin
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from agentenvs.core.retrieval import BM25Retriever, Passage
from agentenvs.webshop.data import Product

SEARCH_RETURN_N = 50


def product_document(product: Product) -> str:
    """The indexed text: title, description, first bullet point and options, lower-cased."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.options.items())
    first_bullet = product.bullet_points[0] if product.bullet_points else ""
    return " ".join([product.title, product.description, first_bullet, option_text]).lower()


class ProductSearch:
    """BM25 search over products, returning ASINs best first.

    Args:
        products: The catalog.
        cache: Whether to cache the index on disk (keyed by the documents' content).
    """

    def __init__(self, products: Sequence[Product], *, cache: bool = True) -> None:
        passages = [Passage(product.asin, "", product_document(product)) for product in products]
        self._retriever = BM25Retriever(passages, cache=cache)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        """ASINs of the top-``k`` products for ``query`` (fewer when few share a term)."""
        return [hit.passage.id for hit in self._retriever.search(query.lower(), k)]
