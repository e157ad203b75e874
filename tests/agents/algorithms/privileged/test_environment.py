import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.trajectory import Trajectory
from agents.algorithms.privileged.environment import (
    DEFAULT_ENV_PI_KEYS,
    ENV_PI_HEADER,
    combine_privileged,
    env_privileged_rows,
    privileged_before_turns,
    render_env_privileged,
)
from tests.support.privileged import batch_from_groups, make_turn, toy_group


def planned(actions, initial=True):
    """A trajectory whose env reports the remaining expert plan after every action (ALFWorld-style)."""
    turns = [make_turn(f"obs {t}", action) for t, action in enumerate(actions)]
    for t, turn in enumerate(turns):
        turn.info = {"privileged": {"expert_plan": actions[t + 1 :], "goal_facts": ["(isHot ?o)"]}}
    reset = {"expert_plan": list(actions), "goal_facts": ["(isHot ?o)"]} if initial else None
    return Trajectory("toy", 0, turns, True, 1.0, task="heat it", initial_privileged=reset)


def test_each_turn_gets_the_pi_that_held_before_its_action():
    before = privileged_before_turns(planned(["go to stove 1", "heat pot 1", "done"]))
    assert [p["expert_plan"] for p in before] == [
        ["go to stove 1", "heat pot 1", "done"],  # the reset info's
        ["heat pot 1", "done"],  # turn 0's info: after "go to stove 1"
        ["done"],
    ]
    # Recorded without the reset info: no PI at turn 0 rather than turn 0's after-the-action plan.
    assert privileged_before_turns(planned(["a", "b"], initial=False))[0] is None


def test_render_hand_checked_per_env_schema():
    alfworld = {"expert_plan": ["go to stove 1", "heat pot 1"], "goal_facts": ["(isHot ?o)", "(inReceptacle ?o ?r)"]}
    assert render_env_privileged(alfworld) == (
        f"{ENV_PI_HEADER}\nExpert plan from here: go to stove 1; heat pot 1\n"
        "Goal facts: (isHot ?o); (inReceptacle ?o ?r)"
    )
    # Keys in the given order; empty entries and a price bound <= 0 say nothing.
    webshop = {"goal_attributes": [], "goal_options": ["red"], "price_upper": 0.0, "target_asin": "B1"}
    assert render_env_privileged(webshop, keys=("target_asin", "goal_options", "goal_attributes", "price_upper")) == (
        f"{ENV_PI_HEADER}\nTarget product: B1\nGoal options: red"
    )
    searchqa = {"gold_answers": ["Paris"], "supporting_passages": [{"id": "1", "title": "France", "text": "x " * 500}]}
    text = render_env_privileged(searchqa, max_chars=120)
    assert text.startswith(f"{ENV_PI_HEADER}\nSupporting passage (France): x x") and len(text) == 120
    assert "Paris" not in render_env_privileged(searchqa)  # answers are not shown by default
    assert "Answer: Paris" in render_env_privileged(searchqa, keys=("gold_answers",))
    assert render_env_privileged({}) is None and render_env_privileged({"expert_plan": None}) is None


@pytest.mark.parametrize(
    ("env_id", "expected"), [("SearchQA-v0", "Supporting passage ("), ("WebShop-v0", "Goal options: ")]
)
def test_render_the_real_envs_privileged_info(env_id, expected):
    env = gym.make(env_id, privileged=True)
    try:
        observation, info = env.reset(seed=0)
    finally:
        env.close()
    text = render_env_privileged(info["privileged"], keys=DEFAULT_ENV_PI_KEYS)
    assert text is not None and expected in text and ENV_PI_HEADER not in observation


def test_combine_modes():
    assert combine_privileged("rubric", "env", "none") == "rubric"
    assert combine_privileged("rubric", "env", "replace") == "env"
    assert combine_privileged("rubric", "env", "add") == "rubric\nenv"
    assert combine_privileged(None, "env", "add") == "env" and combine_privileged(None, None, "add") is None
    with pytest.raises(ValueError, match="env_pi must be one of"):
        combine_privileged("a", "b", "both")


def test_rows_follow_their_trajectory_and_turn():
    group = toy_group()
    group.trajectories[0] = planned(["go to desk 1", "take pen 2 from desk 1"])
    batch = batch_from_groups([group])
    rows = env_privileged_rows(batch)
    first = [row for row in range(len(batch)) if int(batch.trajectory_index[row]) == 0]
    assert "Expert plan from here: go to desk 1; take pen 2" in rows[first[0]]
    assert "Expert plan from here: take pen 2 from desk 1" in rows[first[1]]
    assert all(text is None for row, text in enumerate(rows) if row not in first)  # no privileged info there
