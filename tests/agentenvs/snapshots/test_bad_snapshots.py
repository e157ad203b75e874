"""A snapshot of another env, world or task set, or a corrupted or forged one: a clear error, the env unchanged."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.snapshots import EnvSnapshot, LastInfo
from agentenvs.searchqa.env import SearchQAWorld
from agentenvs.webshop.engine import ShopState
from agentenvs.webshop.env import WebShopWorld


def _shop(**kwargs: Any) -> gym.Env:
    env = gym.make("WebShop-v0", **{"num_products": 100, "split": "all", "cache_index": False, **kwargs})
    env.reset(seed=0)
    return env


def _searchqa(**kwargs: Any) -> gym.Env:
    env = gym.make("SearchQA-v0", cache_index=False, **kwargs)
    env.reset(seed=0)
    return env


def _on_an_item_page() -> tuple[gym.Env, EnvSnapshot]:
    env = _shop()
    env.step("search[" + env.unwrapped.goal.instruction_text + "]")
    env.step("click[" + env.unwrapped.page.products[0].asin + "]")
    return env, env.unwrapped.snapshot()


def _forged(snapshot: EnvSnapshot, **changes: Any) -> EnvSnapshot:
    forged = pickle.loads(pickle.dumps(snapshot))
    for name, value in changes.items():  # frozen: a forger writes through object.__setattr__
        object.__setattr__(forged, name, value)
    return forged


def _refused(env: gym.Env, snapshot: Any, error: type[Exception], match: str) -> None:
    before = env.unwrapped.snapshot()
    with pytest.raises(error, match=match):
        env.unwrapped.restore(snapshot)
    assert env.unwrapped.snapshot() == before  # unchanged, and still usable:
    assert env.unwrapped.restore(before)[1]["turn"] == before.turn


def test_snapshot_before_the_first_reset_needs_a_reset() -> None:
    with pytest.raises(gym.error.ResetNeeded, match=r"call reset\(\) before snapshot\(\)"):
        gym.make("SearchQA-v0", cache_index=False).unwrapped.snapshot()


def test_an_object_that_is_not_a_snapshot_is_a_type_error() -> None:
    env, snapshot = _on_an_item_page()
    _refused(env, dataclasses.asdict(snapshot), TypeError, "snapshot must be an EnvSnapshot .* got dict")
    _refused(env, object.__new__(EnvSnapshot), TypeError, "EnvSnapshot.format is missing")


def test_a_snapshot_of_another_env_class_world_or_task_set_is_refused() -> None:
    shop, snapshot = _on_an_item_page()
    searchqa = _searchqa()
    _refused(searchqa, snapshot, ValueError, r"EnvSnapshot.env_class must be 'agentenvs.searchqa.env.SearchQAEnv'")
    _refused(_shop(num_products=60), snapshot, ValueError, "EnvSnapshot.scope must be this env's world")
    _refused(_searchqa(generator_seed=1), searchqa.unwrapped.snapshot(), ValueError, "EnvSnapshot.scope")
    test_split = _searchqa(split="test")
    _refused(
        test_split, searchqa.unwrapped.snapshot(), ValueError, "EnvSnapshot.task_id must be one of this env's tasks"
    )


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"turn": "1"}, TypeError, "EnvSnapshot.turn must be int, got str"),
        ({"turn": True}, TypeError, "EnvSnapshot.turn must be int, got bool"),
        ({"turn": 99}, ValueError, r"EnvSnapshot.turn must be an integer in \[0, max_turns=15\], got 99"),
        ({"terminated": True, "truncated": True}, ValueError, "EnvSnapshot.truncated must be False"),
        ({"format": 0}, ValueError, "EnvSnapshot.format must be 1"),
        ({"rng_state": {"bit_generator": "MT19937"}}, ValueError, "EnvSnapshot.rng_state must be numpy's PCG64"),
        ({"rng_state": {"bit_generator": "PCG64", "state": 3}}, ValueError, "EnvSnapshot.rng_state"),
        ({"last_info": LastInfo(action_span=(5, 2))}, ValueError, "EnvSnapshot.last_info.action_span"),
        ({"next_task_id": "no such task"}, ValueError, "EnvSnapshot.next_task_id must be one of this env's tasks"),
        ({"world": SearchQAWorld(("query",))}, TypeError, "EnvSnapshot.world must be a WebShopWorld"),
        ({"world": WebShopWorld(ShopState(page_kind="item", asin="B0NOSUCH"))}, ValueError, "ShopState.asin"),
        ({"world": WebShopWorld(ShopState(page_kind="checkout"))}, ValueError, "ShopState.page_kind"),
        ({"world": WebShopWorld(ShopState(page_number=0, page_kind="results"))}, ValueError, "ShopState.page_number"),
        ({"world": WebShopWorld(ShopState(visited=("B0NOSUCH",)))}, ValueError, "ShopState.visited"),
        ({"world": WebShopWorld(ShopState(page_kind="done"))}, ValueError, "ShopState.reward"),
        ({"world": WebShopWorld(ShopState(keywords=3))}, TypeError, "ShopState.keywords must be str"),  # type: ignore[arg-type]
    ],
)
def test_a_corrupted_or_forged_field_is_named(changes: dict[str, Any], error: type[Exception], match: str) -> None:
    env, snapshot = _on_an_item_page()
    _refused(env, _forged(snapshot, **changes), error, match)


def test_forged_options_must_be_the_open_products() -> None:
    env, snapshot = _on_an_item_page()
    assert isinstance(snapshot.world, WebShopWorld)
    state = dataclasses.replace(snapshot.world.session, options=(("color", "no such colour"),))
    _refused(env, _forged(snapshot, world=WebShopWorld(state)), ValueError, "ShopState.options must be")


def test_a_bad_searchqa_world_is_named() -> None:
    env = _searchqa()
    snapshot = env.unwrapped.snapshot()
    _refused(env, _forged(snapshot, world=SearchQAWorld(["a list"])), TypeError, "SearchQAWorld.searches must be")  # type: ignore[arg-type]
