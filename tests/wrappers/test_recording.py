import gymnasium as gym

import agentenvs  # noqa: F401
from agentenvs.core.trajectory import ActionSpan, read_jsonl, write_jsonl
from wrappers.recording import RecordTrajectory


def _oracle_steps(env):
    question = env.unwrapped.current_question
    return [f"<think>look it up</think><search>{t}</search>" for t in question.supporting_titles] + [
        f"<answer>{question.answers[0]}</answer>"
    ]


def test_records_a_winning_episode_with_spans(tmp_path):
    env = RecordTrajectory(gym.make("SearchQA-v0"), group_id=4)
    observation, _ = env.reset(seed=1)
    for raw in _oracle_steps(env):
        env.step(raw)
    (trajectory,) = env.pop_trajectories()
    assert trajectory.group_id == 4 and trajectory.success and trajectory.score == 1.0
    assert trajectory.initial_observation == observation == trajectory.turns[0].observation
    first = trajectory.turns[0]
    assert first.action_span == ActionSpan(25, len(first.raw_output))
    assert first.action_span.text_of(first.raw_output) == first.action
    assert trajectory.turns[1].observation.startswith("<information>")
    assert trajectory.metadata == {"env_id": "SearchQA-v0", "seed": 1, "truncated": False, "complete": True}
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [trajectory])
    assert read_jsonl(path) == [trajectory]


def test_invalid_and_cut_short_episodes():
    env = RecordTrajectory(gym.make("SearchQA-v0"), max_kept=1)
    env.reset(seed=0)
    env.step("no tags here")
    env.reset(seed=1)  # cuts the first episode short
    env.step("<answer>wrong</answer>")
    (kept,) = env.trajectories  # max_kept=1 dropped the older one
    assert kept.metadata["complete"] and not kept.success
    env.reset(seed=2)
    env.step("<search>x</search>")
    env.reset(seed=3)
    cut = env.trajectories[-1]
    assert cut.metadata["complete"] is False and cut.turns[0].valid
