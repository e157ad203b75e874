"""A small generated shop shared by the WebShop tests."""

from __future__ import annotations

import pytest

from agentenvs.webshop.engine import WebShopEngine


@pytest.fixture(scope="session")
def engine() -> WebShopEngine:
    return WebShopEngine.generated(num_products=300, seed=7, cache_index=False)
