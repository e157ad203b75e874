"""Every registered env, in every observation mode and action format, survives hostile model output.

Seeded (reproducible) runs of :func:`agentenvs.core.fuzzing.fuzz_env`: empty and 200k-char
outputs, lone surrogates, NUL and control characters, tag soup, path traversal, valid
actions in odd case and spacing, admissible actions. Each step must not raise and must
keep the info contract (types, span inside the raw output and holding the action,
observation ``str`` and UTF-8 encodable, reward ``float``). A CI-sized run; the nightly
size is ``benchmarks/fuzz_envs.py``.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.fuzzing import check_step, fuzz_env, wrap_action
from agentenvs.core.projection import PROJECTORS

OBSERVATION_MODES = ("text", "text_rich", "html")

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "SearchQA-v0": [{}, {"initial_search": True, "reward": "f1"}],
    "WebShop-v0": [{"observation_mode": mode, "action_format": fmt} for mode in OBSERVATION_MODES for fmt in PROJECTORS],
    # One game (the first seeded task), no prefetch process: ALFWorld's first generation is the slow part.
    "ALFWorld-v0": [{"action_format": fmt, "prefetch": False} for fmt in PROJECTORS],
}
"""The settings each env is fuzzed in: every observation mode and action format it supports."""

STEPS = {"SearchQA-v0": 1000, "WebShop-v0": 300, "ALFWorld-v0": 250}
"""Outputs per variant, sized so the folder runs in about a minute on two cores."""

CASES = [pytest.param(env_id, kwargs, id=f"{env_id}-{'-'.join(map(str, kwargs.values())) or 'default'}")
         for env_id, variants in VARIANTS.items() for kwargs in variants]


def agentenvs_ids() -> set[str]:
    return {env_id for env_id, spec in gym.registry.items()
            if isinstance(spec.entry_point, str) and spec.entry_point.startswith("agentenvs.")}


def make(env_id: str, kwargs: dict[str, Any]) -> tuple[gym.Env, list[str] | None]:
    """The unwrapped env and the tasks to cycle through (ALFWorld: one, to skip game generation)."""
    env = gym.make(env_id, **kwargs).unwrapped
    if env_id != "ALFWorld-v0":
        return env, None
    _, info = env.reset(seed=0)
    return env, [info["task_id"]]


def test_every_registered_env_is_fuzzed():
    """A new env id fails here until it has fuzz variants."""
    assert agentenvs_ids() == set(VARIANTS)
    for env_id, variants in VARIANTS.items():
        formats = {kwargs.get("action_format") for kwargs in variants}
        if "action_format" in gym.spec(env_id).kwargs or len(formats) > 1:
            assert formats == set(PROJECTORS), env_id


@pytest.mark.parametrize(("env_id", "kwargs"), CASES)
def test_hostile_outputs_keep_the_step_contract(env_id: str, kwargs: dict[str, Any]):
    env, task_ids = make(env_id, kwargs)
    try:
        report = fuzz_env(env, steps=STEPS[env_id], seed=zlib.crc32(repr(kwargs).encode()) % 1000, task_ids=task_ids,
                          raise_errors=True)
    finally:
        env.close()
    assert report.errors == [] and report.steps == STEPS[env_id]
    assert report.episodes >= 2, report
    if env_id == "SearchQA-v0" or kwargs["action_format"] != "search_answer":
        # The fuzz must get past the front door: some outputs are actions the world accepts.
        # (search_answer turns every output into <search>/<answer>, which shops and games reject.)
        assert report.valid_actions > STEPS[env_id] // 10, report


@pytest.mark.parametrize("env_id", sorted(VARIANTS))
def test_unencodable_characters_never_reach_observations(env_id: str):
    """Regression (all envs): lone surrogates and NUL in valid actions were echoed back unencodable."""
    kwargs = VARIANTS[env_id][0] if env_id != "WebShop-v0" else {"observation_mode": "html"}
    env, task_ids = make(env_id, kwargs)
    action_format = env.action_format
    try:
        _, info = env.reset(seed=0, options={"task_id": task_ids[0]} if task_ids else None)
        admissible = info["admissible_actions"] or ["<search>x</search>", "<answer>x</answer>"]
        rng = random.Random(0)
        for action in [f"search[shampoo {chr(0xD800)}]", *(f"{a}{chr(0xDFFF)}{chr(0)}" for a in admissible[:5]),
                       f"{admissible[0][:-1]}{chr(0xD800)}{admissible[0][-1]}", chr(0xD800), f"go to {chr(0xDBFF)}"]:
            raw = wrap_action(action, action_format, rng)
            result = env.step(raw)
            check_step(env, raw, result, action_format=action_format)
            assert chr(0xD800) not in result[0] and chr(0) not in result[0]
            if result[2] or result[3]:
                env.reset(seed=0, options={"task_id": task_ids[0]} if task_ids else None)
    finally:
        env.close()
