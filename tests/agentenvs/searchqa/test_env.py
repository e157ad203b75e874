import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentenvs  # noqa: F401
from agentenvs.core.retrieval import SearchHit
from agentenvs.searchqa.env import format_hits
from agentenvs.searchqa.scripted import ExpertAgent, play_episodes


def test_check_env_generated():
    check_env(gym.make("SearchQA-v0").unwrapped)


def test_check_env_real_datasets(searchqa_data):
    check_env(gym.make("SearchQA-v0", dataset="hotpotqa", data_path=searchqa_data).unwrapped)
    check_env(gym.make("SearchQA-v0", dataset="nq", data_path=searchqa_data).unwrapped)


def test_search_then_answer_episode():
    env = gym.make("SearchQA-v0", top_k=2)
    observation, info = env.reset(seed=0)
    question = env.unwrapped.current_question
    assert observation.startswith(f"Question: {question.question}\n")
    assert info["task"] == question.question and info["admissible_actions"] is None
    observation, reward, terminated, truncated, info = env.step(f"<search>{question.supporting_titles[0]}</search>")
    assert observation.startswith("<information>Doc 1(Title: ") and observation.endswith("</information>")
    assert observation.count("Doc ") == 2 and reward == 0.0 and not terminated
    assert info["retrieved_titles"][0] == question.supporting_titles[0]
    observation, reward, terminated, truncated, info = env.step(
        f"<think>ok</think><answer>the {question.answers[0]}.</answer>"
    )
    assert reward == 1.0 and terminated and info["won"] and info["em"] == 1.0 and info["f1"] == 1.0
    assert "gold_answers" not in info  # privileged: only with privileged=True
    env = gym.make("SearchQA-v0", privileged=True)
    env.reset(seed=0)
    *_, info = env.step("<answer>nobody</answer>")
    assert info["gold_answers"] == list(env.unwrapped.current_question.answers) and info["em"] == 0.0


def test_wrong_answer_partial_f1_and_invalid_feedback():
    env = gym.make("SearchQA-v0")
    env.reset(seed=1)
    gold = env.unwrapped.current_question.answers[0]
    observation, reward, terminated, truncated, info = env.step("I believe it is somewhere.")
    assert not info["action_valid"] and "<search>" in observation and "<answer>" in observation and reward == 0.0
    _, reward, terminated, _, info = env.step(f"<answer>{gold} and more words</answer>")
    assert reward == 0.0 and terminated and not info["won"] and 0 < info["f1"] < 1


def test_f1_reward_gives_partial_credit_and_won_stays_exact_match():
    env = gym.make("SearchQA-v0", reward="f1")
    env.reset(seed=1)
    gold = env.unwrapped.current_question.answers[0]
    _, reward, terminated, _, info = env.step(f"<answer>{gold} and more words</answer>")
    assert terminated and not info["won"] and reward == info["f1"] and 0 < reward < 1
    env.reset(seed=1)
    _, reward, _, _, info = env.step(f"<answer>{gold}</answer>")
    assert reward == 1.0 and info["won"]


def test_initial_search_shows_the_question_s_passages_first():
    env = gym.make("SearchQA-v0", initial_search=True, top_k=1, question_kinds="1hop")
    observation, info = env.reset(seed=3)
    question = env.unwrapped.current_question
    passages, asked = observation.split("</information>\n")
    assert passages.startswith("<information>Doc 1(Title: ") and asked.startswith(f"Question: {question.question}\n")
    assert info["retrieved_titles"] == [question.supporting_titles[0]] and info["task"] == question.question
    assert env.unwrapped.searches == []  # the agent's own searches only


def test_truncates_after_max_turns():
    env = gym.make("SearchQA-v0", max_turns=2)
    env.reset(seed=0)
    assert env.step("<search>a</search>")[3] is False
    _, reward, terminated, truncated, info = env.step("<search>b</search>")
    assert truncated and not terminated and reward == 0.0 and info["turn"] == 2


def test_splits_are_disjoint_and_cover_all():
    train = set(gym.make("SearchQA-v0").unwrapped.task_ids)
    test = set(gym.make("SearchQA-v0", split="test").unwrapped.task_ids)
    everything = set(gym.make("SearchQA-v0", split="all").unwrapped.task_ids)
    assert not train & test and train | test == everything and len(test) == round(0.2 * len(everything))


def test_configuration_errors_name_the_field(tmp_path):
    with pytest.raises(ValueError, match="top_k"):
        gym.make("SearchQA-v0", top_k=0)
    with pytest.raises(ValueError, match="split"):
        gym.make("SearchQA-v0", dataset="hotpotqa", split="train", data_path=tmp_path)
    with pytest.raises(ValueError, match="dataset"):
        gym.make("SearchQA-v0", dataset="trivia")
    with pytest.raises(ValueError, match="reward"):
        gym.make("SearchQA-v0", reward="bleu")
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "hotpotqa_dev_distractor_100.jsonl")):
        gym.make("SearchQA-v0", dataset="hotpotqa", data_path=tmp_path)
    with pytest.raises(FileNotFoundError, match="AGENTENVS_SEARCHQA_DATA"):
        gym.make("SearchQA-v0", dataset="nq")


def test_data_path_from_environment_variable(searchqa_data, monkeypatch):
    monkeypatch.setenv("AGENTENVS_SEARCHQA_DATA", str(searchqa_data))
    assert len(gym.make("SearchQA-v0", dataset="nq").unwrapped.task_ids) == 17


def test_format_hits_truncates_long_passages():
    from agentenvs.core.retrieval import Passage

    block = format_hits([SearchHit(Passage("1", "T", "word " * 50), 1.0)], max_passage_chars=20)
    assert block == "<information>Doc 1(Title: T) word word word word ...</information>"
    assert format_hits([], 20) == "<information>No results.</information>"


@pytest.mark.slow
def test_oracle_scores_em_one_on_all_hotpotqa(searchqa_data):
    env = gym.make("SearchQA-v0", dataset="hotpotqa", data_path=searchqa_data)
    results = []
    oracle = ExpertAgent()
    for task_id in env.unwrapped.task_ids:
        env.reset(options={"task_id": task_id})
        oracle.begin(env.unwrapped)
        info, done = {}, False
        while not done:
            _, _, terminated, truncated, info = env.step(oracle.act("", info))
            done = terminated or truncated
        results.append(info["em"])
    assert len(results) == 100 and all(em == 1.0 for em in results)


def test_oracle_on_generated_questions():
    results = play_episodes(gym.make("SearchQA-v0", split="test"), ExpertAgent(), episodes=50)
    assert all(r.em == 1.0 for r in results)
    assert {r.searches for r in results} <= {1, 2}


def test_bm25_recall_of_supporting_titles(searchqa_data):
    """Recall@5 of gold supporting titles when searching the raw question (reported in benchmarks)."""
    env = gym.make("SearchQA-v0", dataset="hotpotqa", data_path=searchqa_data).unwrapped
    found = total = 0
    for question in env.questions.values():
        titles = {hit.passage.title for hit in env.retriever.search(question.question, k=5)}
        found += sum(title in titles for title in question.supporting_titles)
        total += len(question.supporting_titles)
    assert 0.6 < found / total <= 1.0  # measured 0.745 with k1=0.9, b=0.4


def test_question_kinds_filter():
    env = gym.make("SearchQA-v0", question_kinds=["1hop"]).unwrapped
    assert {q.kind for q in env.questions.values()} == {"1hop"}
    assert len(env.task_ids) < len(gym.make("SearchQA-v0").unwrapped.task_ids)
    with pytest.raises(ValueError, match="question_kinds"):
        gym.make("SearchQA-v0", question_kinds=["bridge"])


def test_lone_surrogates_are_not_echoed():
    """Regression: ``<answer>\\ud800</answer>`` gave the observation ``Your answer: \\ud800``."""
    env = gym.make("SearchQA-v0").unwrapped
    env.reset(seed=0)
    observation, _, _, _, info = env.step(f"<search>{chr(0xD800)} capital{chr(0)}</search>")
    assert info["action"] == "<search>\ufffd capital\ufffd</search>" and env.searches == ["\ufffd capital\ufffd"]
    observation.encode("utf-8")
    observation, _, terminated, _, info = env.step(f"<answer>{chr(0xD800)}</answer>")
    assert terminated and observation == "Your answer: \ufffd" and info["prediction"] == "\ufffd"


def test_generated_dataset_rejects_data_files(tmp_path):
    """Regression: ``data_path`` was silently ignored with ``dataset="generated"``."""
    for argument in ("data_path", "questions_file", "corpus_file"):
        with pytest.raises(ValueError, match=f"SearchQAEnv: {argument} need dataset='hotpotqa' or 'nq'"):
            gym.make("SearchQA-v0", **{argument: tmp_path})
    gym.make("SearchQA-v0", data_path="")  # an empty string means "not given"


def test_max_passage_chars_must_be_positive():
    """Regression: ``max_passage_chars=-5`` was accepted and then sliced ``text[:-5]``."""
    with pytest.raises(ValueError, match=r"^SearchQAEnv.max_passage_chars must be an integer >= 1, got -5"):
        gym.make("SearchQA-v0", max_passage_chars=-5)


def test_max_turns_must_be_an_integer():
    """Regression: ``max_turns=2.7`` silently became 2; ``"4"`` failed with ``'<' not supported``."""
    with pytest.raises(TypeError, match=r"SearchQAEnv.max_turns must be an integer >= 1, got 2\.7"):
        gym.make("SearchQA-v0", max_turns=2.7)
    with pytest.raises(TypeError, match=r"SearchQAEnv.max_turns must be an integer >= 1, got '4'"):
        gym.make("SearchQA-v0", max_turns="4")


@pytest.mark.parametrize(
    ("argument", "value", "error"),
    [
        ("dataset", "trivia", ValueError),
        ("dataset", None, ValueError),
        ("dataset", ["nq"], ValueError),
        ("data_path", 1, TypeError),
        ("questions_file", b"q.jsonl", TypeError),
        ("corpus_file", 2.0, TypeError),
        ("split", "dev", ValueError),
        ("split", 1, ValueError),
        ("top_k", 0, ValueError),
        ("top_k", 2.5, TypeError),
        ("top_k", "3", TypeError),
        ("top_k", True, TypeError),
        ("max_turns", 0, ValueError),
        ("max_turns", None, TypeError),
        ("max_passage_chars", 0, ValueError),
        ("max_passage_chars", 600.0, TypeError),
        ("question_kinds", [], ValueError),
        ("question_kinds", [1], TypeError),
        ("question_kinds", 3, TypeError),
        ("reward", "bleu", ValueError),
        ("reward", None, ValueError),
        ("initial_search", 1, TypeError),
        ("initial_search", "True", TypeError),
        ("generator_seed", "abc", TypeError),
        ("generator_seed", -1, ValueError),
        ("generator_seed", 0.5, TypeError),
        ("test_fraction", 0.0, ValueError),
        ("test_fraction", 1, ValueError),
        ("test_fraction", float("nan"), ValueError),
        ("test_fraction", "0.2", TypeError),
        ("cache_index", "no", TypeError),
        ("cache_index", 0, TypeError),
        ("render_mode", "rgb_array", ValueError),
    ],
)
def test_every_argument_is_checked_by_name(argument, value, error):
    from agentenvs.searchqa.env import SearchQAEnv

    with pytest.raises(error, match=f"^SearchQAEnv.{argument} must be"):
        SearchQAEnv(**{argument: value})


def test_numpy_integers_are_accepted():
    import numpy as np

    env = gym.make("SearchQA-v0", top_k=np.int64(2), max_turns=np.int32(3), max_passage_chars=np.uint16(50)).unwrapped
    assert (env.top_k, env.max_turns, env.max_passage_chars) == (2, 3, 50)
    env.reset(seed=0)
    observation, *_ = env.step("<search>capital</search>")
    assert observation.count("Doc ") == 2
