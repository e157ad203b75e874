"""A snapshot of another env, world or task set, or a corrupted or forged one: a clear error or the
truth, the env unchanged when refused; and a snapshot holds nothing privileged."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core import snapshots
from agentenvs.core.snapshots import EnvSnapshot, NonText


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
        ({"actions": ["search[x]"]}, TypeError, "EnvSnapshot.actions must be tuple, got list"),
        ({"actions": ("search[x]", 3)}, TypeError, r"EnvSnapshot.actions\[1\] must be a str or NonText, got int"),
        ({"actions": (NonText(3),)}, TypeError, r"EnvSnapshot.actions\[0\] must be a str or NonText"),  # type: ignore[arg-type]
        ({"actions": ("wait",) * 16}, ValueError, "EnvSnapshot.actions must hold at most max_turns=15 actions, got 16"),
        ({"format": 1}, ValueError, "EnvSnapshot.format must be 2"),
        ({"format": True}, TypeError, "EnvSnapshot.format must be int, got bool"),
        ({"task_id": 3}, TypeError, "EnvSnapshot.task_id must be str, got int"),
        ({"rng_state": {"bit_generator": "MT19937"}}, ValueError, "EnvSnapshot.rng_state must be numpy's PCG64"),
        ({"rng_state": {"bit_generator": "PCG64", "state": 3}}, ValueError, "EnvSnapshot.rng_state"),
        ({"episode_rng_state": {}}, ValueError, "EnvSnapshot.episode_rng_state must be numpy's PCG64"),
        (  # numpy raises OverflowError for a negative state
            {"rng_state": {"bit_generator": "PCG64", "state": {"state": -1, "inc": 1}, "has_uint32": 0, "uinteger": 0}},
            ValueError,
            "EnvSnapshot.rng_state must be numpy's PCG64 state dict",
        ),
        ({"rng_seed": "0"}, TypeError, "EnvSnapshot.rng_seed must be int or None, got str"),
        ({"next_task_id": "no such task"}, ValueError, "EnvSnapshot.next_task_id must be one of this env's tasks"),
    ],
)
def test_a_corrupted_or_forged_field_is_named(changes: dict[str, Any], error: type[Exception], match: str) -> None:
    env, snapshot = _on_an_item_page()
    _refused(env, _forged(snapshot, **changes), error, match)


def test_actions_after_the_episode_ends_are_refused_and_a_fresh_env_stays_fresh() -> None:
    env, snapshot = _on_an_item_page()
    env.step("click[buy now]")
    bought = env.unwrapped.snapshot()
    forged = _forged(bought, actions=(*bought.actions, "search[more]"))
    _refused(env, forged, ValueError, "EnvSnapshot.actions must end where the episode ends")
    fresh = gym.make("WebShop-v0", num_products=100, split="all", cache_index=False).unwrapped
    with pytest.raises(ValueError, match="must end where the episode ends"):
        fresh.restore(forged)
    with pytest.raises(gym.error.ResetNeeded):
        fresh.snapshot()  # still never reset: nothing of the forged episode was left behind
    assert fresh.restore(snapshot)[1]["turn"] == 2


def test_forged_claims_cannot_be_made_a_forged_episode_gets_the_truth() -> None:
    """A snapshot holds no outcome (won, observation, info) to forge: forged actions are replayed, so
    the restore reports what the env computes for them, as a real episode would have."""
    assert not {"won", "terminated", "truncated", "observation", "last_info", "world"} & {
        field.name for field in dataclasses.fields(EnvSnapshot)
    }
    env, snapshot = _on_an_item_page()
    forged = _forged(snapshot, actions=("click[buy now]", "click[buy now]"))  # not clickable on the search page
    observation, info = env.unwrapped.restore(forged)
    truth = _shop()
    for action in forged.actions:
        expected, reward, terminated, _, expected_info = truth.step(action)
    assert (observation, info) == (expected, expected_info)
    assert not info["won"] and not info["action_valid"] and reward == 0.0 and not terminated


def test_a_default_envs_snapshot_holds_no_privileged_data_and_a_privileged_one_leaks_none_into_a_default_env() -> None:
    privileged = _searchqa(privileged=True)
    gold = privileged.unwrapped.questions[privileged.unwrapped.task_id].answers
    privileged.step("<search>capital</search>")
    text = privileged.unwrapped.snapshot().to_json()
    assert gold and all(answer not in text for answer in gold)
    privileged.step(f"<answer>{gold[0]}</answer>")
    answered = privileged.unwrapped.snapshot()  # the agent's own answer is its only trace of the gold
    default = _searchqa()
    observation, info = default.unwrapped.restore(answered)
    assert "privileged" not in info and "gold_answers" not in info and info["won"]
    assert "privileged" in privileged.unwrapped.restore(answered)[1]


def test_json_round_trip_is_equal_and_restores_elsewhere() -> None:
    env, _ = _on_an_item_page()
    last = env.step(3)  # not text: kept as NonText, replayed as the same invalid action
    snapshot = env.unwrapped.snapshot()
    assert snapshot.actions[-1] == NonText("int") and not last[4]["action_valid"]
    again = EnvSnapshot.from_json(snapshot.to_json())
    assert again == snapshot
    observation, info = _shop().unwrapped.restore(again)
    assert (observation, info) == (last[0], last[4])


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        (b"{}", TypeError, "text must be a str, got bytes"),
        ("{", ValueError, "not JSON"),
        ("[" * 100_000 + "]" * 100_000, ValueError, "nests too deeply"),
        ("[]", ValueError, "must be an object with the fields"),
        ('{"format": 2}', ValueError, "must be an object with the fields"),
    ],
)
def test_bad_json_is_named(text: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        EnvSnapshot.from_json(text)


def test_bad_json_actions_and_overlong_text_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _, snapshot = _on_an_item_page()
    fields = json.loads(snapshot.to_json())
    with pytest.raises(ValueError, match=r"EnvSnapshot.actions\[0\] must be a string or"):
        EnvSnapshot.from_json(json.dumps({**fields, "actions": [{"non_text": 3}]}))
    with pytest.raises(ValueError, match="EnvSnapshot.actions must be a JSON list"):
        EnvSnapshot.from_json(json.dumps({**fields, "actions": "search[x]"}))
    monkeypatch.setattr(snapshots, "MAX_JSON_CHARS", 100)
    with pytest.raises(ValueError, match="text must be at most 100 characters"):
        EnvSnapshot.from_json(snapshot.to_json())
