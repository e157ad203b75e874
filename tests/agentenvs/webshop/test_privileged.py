"""WebShop-v0's ``info["privileged"]``: the goal the reward is computed against."""

import gymnasium as gym
import pytest
from gymnasium.wrappers.vector import DictInfoToList

import agentenvs  # noqa: F401
from agentenvs.core.groups import make_group_vec
from agentenvs.core.privileged import is_json_stable
from agentenvs.webshop.data import Goal
from agentenvs.webshop.env import WebShopPrivileged, goal_privileged
from agentenvs.webshop.expert import expert_action


def test_schema_values_and_an_oracle_episode():
    env = gym.make("WebShop-v0", privileged=True, num_products=100, split="all")
    _, info = env.reset(seed=3)
    goal = env.unwrapped.goal
    privileged = info["privileged"]
    assert set(privileged) == set(WebShopPrivileged.__annotations__) and is_json_stable(privileged)
    assert privileged["target_asin"] == goal.asin and privileged["goal_attributes"] == list(goal.attributes)
    assert privileged["goal_options"] == list(goal.goal_options.values())  # synthetic goals name their options
    assert type(privileged["price_upper"]) is float and privileged["price_upper"] == goal.price_upper
    for _ in range(10):
        *_, terminated, _, info = env.step(expert_action(env.unwrapped.goal, env.unwrapped.page))
        assert info["privileged"] == privileged  # the same every step of the episode
        if terminated:
            break
    assert terminated and info["purchased_asin"] == privileged["target_asin"]


def test_human_goals_option_lists_and_integer_prices():
    goal = Goal("B01", "c", "q", "n", "cat", "i want it", ["soft"], 30, ["large", "blue"])
    assert goal_privileged(goal) == {
        "target_asin": "B01",
        "goal_attributes": ["soft"],
        "goal_options": ["large", "blue"],
        "price_upper": 30.0,  # always a float: vector envs merge a key into one numpy dtype
    }


@pytest.mark.parametrize("mode", ["text", "text_rich", "html"])
def test_the_target_asin_is_not_on_the_search_page(mode):
    env = gym.make("WebShop-v0", privileged=True, split="all", observation_mode=mode).unwrapped
    for task_id in env.task_ids[::25]:
        observation, info = env.reset(options={"task_id": task_id})
        assert info["privileged"]["target_asin"].lower() not in observation.lower()


def test_group_members_get_their_own_privileged_dict():
    envs = DictInfoToList(
        make_group_vec("WebShop-v0", num_groups=2, group_size=2, seed=0, num_products=100, split="all", privileged=True)
    )
    _, infos = envs.reset()
    single = gym.make("WebShop-v0", privileged=True, num_products=100, split="all")
    for info in infos:
        _, alone = single.reset(options={"task_id": info["task_id"]})
        assert info["privileged"] == alone["privileged"]
    envs.close()
