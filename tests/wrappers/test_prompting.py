import gymnasium as gym
import pytest

import agentenvs  # noqa: F401
from agentenvs.core.groups import HoldWhenFinished
from agentenvs.core.prompts import PromptBuilder
from agentenvs.core.spaces import TextSpace
from wrappers.prompting import PromptObservation


def _expected_prompts(env_id, kwargs, builder, actions, shown, task_id):
    """Prompts built by hand: the env's observations and the actions the history should show."""
    env = gym.make(env_id, **kwargs)
    observation, info = env.reset(options={"task_id": task_id})
    history, prompts = [], []
    for action, action_shown in zip([*actions, None], [*shown, None], strict=True):
        prompts.append(
            builder.build(
                task=info["task"],
                observation=observation,
                history=history,
                admissible_actions=info["admissible_actions"],
                action_format=env.unwrapped.action_format,
            )
        )
        if action is None:
            break
        history.append((observation, action_shown))
        observation, *_, info = env.step(action)
    return prompts


SCRIPTS = {
    "SearchQA-v0": (
        {},
        ["no tags here", "<think>look it up</think><search>capital</search>", "  <answer>nobody</answer> "],
        ["no tags here", "<search>capital</search>", "<answer>nobody</answer>"],
    ),
    "WebShop-v0": (
        {"num_products": 100, "split": "all", "action_format": "think_action"},
        ["<think>find it</think><action>search[tea]</action>", "click[nope]", "<action>click[Next >]</action>"],
        ["search[tea]", "click[nope]", "click[Next >]"],
    ),
}


@pytest.mark.parametrize("env_id", sorted(SCRIPTS))
def test_prompt_observation_is_the_builders_prompt_for_the_history(env_id):
    kwargs, actions, shown = SCRIPTS[env_id]
    builder = PromptBuilder(history_length=2, max_observation_chars=300)
    env = PromptObservation(gym.make(env_id, **kwargs), builder)
    task_id = env.unwrapped.task_ids[1]
    prompt, info = env.reset(options={"task_id": task_id})
    prompts = [prompt]
    for action in actions:
        prompt, *_ = env.step(action)
        prompts.append(prompt)
    assert prompts == _expected_prompts(env_id, kwargs, builder, actions, shown, task_id)
    assert [action for _, action in env.history] == shown and isinstance(env.observation_space, TextSpace)
    assert all(env.observation_space.contains(p) for p in prompts) and info["task"] in prompts[0]
    assert env.stop_strings == builder.stop_strings(env.action_format)


def test_prompt_observation_equals_the_collectors_prompts():
    pytest.importorskip("torch")
    from agents.collection.collector import Collector
    from agents.policy.generation import Generation

    outputs = ["no tags here", "Let me look. <search>capital</search>", "<answer>nobody</answer>"]

    class Recorder:
        pad_token_id = 0

        def __init__(self):
            self.prompts: list[str] = []

        def generate(self, prompts, *, greedy=False, stop=()):
            self.prompts.extend(prompts)
            text = outputs[len(self.prompts) - 1]
            offsets = [(i, i + 1) for i in range(len(text))]
            return [Generation(prompts[0], [1], [2] * len(text), text, [-0.5] * len(text), offsets, "stop")]

    policy = Recorder()
    collector = Collector(policy, "SearchQA-v0", num_groups=1, group_size=1)
    task_id = collector.task_ids[3]
    try:
        collector.collect([task_id], seed=0)
    finally:
        collector.close()
    env = PromptObservation(gym.make("SearchQA-v0"), collector.prompt_builder)
    prompts = [env.reset(options={"task_id": task_id})[0]] + [env.step(output)[0] for output in outputs[:-1]]
    assert prompts == policy.prompts


def test_prompt_observation_after_the_end_and_under_a_vector_env():
    env = PromptObservation(gym.make("SearchQA-v0", max_turns=1))
    env.reset(seed=0)
    first, *_, terminated, truncated, _ = env.step("<search>capital</search>")
    assert truncated and len(env.history) == 1
    with pytest.raises(gym.error.ResetNeeded):
        env.step("<answer>late</answer>")
    assert len(env.history) == 1
    held = PromptObservation(HoldWhenFinished(gym.make("SearchQA-v0", max_turns=1)))
    held.reset(seed=0)
    first, *_ = held.step("<search>capital</search>")
    again, *_ = held.step("<answer>late</answer>")  # a group's no-op: the history stays as it was
    assert again == first and len(held.history) == 1
    envs = gym.vector.SyncVectorEnv(
        [lambda: PromptObservation(gym.make("SearchQA-v0")) for _ in range(2)],
        autoreset_mode=gym.vector.AutoresetMode.DISABLED,
    )
    observations, _ = envs.reset(seed=0)
    assert all(o.startswith(PromptBuilder().preamble) for o in observations)
    observations, *_ = envs.step(["<search>capital</search>"] * 2)
    assert all("[Step 1] Action: <search>capital</search>" in o for o in observations)
    envs.close()


def test_prompt_observation_needs_an_action_format():
    class NoFormat(gym.Env):
        observation_space = TextSpace(10)
        action_space = TextSpace(10)

    with pytest.raises(ValueError, match="action_format"):
        PromptObservation(NoFormat())
    with pytest.raises(ValueError, match="max_prompt_length"):
        PromptObservation(gym.make("SearchQA-v0"), max_prompt_length=0)
