"""The diagnostic envs: their contract, their dynamics and their exact credit against hand-computed cases."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.diagnostics import BifurcationEnv, KeyDoorEnv, UmbrellaEnv
from agentenvs.diagnostics.vocabulary import Vocabulary
from tests.support.snapshots import check_snapshot_sequences
from wrappers.discrete import DiscreteActions

IDS = ("Umbrella-v0", "KeyDoor-v0", "Bifurcation-v0")


def _wrong(info: dict[str, Any]) -> str:
    right = info["privileged"]["right_choice"]
    return next(item for item in info["admissible_actions"] if item != right)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env_passes(env_id: str) -> None:
    check_env(gym.make(env_id).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id", IDS)
def test_privileged_information_is_opt_in(env_id: str) -> None:
    _, info = gym.make(env_id).reset(seed=0)
    assert "privileged" not in info
    _, info = gym.make(env_id, privileged=True).reset(seed=0)
    assert sorted(info["privileged"]) == ["decisive_turns", "expert_plan", "goal_facts", "right_choice", "signal"]
    assert info["task"] == f"Signal: {info['privileged']['signal']}."


@pytest.mark.parametrize("env_id", IDS)
def test_the_expert_wins_and_the_uniform_demonstrator_is_at_chance(env_id: str) -> None:
    kwargs = {"p": 1.0, "q": 0.0} if env_id == "Bifurcation-v0" else {}
    for demonstrator, low, high in (("expert", 1.0, 1.0), ("uniform", 0.05, 0.6)):
        env = gym.make(env_id, demonstrator=demonstrator, **kwargs)
        wins = 0
        for episode in range(200):
            _, info = env.reset(seed=episode)
            done = False
            while not done:
                _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
                done = terminated or truncated
            wins += info["won"]
        assert low <= wins / 200 <= high, (demonstrator, wins)


def test_umbrella_pays_only_for_the_first_choice_and_fillers_pay_fair_coins() -> None:
    env = gym.make("Umbrella-v0", length=3, distractor=0.5, privileged=True)
    _, info = env.reset(seed=3)
    assert info["privileged"]["decisive_turns"] == [0]
    right = info["privileged"]["right_choice"]
    assert right.split()[0] == info["privileged"]["signal"] and right in info["admissible_actions"]
    _, r0, _, _, info = env.step(_wrong(info))
    assert r0 == 0.0 and info["privileged"]["right_choice"] == "" and info["privileged"]["expert_plan"] == []
    _, r1, _, _, info = env.step(info["admissible_actions"][0])
    _, r2, terminated, _, info = env.step(info["admissible_actions"][0])
    assert abs(r1) == 0.5 and abs(r2) == 0.5 and terminated and not info["won"]


def test_an_invalid_action_uses_the_turn_up_and_says_why() -> None:
    env = gym.make("Umbrella-v0", length=2, privileged=True)
    _, info = env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("a purple elephant")
    assert not info["action_valid"] and "is not one of" in observation and info["turn"] == 1 and not terminated
    _, reward, terminated, _, info = env.step(info["admissible_actions"][0])
    assert terminated and reward == 0.0 and not info["won"]


def test_umbrella_exact_credit_is_hand_computed() -> None:
    env = UmbrellaEnv(length=4)
    task = env.task_ids[0]
    right = env.task(task).stages[0].marked
    other = next(item for item in env.task(task).stages[0].items if item != right)
    credit = env.exact_credit(task, [right, "x", "y", "z"])
    assert credit.values == pytest.approx((1 / 3, 1.0, 1.0, 1.0))
    assert credit.advantages == pytest.approx((2 / 3, 0.0, 0.0, 0.0))
    assert credit.decisive == (True, False, False, False)
    credit = env.exact_credit(task, [other, "x"], marked_probabilities=[0.8, 0, 0, 0])
    assert credit.advantages == pytest.approx((-0.8, 0.0)) and credit.values == pytest.approx((0.8, 0.0))


def test_keydoor_exact_credit_is_hand_computed() -> None:
    # Two key turns, one apple turn (0.5), one door turn; the uniform policy: 1/3 per key or apple, 1/2 to open.
    env = KeyDoorEnv(key_turns=2, apple_turns=1, door_turns=1, apple_reward=0.5)
    task = env.task_ids[0]
    key = env.task(task).stages[0].marked
    # V(door, key) = 1/2; V(apple, key) = 1/6 + 1/2 = 2/3; V(apple, none) = 1/6.
    # Key turn 2 without the key: V = 1/3 * 2/3 + 2/3 * 1/6 = 1/3; key turn 1: V = 1/3 * 2/3 + 2/3 * 1/3 = 4/9.
    credit = env.exact_credit(task, ["nothing", key, "apple", "open the door"])
    assert credit.values == pytest.approx((4 / 9, 1 / 3, 2 / 3, 0.5))
    assert credit.action_values == pytest.approx((1 / 3, 2 / 3, 1.0, 1.0))
    assert credit.advantages == pytest.approx((1 / 3 - 4 / 9, 1 / 3, 1 / 3, 0.5))
    assert credit.decisive == (True, True, True, True)
    # With the key taken first, the second key turn no longer matters.
    credit = env.exact_credit(task, [key, key, "pebble", "wait"])
    assert credit.decisive == (True, False, True, True) and credit.advantages[1] == 0.0
    assert credit.advantages[3] == pytest.approx(-0.5)


def test_keydoor_opening_ends_the_episode_and_pays_only_with_the_signals_key() -> None:
    env = gym.make("KeyDoor-v0", key_turns=1, apple_turns=1, door_turns=2, privileged=True)
    _, info = env.reset(seed=1)
    _, _, _, _, info = env.step(_wrong(info))  # the wrong key
    assert info["privileged"]["expert_plan"] == ["apple"]  # opening no longer changes the return
    _, reward, _, _, info = env.step("apple")
    assert reward == 0.5
    _, reward, terminated, _, info = env.step("open the door")
    assert terminated and reward == 0.0 and not info["won"] and info["turn"] == 3


def test_bifurcation_exact_credit_and_its_outcome_odds() -> None:
    env = BifurcationEnv(length=3, fork_at=1, p=0.8, q=0.2, choices=2)
    task = env.task_ids[5]
    good = env.task(task).stages[1].marked
    credit = env.exact_credit(task, ["a", good, "b"])
    assert credit.values == pytest.approx((0.5, 0.5, 0.8)) and credit.advantages == pytest.approx((0, 0.3, 0))
    assert credit.decisive == (False, True, False)
    credit = env.exact_credit(task, ["a", "bad"], marked_probabilities=[0, 0.9, 0])
    assert credit.advantages == pytest.approx((0.0, 0.2 - 0.74))
    gym_env = gym.make("Bifurcation-v0", length=3, fork_at=1, p=0.8, q=0.2, choices=2)
    wins = 0
    for episode in range(400):
        gym_env.reset(seed=episode, options={"task_id": task})
        for action in ("x", good, "y"):
            *_, info = gym_env.step(action)
        wins += info["won"]
    assert 0.72 < wins / 400 < 0.88


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("Umbrella-v0", {"length": 4, "distractor": 1.0}),
        ("KeyDoor-v0", {"key_turns": 2, "apple_turns": 2, "door_turns": 2}),
        ("Bifurcation-v0", {"length": 4, "fork_at": 2, "p": 0.7, "q": 0.4, "choices": 3}),
    ],
)
def test_exact_start_values_match_the_mean_return_of_the_uniform_policy(env_id: str, kwargs: dict[str, Any]) -> None:
    env = gym.make(env_id, **kwargs)
    task = env.unwrapped.task_ids[2]
    rng = np.random.default_rng(0)
    returns = []
    for episode in range(3000):
        _, info = env.reset(seed=episode, options={"task_id": task})
        total, done = 0.0, False
        while not done:
            items = info["admissible_actions"]
            _, reward, terminated, truncated, info = env.step(items[int(rng.integers(len(items)))])
            total, done = total + reward, terminated or truncated
        returns.append(total)
    error = 4 * np.std(returns) / np.sqrt(len(returns))
    assert abs(np.mean(returns) - env.unwrapped.start_value(task)) < error


def test_eval_signals_never_appear_in_train_tasks_and_the_split_follows_the_generator_seed() -> None:
    train, held_out = UmbrellaEnv(split="train", num_tasks=64), UmbrellaEnv(split="eval", num_tasks=64)
    eval_words = set(Vocabulary.generate(0).signals["eval"])
    for task_id in train.task_ids:
        task = train.task(task_id)
        assert task.signal not in eval_words
        assert all(item.split()[0] not in eval_words for stage in task.stages for item in stage.items)
    assert all(held_out.task(task_id).signal in eval_words for task_id in held_out.task_ids)
    assert Vocabulary.generate(1).signals != Vocabulary.generate(0).signals
    assert train.task("train-3") == UmbrellaEnv(split="train").task("train-3")  # tasks are fixed by their id


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"length": 0}, "UmbrellaEnv.length must be an integer in \\[1, 100\\]"),
        ({"choices": 1}, "UmbrellaEnv.choices must be an integer in \\[2, 8\\]"),
        ({"distractor": -1.0}, "UmbrellaEnv.distractor"),
        ({"split": "test"}, "UmbrellaEnv.split must be one of"),
        ({"demonstrator": "random"}, "UmbrellaEnv.demonstrator must be one of"),
    ],
)
def test_bad_arguments_name_the_field(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        gym.make("Umbrella-v0", **kwargs)


def test_fork_after_the_end_and_bad_exact_credit_calls_are_refused() -> None:
    with pytest.raises(ValueError, match="BifurcationEnv.fork_at must be < length"):
        BifurcationEnv(length=3, fork_at=3)
    env = UmbrellaEnv(length=2)
    with pytest.raises(ValueError, match="unknown task_id"):
        env.exact_credit("train-99999", [])
    with pytest.raises(ValueError, match="marked_probabilities must be 2 numbers"):
        env.exact_credit("train-0", ["a"], marked_probabilities=[2.0, 0.0])
    with pytest.raises(ValueError, match="at most 2 strings"):
        env.exact_credit("train-0", ["a", "b", "c"])


def test_an_unknown_task_leaves_the_env_usable() -> None:
    env = gym.make("KeyDoor-v0")
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "eval-0"})  # the train split's env has no eval tasks
    _, info = env.reset(seed=0, options={"task_id": "train-7"})
    assert info["task_id"] == "train-7"


@pytest.mark.parametrize("env_id", IDS)
def test_snapshots_replay_random_sequences_exactly(env_id: str) -> None:
    def make() -> gym.Env:
        return gym.make(env_id, privileged=True, **({"distractor": 1.0} if env_id == "Umbrella-v0" else {}))

    def action(rng: np.random.Generator, env: gym.Env, info: dict[str, Any]) -> str:
        if rng.random() < 0.1:
            return "not on the menu"
        items = info["admissible_actions"] or ["x"]
        return env.unwrapped.expert_action() if rng.random() < 0.4 else items[int(rng.integers(len(items)))]

    stats = check_snapshot_sequences(make, action, sequences=200, seed=0, max_prefix=4, max_suffix=4)
    assert stats.sequences == 200 and stats.won > 10 and stats.ended_in_suffix > 10


def test_classic_rl_reaches_the_envs_through_the_discrete_actions_wrapper() -> None:
    env = DiscreteActions(gym.make("Umbrella-v0", length=2), max_actions=4)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 1, 1, 0]
    menu = info["candidate_actions"][:3]
    _, _, _, _, info = env.step(1)
    assert info["action_valid"] and info["action"] == menu[1]
    env = DiscreteActions(gym.make("Bifurcation-v0", length=2, fork_at=1, p=1.0, q=0.0, privileged=True), max_actions=2)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    right = info["privileged"]["right_choice"]
    _, reward, terminated, _, info = env.step(info["candidate_actions"].index(right))
    assert terminated and reward == 1.0 and info["won"]
