from agents.algorithms.privileged.text import content_terms, mentions, normalize_action, observations_up_to, shorten
from tests.support.privileged import toy_group


def test_normalize_action_strips_tags_case_and_spaces():
    assert normalize_action("  Go  to Desk 1 ") == "go to desk 1"
    assert normalize_action("<answer> Paris </answer>") == "answer: paris"


def test_content_terms_keep_ids_with_names_and_drop_verb_and_stopwords():
    assert content_terms("put pen 2 in/on drawer 1") == ("pen 2", "drawer 1")
    assert content_terms("<search>capital of France</search>") == ("capital", "france")
    assert content_terms("look") == ()


def test_mentions_is_whole_word():
    assert mentions("You see a desk 1.", "desk 1")
    assert not mentions("You see a desk 12.", "desk 1")
    assert not mentions("a deskjet", "desk")


def test_observations_up_to_includes_task_and_current_turn_only():
    trajectory = toy_group().trajectories[0]
    seen = observations_up_to(trajectory, 1)
    assert "pen 2" in seen and trajectory.task in seen
    assert "You pick up" not in seen


def test_shorten():
    assert shorten("a\n b", 10) == "a b"
    assert shorten("abcdefghijk", 6) == "abc..."
