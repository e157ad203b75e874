"""The TextEnv base contract, on a minimal counting env."""

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from agentenvs.core.env import Outcome, TextEnv

INFO_KEYS = {"task_id", "task", "turn", "won", "action_valid", "admissible_actions", "action", "action_span"}


class CountEnv(TextEnv):
    """Say the task's number to win; 'wait' is the only other admissible action."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_turns=3, **kwargs)

    @property
    def task_ids(self):
        return [f"n{i}" for i in range(5)]

    def _task_text(self, task_id):
        return f"Say {task_id[1:]}."

    def _begin(self, task_id):
        return f"Task: say {task_id[1:]}", {"level": 1}

    def _admissible_actions(self):
        return [self.task_id[1:], "wait"]

    def _act(self, action):
        if action == self.task_id[1:]:
            return Outcome("You win.", reward=1.0, terminated=True, won=True)
        if action == "wait":
            return Outcome("You wait.")
        return Outcome("Nothing happens.", action_valid=False)


def test_check_env_passes():
    check_env(CountEnv())
    check_env(CountEnv(action_format="think_action"))


def test_info_contract_and_win():
    env = CountEnv()
    observation, info = env.reset(options={"task_id": "n3"})
    assert observation == "Task: say 3"
    assert INFO_KEYS <= set(info) and info["level"] == 1
    assert info["admissible_actions"] == ["3", "wait"] and info["turn"] == 0 and info["won"] is False
    observation, reward, terminated, truncated, info = env.step("  3 ")
    assert (observation, reward, terminated, truncated) == ("You win.", 1.0, True, False)
    assert info["won"] and info["action_valid"] and info["action"] == "3"
    assert info["action_span"] == (2, 3)
    assert info["admissible_actions"] is None  # the episode is over


def test_truncation_invalid_actions_and_steps_after_end():
    env = CountEnv()
    env.reset(options={"task_id": "n1"})
    assert env.step("dance")[4]["action_valid"] is False
    assert env.step("")[4]["error"] == "The action is empty."
    observation, reward, terminated, truncated, info = env.step("wait")
    assert (terminated, truncated, info["turn"]) == (False, True, 3)
    with pytest.raises(gym.error.ResetNeeded, match=r"truncated \(max_turns=3\) at turn 3; call reset\(\)"):
        env.step("1")
    env.reset(options={"task_id": "n1"})
    assert env.step("1")[2] is True
    with pytest.raises(gym.error.ResetNeeded, match="terminated at turn 1"):
        env.step("1")
    assert env.reset(options={"task_id": "n1"})[1]["turn"] == 0  # a reset starts over


def test_think_action_format_gives_feedback():
    env = CountEnv(action_format="think_action")
    env.reset(options={"task_id": "n2"})
    observation, _, _, _, info = env.step("2")
    assert observation.startswith("Invalid action:") and "<action>" in observation
    assert not info["action_valid"] and info["action_span"] is None
    _, reward, terminated, _, info = env.step("<think>easy</think><action>2</action>")
    assert reward == 1.0 and terminated and info["action_span"] == (27, 28)


def test_seeded_task_choice_and_next_task_id():
    env = CountEnv()
    first = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(5)]
    again = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(5)]
    assert first == again
    env.next_task_id = "n4"
    assert env.reset(seed=0)[1]["task_id"] == "n4"
    assert env.next_task_id is None


def test_bad_usage_is_explained():
    env = CountEnv()
    with pytest.raises(gym.error.ResetNeeded):
        env.step("wait")
    with pytest.raises(ValueError, match="n9"):
        env.reset(options={"task_id": "n9"})
    with pytest.raises(ValueError, match="level"):
        env.reset(options={"level": 2})
    with pytest.raises(ValueError, match="render_mode"):
        CountEnv(render_mode="rgb_array")
    with pytest.raises(ValueError, match=r"task ids are strings such as 'n0'.* got 3 of type int"):
        env.reset(options={"task_id": 3})


def test_human_render_mode_prints_the_text(capsys):
    env = CountEnv(render_mode="human")
    env.reset(options={"task_id": "n2"})
    assert capsys.readouterr().out == "[n2 turn 0/3]\nTask: say 2\n"
    env.step("wait")
    assert env.render() is None
    assert capsys.readouterr().out == "[n2 turn 1/3]\nYou wait.\n" * 2
    assert CountEnv(render_mode="ansi").render() is not None


class SecretCountEnv(CountEnv):
    """CountEnv with privileged information: the number, in the dict and in a top-level key."""

    privileged_info_keys = ("answer",)

    def _begin(self, task_id):
        observation, extra = super()._begin(task_id)
        return observation, {**extra, "answer": task_id[1:]}

    def _privileged(self):
        return {"number": self.task_id[1:]}


def test_privileged_infos_are_opt_in():
    env = SecretCountEnv()
    _, info = env.reset(options={"task_id": "n2"})
    infos = [info, env.step("wait")[4], env.step("2")[4]]
    assert all(INFO_KEYS <= set(i) and not {"privileged", "answer"} & set(i) for i in infos)
    env = SecretCountEnv(privileged=True)
    _, info = env.reset(options={"task_id": "n2"})
    assert info["privileged"] == {"number": "2"} and info["answer"] == "2"
    assert env.step("wait")[4]["privileged"] == {"number": "2"}
    with pytest.raises(ValueError, match="privileged"):
        SecretCountEnv(privileged="yes")
    with pytest.raises(ValueError, match="action_format"):
        CountEnv(action_format="json")


def test_non_string_action_is_invalid_not_a_crash():
    env = CountEnv()
    env.reset(options={"task_id": "n0"})
    _, _, _, _, info = env.step(42)  # type: ignore[arg-type]
    assert info["action_valid"] is False and "text" in info["error"]


def test_ansi_render():
    env = CountEnv(render_mode="ansi")
    env.reset(options={"task_id": "n0"})
    assert env.render() == "[n0 turn 0/3]\nTask: say 0"
    assert CountEnv().render() is None


def test_surrogates_and_nul_never_reach_the_world():
    """Regression: lone surrogates were echoed into observations and infos that then failed to encode."""
    seen: list[str] = []

    class EchoEnv(CountEnv):
        def _act(self, action):
            seen.append(action)
            return Outcome(f"You said {action}")

    env = EchoEnv(action_format="think_action")
    env.reset(options={"task_id": "n1"})
    raw = f"<think>{chr(0xDC80)}</think><action> say {chr(0xD800)}{chr(0)}! </action>"
    observation, _, _, _, info = env.step(raw)
    assert seen == ["say \ufffd\ufffd!"]
    assert observation == "You said say \ufffd\ufffd!" and info["action"] == "say \ufffd\ufffd!"
    start, end = info["action_span"]
    assert raw[start:end] == f"say {chr(0xD800)}{chr(0)}!"  # the span still indexes the raw output
    for text in (observation, info["action"], info["task"]):
        text.encode("utf-8")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_turns": 2.7}, TypeError, "CountEnv.max_turns must be an integer >= 1, got 2.7"),
        ({"max_turns": "3"}, TypeError, "CountEnv.max_turns must be an integer >= 1, got '3'"),
        ({"max_turns": True}, TypeError, "CountEnv.max_turns must be an integer >= 1, got True"),
        ({"max_turns": 0}, ValueError, "CountEnv.max_turns must be an integer >= 1, got 0"),
        ({"max_turns": None}, TypeError, "CountEnv.max_turns must be an integer >= 1, got None"),
        ({"action_format": None}, ValueError, "CountEnv.action_format must be one of"),
        ({"action_format": ["raw"]}, ValueError, "CountEnv.action_format must be one of"),
        (
            {"render_mode": "rgb_array"},
            ValueError,
            "CountEnv.render_mode must be one of None, 'ansi', 'human', got 'rgb_array'",
        ),
        ({"render_mode": 1}, ValueError, "CountEnv.render_mode must be one of"),
        ({"max_observation_length": 0}, ValueError, "CountEnv.max_observation_length must be an integer >= 1"),
        ({"max_observation_length": 1e6}, TypeError, "CountEnv.max_observation_length must be an integer"),
        ({"max_action_length": "64"}, TypeError, "CountEnv.max_action_length must be an integer"),
        ({"max_action_length": -1}, ValueError, "CountEnv.max_action_length must be an integer >= 1"),
    ],
)
def test_base_arguments_are_checked_by_name(kwargs, error, message):
    """Regression: ``max_turns=2.7`` silently became 2 and ``"3"`` failed inside a comparison."""

    class Configurable(CountEnv):
        def __init__(self, **given: Any) -> None:
            TextEnv.__init__(self, **{"max_turns": 3, **given})

    Configurable.__name__ = "CountEnv"
    with pytest.raises(error) as raised:
        Configurable(**kwargs)
    assert str(raised.value).startswith(message)


def test_numpy_integers_are_integers():
    import numpy as np

    env = TextEnv(max_turns=np.int64(5))
    assert env.max_turns == 5 and type(env.max_turns) is int


def test_check_env_passes_through_gym_make_for_an_env_without_a_max_turns_argument():
    """``env.spec`` names ``max_turns`` only where the constructor takes it: check_env re-makes the
    env from its spec for every render mode (CountEnv takes **kwargs and sets max_turns itself)."""
    from agentenvs.core.registration import ONE_TURN_LIMIT

    gym.register("CountEnv-v0", entry_point=CountEnv, disable_env_checker=True, additional_wrappers=(ONE_TURN_LIMIT,))
    try:
        env = gym.make("CountEnv-v0")
        assert env.spec.max_episode_steps == 3 and "max_turns" not in env.spec.kwargs
        check_env(env.unwrapped)
    finally:
        del gym.registry["CountEnv-v0"]
