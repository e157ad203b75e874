from dataclasses import dataclass

import pytest
import torch

from agentenvs.webshop.expert import expert_action
from agents.collection.collector import Collector
from agents.policy.generation import Generation


@dataclass
class ScriptedPolicy:
    """Answers from a script (one list of outputs per turn); token = one character."""

    script: list[str]
    pad_token_id: int = 0

    def generate(self, prompts, *, greedy=False, stop=()):
        turn = self.calls = getattr(self, "calls", -1) + 1
        outputs = []
        for index, prompt in enumerate(prompts):
            text = self.script[turn] if isinstance(self.script[turn], str) else self.script[turn][index]
            ids = [ord(c) % 97 + 1 for c in text]
            offsets = [(i, i + 1) for i in range(len(text))]
            outputs.append(Generation(prompt, [1, 2, 3], ids, text, [-0.5] * len(ids), offsets, "stop"))
        return outputs


def test_collects_groups_turns_and_token_spans():
    policy = ScriptedPolicy(["Let me look. <search>capital</search>", "<answer>nobody</answer>"])
    collector = Collector(policy, "SearchQA-v0", num_groups=2, group_size=2, invalid_action_penalty=0.5)
    task_ids = list(collector.task_ids[:2])
    batch, stats = collector.collect(task_ids, seed=0)
    assert [g.task_id for g in batch.groups] == task_ids
    assert len(batch) == 8  # 4 trajectories x 2 turns
    first = batch.trajectories[0].turns[0]
    assert first.action == "<search>capital</search>" and first.valid
    assert first.action_span.text_of(first.raw_output) == "<search>capital</search>"
    assert (first.action_span.token_start, first.action_span.token_end) == (13, 37)
    assert batch.action_token_spans[0].tolist() == [13, 37]
    assert batch.turn_index.tolist() == [0, 1] * 4 and batch.trajectory_index.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert batch.group_ids.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert batch.old_logprobs[0, :37].eq(-0.5).all() and batch.response_mask[0].sum() == 37
    assert batch.trajectory_rewards.tolist() == [0.0] * 4
    assert stats.invalid_rate == 0.0 and stats.mean_episode_length == 2.0
    collector.close()


def test_invalid_actions_are_penalised_and_episodes_stop_when_done():
    # member 0 answers at once (done after 1 turn); the others write nonsense until truncation
    policy = ScriptedPolicy([["<answer>x</answer>", "blah", "blah"], "blah", "blah", "blah"])
    collector = Collector(
        policy, "SearchQA-v0", num_groups=1, group_size=3, invalid_action_penalty=0.25, env_kwargs={"max_turns": 2}
    )
    batch, stats = collector.collect(seed=1)
    lengths = [len(t) for t in batch.trajectories]
    assert lengths == [1, 2, 2]
    assert batch.trajectory_rewards.tolist() == pytest.approx([0.0, -0.5, -0.5])
    assert batch.turn_rewards.tolist() == pytest.approx([0.0, -0.25, -0.25, -0.25, -0.25])
    assert not batch.turn_valid[1:].any() and batch.action_token_spans[1:].eq(-1).all()
    assert stats.invalid_rate == pytest.approx(4 / 5)
    assert batch.trajectories[1].turns[0].info["action_valid"] is False
    collector.close()


def test_tiny_model_rollouts_carry_what_the_update_needs(tiny_policy):
    collector = Collector(tiny_policy, "SearchQA-v0", num_groups=2, group_size=2, env_kwargs={"max_turns": 2})
    batch, _ = collector.collect(seed=0)
    assert len(batch.trajectories) == 4 and batch.prompt_ids.shape[0] == len(batch)
    rescored = tiny_policy.token_logprobs(batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask)
    assert torch.allclose(rescored, batch.old_logprobs, atol=1e-4)
    collector.close()


def generation(prompt: str, text: str) -> Generation:
    """A one-character-per-token generation of ``text``."""
    ids = [ord(c) % 97 + 1 for c in text]
    return Generation(prompt, [1, 2, 3], ids, text, [-0.5] * len(ids), [(i, i + 1) for i in range(len(text))], "stop")


class OraclePolicy:
    """Plays each env's expert from the env's own state (WebShop's oracle, SearchQA's gold
    titles and answer, ALFWorld's walkthrough): every episode wins."""

    pad_token_id = 0

    def __init__(self, collector: Collector) -> None:
        self.envs = [env.unwrapped for env in collector.groups.unwrapped.envs]

    @staticmethod
    def expert(env) -> str:
        name = type(env).__name__
        if name == "WebShopEnv":
            return expert_action(env.goal, env.page)
        if name == "SearchQAEnv":
            question = env.current_question
            plan = [f"<search>{title}</search>" for title in question.supporting_titles]
            return (plan + [f"<answer>{question.answers[0]}</answer>"])[min(env._turn, len(plan))]
        return env.expert_action()

    def generate(self, prompts, *, greedy=False, stop=()):
        running = [env for env in self.envs if not env._done]  # the collector prompts these, in order
        assert len(running) == len(prompts)
        return [generation(prompt, self.expert(env)) for prompt, env in zip(prompts, running, strict=True)]


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "WebShop-v0", "ALFWorld-v0"])
def test_an_expert_wins_every_episode_of_every_group(env_id, request):
    # A WebShop purchase nests dicts in info (reward parts, options): the merged vector info
    # must still come apart into per-member infos (this crashed the collector on every purchase).
    env_kwargs = {"max_turns": 12}
    if env_id == "ALFWorld-v0":
        pytest.importorskip("textworld")
        env_kwargs = {
            "max_turns": 50,
            "data_path": str(request.getfixturevalue("shared_data") / "alfworld"),
            "split": "eval_in_distribution",
            "prefetch": False,
        }
    collector = Collector(None, env_id, num_groups=2, group_size=2, env_kwargs=env_kwargs)
    collector.policy = OraclePolicy(collector)
    try:
        batch, stats = collector.collect(list(collector.task_ids[:2]), seed=0)
    finally:
        collector.close()
    assert stats.success_rate == 1.0 and stats.invalid_rate == 0.0
    assert [len(group) for group in batch.groups] == [2, 2]
    assert all(t.success and t.turns[-1].info["won"] for t in batch.trajectories)
    assert [g.task_id for g in batch.groups] == [t.task_id for t in batch.trajectories[::2]]
    if env_id == "WebShop-v0":
        last = batch.trajectories[0].turns[-1].info
        assert isinstance(last["reward_parts"], dict) and isinstance(last["purchased_options"], dict)
        assert last["score"] == pytest.approx(1.0)
    # Infos come out of the vector env as numpy values; turns hold plain Python ones, at any depth.
    info = batch.trajectories[0].turns[-1].info
    assert type(info["won"]) is bool and type(info["turn"]) is int
    assert all(type(value) in (int, float, bool, str, list, dict, type(None)) for value in info.values())
    if env_id == "WebShop-v0":
        assert all(type(value) in (int, float, bool, str, list, dict) for value in info["reward_parts"].values())


class HalfOraclePolicy(OraclePolicy):
    """The expert in even-numbered envs, nonsense in odd ones."""

    def generate(self, prompts, *, greedy=False, stop=()):
        running = [(i, env) for i, env in enumerate(self.envs) if not env._done]
        return [
            generation(prompt, self.expert(env) if i % 2 == 0 else "blah")
            for prompt, (i, env) in zip(prompts, running, strict=True)
        ]


def test_a_success_bonus_rewards_the_winning_turn_and_leaves_scores_alone():
    collector = Collector(
        None, "SearchQA-v0", num_groups=1, group_size=2, success_bonus=0.5, env_kwargs={"max_turns": 4}
    )
    collector.policy = HalfOraclePolicy(collector)
    try:
        batch, stats = collector.collect(list(collector.task_ids[:1]), seed=0)
    finally:
        collector.close()
    winner, loser = batch.trajectories
    assert winner.success and not loser.success and stats.success_rate == 0.5
    assert winner.score == pytest.approx(sum(turn.reward for turn in winner.turns))  # the env's own score
    assert winner.reward == pytest.approx(winner.score + 0.5) and loser.reward == pytest.approx(loser.score)
    rows = batch.turn_rewards.tolist()
    env_rewards = [turn.reward for turn in winner.turns] + [turn.reward for turn in loser.turns]
    bonus = [0.0] * (len(winner.turns) - 1) + [0.5] + [0.0] * len(loser.turns)
    assert rows == pytest.approx([r + b for r, b in zip(env_rewards, bonus, strict=True)])
    # what GRPO reads (a trajectory's reward) is the sum of what GiGPO reads (its turns' rewards)
    assert [winner.reward, loser.reward] == pytest.approx(
        [sum(rows[: len(winner.turns)]), sum(rows[len(winner.turns) :])]
    )


def test_conversation_mode_rows_are_turns_of_one_growing_chat(tiny_policy):
    collector = Collector(
        tiny_policy,
        "SearchQA-v0",
        num_groups=2,
        group_size=2,
        env_kwargs={"max_turns": 3},
        rollout_mode="conversation",
    )
    batch, stats = collector.collect(seed=0)
    collector.close()
    chains = batch.prefix_chains()
    assert sorted(len(chain) for chain in chains) == sorted(len(t) for t in batch.trajectories)
    assert len(chains) == 4 and max(len(chain) for chain in chains) > 1
    for chain in chains:
        later = batch.prompts[chain[-1]]
        assert later.startswith(batch.prompts[chain[0]]) and "You are an agent" not in later.split("\n\x1e")[1]
    rescored = tiny_policy.token_logprobs(batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask)
    assert torch.allclose(rescored, batch.old_logprobs, atol=1e-4)
    assert stats.prompt_tokens < int(batch.prompt_mask.sum())  # later turns feed only their new tokens
    with pytest.raises(ValueError, match="rollout_mode"):
        Collector(tiny_policy, "SearchQA-v0", num_groups=1, group_size=1, rollout_mode="chat")


def test_trajectories_keep_the_privileged_info_of_the_reset():
    """Turn infos hold the env's PI as of after each action; the reset's is kept in its own field."""
    policy = ScriptedPolicy(["<search>capital</search>", "<answer>nobody</answer>"])
    collector = Collector(policy, "SearchQA-v0", num_groups=1, group_size=2)
    batch, _ = collector.collect(list(collector.task_ids[:1]), seed=0)
    collector.close()
    for trajectory in batch.trajectories:
        initial = trajectory.initial_privileged
        assert set(initial) == {"gold_answers", "supporting_titles", "supporting_passages"}
        assert initial == trajectory.turns[0].privileged  # SearchQA's PI is constant over an episode
