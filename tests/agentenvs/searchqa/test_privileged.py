"""SearchQA-v0's ``info["privileged"]``: gold answers, supporting titles and their passages."""

import gymnasium as gym
from gymnasium.wrappers.vector import DictInfoToList

import agentenvs  # noqa: F401
from agentenvs.core.groups import make_group_vec
from agentenvs.core.privileged import is_json_stable
from agentenvs.searchqa.env import SearchQAPrivileged


def test_schema_and_values_on_the_generated_knowledge_base():
    env = gym.make("SearchQA-v0", privileged=True)
    _, info = env.reset(seed=0)
    privileged = info["privileged"]
    question = env.unwrapped.current_question
    assert set(privileged) == set(SearchQAPrivileged.__annotations__) and is_json_stable(privileged)
    assert privileged["gold_answers"] == list(question.answers)
    assert privileged["supporting_titles"] == list(question.supporting_titles)
    assert [p["title"] for p in privileged["supporting_passages"]] == list(question.supporting_titles)
    # the last supporting passage states the answer (the generated KB's oracle reads it there)
    assert question.answers[0] in privileged["supporting_passages"][-1]["text"]
    for action in ("<search>capital</search>", "no tags", f"<answer>{question.answers[0]}</answer>"):
        *_, step_info = env.step(action)
        assert step_info["privileged"] == privileged  # the same every step of the episode


def test_gold_answers_are_in_no_observation_before_a_search_or_after_a_wrong_answer():
    env = gym.make("SearchQA-v0", privileged=True, split="all").unwrapped
    for task_id in env.task_ids[::7]:
        observation, info = env.reset(options={"task_id": task_id})
        wrong, *_ = env.step("<answer>nobody in particular</answer>")
        for answer in info["privileged"]["gold_answers"]:
            assert answer.lower() not in observation.lower() and answer.lower() not in wrong.lower()


def test_real_datasets(searchqa_data):
    env = gym.make("SearchQA-v0", privileged=True, dataset="hotpotqa", data_path=searchqa_data)
    _, info = env.reset(seed=0)
    privileged = info["privileged"]
    assert len(privileged["supporting_titles"]) == 2 and is_json_stable(privileged)
    titles = {p["title"] for p in privileged["supporting_passages"]}
    assert titles == set(privileged["supporting_titles"])  # HotpotQA's own paragraphs hold both
    _, info = gym.make("SearchQA-v0", privileged=True, dataset="nq", data_path=searchqa_data).reset(seed=0)
    assert info["privileged"]["gold_answers"] and info["privileged"]["supporting_titles"] == []
    assert info["privileged"]["supporting_passages"] == []


def test_group_members_get_their_own_privileged_dict():
    envs = DictInfoToList(make_group_vec("SearchQA-v0", num_groups=2, group_size=2, seed=0, privileged=True))
    _, infos = envs.reset()
    single = gym.make("SearchQA-v0", privileged=True)
    for info in infos:
        _, alone = single.reset(options={"task_id": info["task_id"]})
        assert info["privileged"] == alone["privileged"]
    _, _, _, _, infos = envs.step(["<answer>x</answer>"] * 4)
    assert all(info["privileged"]["gold_answers"] == info["gold_answers"] for info in infos)
    envs.close()
