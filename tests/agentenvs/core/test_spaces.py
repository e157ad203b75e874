import gymnasium as gym
import pytest

from agentenvs.core.spaces import TextSpace


def test_contains_any_text_up_to_max_length():
    space = TextSpace(max_length=10)
    assert "a b,c!?é中" in space
    assert "" in space
    assert "x" * 11 not in space
    assert 5 not in space
    assert b"bytes" not in space


def test_sample_is_in_space_and_seeded():
    space = TextSpace(max_length=100, seed=3)
    samples = [space.sample() for _ in range(50)]
    assert all(sample in space for sample in samples)
    assert any(" " in s or any(not c.isalnum() for c in s) for s in samples)
    again = TextSpace(max_length=100, seed=3)
    assert [again.sample() for _ in range(50)] == samples


def test_sample_respects_small_max_length():
    space = TextSpace(max_length=3, sample_max_length=64, seed=0)
    assert all(len(space.sample()) <= 3 for _ in range(100))


def test_invalid_arguments_name_the_field():
    with pytest.raises(ValueError, match="max_length"):
        TextSpace(max_length=-1)
    with pytest.raises(ValueError, match="sample_charset"):
        TextSpace(sample_charset="")
    with pytest.raises(ValueError, match="mask"):
        TextSpace().sample(mask=1)


def test_equality_and_batching():
    assert TextSpace(5) == TextSpace(5)
    assert TextSpace(5) != TextSpace(6)
    batched = gym.vector.utils.batch_space(TextSpace(5), 3)
    assert all(sub == TextSpace(5) for sub in batched)
