"""agentenvs.core.shared_memory: TextSpace in Gymnasium's AsyncVectorEnv shared memory."""

from __future__ import annotations

import copy
import multiprocessing as mp

import gymnasium as gym
import pytest
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import agentenvs  # noqa: F401  (registers the ids and the space)
from agentenvs.core.spaces import TextSpace


def test_strings_round_trip_through_the_buffer_and_the_view_stays_live():
    space = TextSpace(max_length=12)
    buffer = create_shared_memory(space, n=3, ctx=mp)
    view = read_from_shared_memory(space, buffer, n=3)
    texts = ["", "héllo wörld", "\ud800 lone"]  # unicode and a lone surrogate survive
    for index, text in enumerate(texts):
        write_to_shared_memory(space, index, text, buffer)
    assert list(view) == texts and view[1:] == tuple(texts[1:])
    frozen = copy.deepcopy(view)
    write_to_shared_memory(space, 0, "next step", buffer)
    assert view[0] == "next step"  # a live view, like a numpy view of the buffer
    assert type(frozen) is tuple and frozen[0] == ""  # a copy is plain strings


def test_a_string_longer_than_the_space_is_refused_by_length():
    space = TextSpace(max_length=4)
    buffer = create_shared_memory(space, n=1, ctx=mp)
    with pytest.raises(ValueError, match="at most 4 characters, got a str of 5"):
        write_to_shared_memory(space, 0, "12345", buffer)


def test_make_vec_async_steps_the_text_envs_with_shared_memory():
    envs = gym.make_vec("SearchQA-v0", num_envs=2, vectorization_mode="async")
    try:
        observations, _ = envs.reset(seed=0)
        assert type(observations) is tuple and all(text.startswith("Question:") for text in observations)
        observations, _, terminated, _, _ = envs.step(["<search>capital</search>", "<answer>x</answer>"])
        assert observations[0].startswith("<information>") and terminated.tolist() == [False, True]
    finally:
        envs.close()
