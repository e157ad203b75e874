import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentenvs  # noqa: F401
from agentenvs.core.actions import render_action
from agentenvs.core.env import Outcome, TextEnv
from wrappers.discrete import DiscreteActions, passage_entities, passage_titles, search_queries


def _shop(**kwargs):
    return gym.make("WebShop-v0", num_products=100, split="all", **kwargs)


def test_webshop_search_template_becomes_queries_and_clicks_stay_as_listed():
    env = DiscreteActions(_shop(), max_actions=16)
    _, info = env.reset(seed=0)
    task = info["task"]
    assert info["admissible_actions"] == ["search[<query>]"]
    assert info["candidate_actions"] == [
        f"search[{task}]",
        "search[green tea]",
        "search[sugar free]",
        "search[resealable bag]",
        "search[low sugar]",
        "search[flavor name]",
    ]
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].tolist() == [1] * 6 + [0] * 10
    assert env.action_masks().tolist() == [True] * 6 + [False] * 10
    _, _, _, _, info = env.step(np.int64(0))
    assert info["action"] == f"search[{task}]" and info["action_valid"] and info["page"] == "results"
    assert info["candidate_actions"] == info["admissible_actions"][:16]  # closed set: the env's own order
    assert info["candidate_actions"][:3] == ["click[Back to Search]", "click[Next >]", "click[B0M5YHDCJT]"]
    _, _, _, _, info = env.step(2)
    assert info["action"] == "click[B0M5YHDCJT]" and info["page"] == "item"


def test_searchqa_candidates_are_searches_of_titles_and_answers_of_entities():
    env = DiscreteActions(gym.make("SearchQA-v0"), max_actions=16)
    _, info = env.reset(seed=0)
    assert info["admissible_actions"] is None
    assert info["candidate_actions"] == ["<search>Who founded Fethstoul Systems?</search>"]
    _, _, _, _, info = env.step(0)
    candidates = info["candidate_actions"]
    assert candidates[:4] == [
        "<search>Who founded Fethstoul Systems?</search>",
        "<search>Fethstoul Systems</search>",
        "<search>Hondith Zusmior</search>",
        "<search>Tiorhom Tranlas</search>",
    ]
    assert candidates[4:7] == [
        "<answer>Fethstoul Systems</answer>",
        "<answer>Kexramvale</answer>",
        "<answer>Grouxvio Pounbae</answer>",
    ]
    assert "<search>Kexramvale</search>" in candidates  # entities that are not titles can be searched too
    assert len(candidates) == 16 and info["candidates_dropped"] > 0
    _, reward, terminated, _, info = env.step(candidates.index("<answer>Grouxvio Pounbae</answer>"))
    assert terminated and reward == 1.0 and info["won"]
    assert info["candidate_actions"] == [] or info["action_mask"].sum() == len(info["candidate_actions"])


def test_searchqa_remembers_passages_of_earlier_searches():
    env = DiscreteActions(gym.make("SearchQA-v0"), max_actions=64)
    env.reset(seed=0)
    _, _, _, _, first = env.step(0)
    _, _, _, _, second = env.step(first["candidate_actions"].index("<search>Hondith Zusmior</search>"))
    assert "<answer>Grouxvio Pounbae</answer>" in second["candidate_actions"]  # seen one search ago
    _, info = env.reset(seed=0)
    assert info["candidate_actions"] == ["<search>Who founded Fethstoul Systems?</search>"]  # forgotten on reset


@pytest.mark.parametrize("bad", [5, 99, -1, 1.0, True, "0", None, np.array([0, 1])])
def test_an_index_without_a_candidate_is_an_invalid_action_not_a_crash(bad):
    env = DiscreteActions(gym.make("SearchQA-v0"), max_actions=8)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(bad)
    assert not info["action_valid"] and info["turn"] == 1 and reward == 0.0
    assert not terminated and not truncated
    assert observation.startswith("Invalid action")  # the env's own feedback for no well-formed action


def test_numpy_scalars_and_one_element_arrays_are_indices():
    env = DiscreteActions(gym.make("SearchQA-v0"), max_actions=8)
    for action in (np.int32(0), np.array(0), np.array([0])):
        env.reset(seed=0)
        _, _, _, _, info = env.step(action)
        assert info["action_valid"] and info["action"] == "<search>Who founded Fethstoul Systems?</search>"


def test_actions_are_written_in_the_envs_action_format():
    env = DiscreteActions(_shop(action_format="think_action_strict"), max_actions=8)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(1)
    assert info["action_valid"] and info["action"] == "search[green tea]"
    assert render_action("look", "raw") == "look"
    assert render_action("<answer>x</answer>", "search_answer") == "<answer>x</answer>"


def test_candidates_past_max_actions_are_dropped_and_counted():
    env = DiscreteActions(_shop(), max_actions=4)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info["candidate_actions"] == info["admissible_actions"][:4]
    assert info["candidates_dropped"] == len(info["admissible_actions"]) - 4
    assert env.action_space == gym.spaces.Discrete(4)


class _OtherFormat(TextEnv):
    """A one-task env whose action format this wrapper cannot write."""

    task_ids = ("0",)

    def __init__(self):
        super().__init__(max_turns=2)
        self.action_format = "mystery"

    def _task_text(self, task_id):
        return "nothing"

    def _begin(self, task_id):
        return "hi", {}

    def _act(self, action):
        return Outcome("ok")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="max_actions"):
        DiscreteActions(gym.make("SearchQA-v0"), max_actions=0)
    with pytest.raises(TypeError, match="max_queries"):
        DiscreteActions(gym.make("SearchQA-v0"), max_queries=2.5)
    with pytest.raises(ValueError, match="action_format.*'mystery'"):
        DiscreteActions(_OtherFormat())


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_passes_gymnasium_check_env_and_runs_in_a_vector_env():
    check_env(DiscreteActions(gym.make("SearchQA-v0"), max_actions=8), skip_render_check=True)
    check_env(DiscreteActions(_shop(), max_actions=16), skip_render_check=True)
    vector = gym.vector.SyncVectorEnv([lambda: DiscreteActions(_shop(), max_actions=16) for _ in range(2)])
    _, infos = vector.reset(seed=[0, 1])
    assert infos["action_mask"].shape == (2, 16)
    for _ in range(12):
        masks = infos["action_mask"].astype(bool)
        actions = np.array([np.flatnonzero(mask)[0] if mask.any() else 0 for mask in masks])
        _, _, _, _, infos = vector.step(actions)
        assert infos["action_mask"].shape == (2, 16) and len(infos["candidate_actions"]) == 2
    vector.close()


def test_text_helpers():
    assert search_queries("a red hat, with price lower than 20.50 dollars", max_queries=3) == [
        "a red hat, with price lower than 20.50 dollars",
        "red hat",
        "price lower",
    ]
    assert search_queries("") == []
    text = (
        "<information>Doc 1(Title: Acme (band)) The Acme played in 1999.\nDoc 2(Title: Bo) Bo met Acme.</information>"
    )
    assert passage_titles(text) == ["Acme (band)", "Bo"]
    assert passage_entities(text) == ["Acme", "1999", "Bo"]


def test_alfworld_candidates_are_the_admissible_commands_and_the_expert_wins():
    pytest.importorskip("textworld")
    base = gym.make(
        "ALFWorld-v0", num_generated_games=1, task_types=["pick_and_place_simple"], prefetch=False, privileged=True
    )
    env = DiscreteActions(base, max_actions=64)
    _, info = env.reset(seed=0)
    reward = 0.0
    for _ in range(20):
        assert info["candidate_actions"] == info["admissible_actions"]
        _, reward, terminated, _, info = env.step(info["candidate_actions"].index(info["expert_action"]))
        if terminated:
            break
    assert reward == 1.0 and info["won"]
    env.close()
