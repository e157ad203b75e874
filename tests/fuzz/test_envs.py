"""Every registered env, in every observation mode and action format, survives hostile model output.

Seeded (reproducible) runs of :func:`agentenvs.testing.fuzzing.fuzz_env`: empty and 200k-char
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
from agentenvs.core.actions import ACTION_FORMATS
from agentenvs.core.registration import agentenvs_ids
from agentenvs.testing.fuzzing import check_step, env_variants, fuzz_env, wrap_action

EXTRA_VARIANTS: dict[str, list[dict[str, Any]]] = {"SearchQA-v0": [{"initial_search": True, "reward": "f1"}]}
"""Settings beyond modes and formats that change what the env echoes."""

QUIET: dict[str, dict[str, Any]] = {"ALFWorld-v0": {"prefetch": False}}
"""No helper process for ALFWorld: the fuzz replays one game (the first seeded task)."""

VARIANTS: dict[str, list[dict[str, Any]]] = {
    env_id: [{**variant, **QUIET.get(env_id, {})} for variant in env_variants(env_id) + EXTRA_VARIANTS.get(env_id, [])]
    for env_id in agentenvs_ids()
}
"""The settings each env is fuzzed in: every observation mode and action format it supports."""

STEPS = {"SearchQA-v0": 1000, "WebShop-v0": 300, "ALFWorld-v0": 250}
"""Outputs per variant, sized so the folder runs in well under a minute on two cores."""
DEFAULT_STEPS = 300

CASES = [
    pytest.param(env_id, kwargs, id=f"{env_id}-{'-'.join(map(str, kwargs.values())) or 'default'}")
    for env_id, variants in VARIANTS.items()
    for kwargs in variants
]


def make(env_id: str, kwargs: dict[str, Any]) -> tuple[gym.Env, list[str] | None]:
    """The unwrapped env and the tasks to cycle through (ALFWorld: one, to skip game generation)."""
    env = gym.make(env_id, privileged=True, **kwargs).unwrapped  # the fullest infos
    if env_id != "ALFWorld-v0":
        return env, None  # seeded draws over all tasks
    _, info = env.reset(seed=0)
    return env, [info["task_id"]]


def test_variants_cover_every_mode_and_format():
    """The variants read from the constructors: a mode or format missing here is never fuzzed."""
    assert {"SearchQA-v0", "WebShop-v0", "ALFWorld-v0"} <= set(VARIANTS)
    shop = {(v["observation_mode"], v["action_format"]) for v in env_variants("WebShop-v0")}
    assert shop == {(mode, fmt) for mode in ("text", "text_rich", "text_compact", "html") for fmt in ACTION_FORMATS}
    assert [v["action_format"] for v in env_variants("ALFWorld-v0")] == list(ACTION_FORMATS)
    assert env_variants("SearchQA-v0") == [{}]  # one format (search_answer), one observation form


@pytest.mark.parametrize(("env_id", "kwargs"), CASES)
def test_hostile_outputs_keep_the_step_contract(env_id: str, kwargs: dict[str, Any]):
    steps, seed = STEPS.get(env_id, DEFAULT_STEPS), zlib.crc32(repr(kwargs).encode()) % 1000
    env, task_ids = make(env_id, kwargs)
    try:
        report = fuzz_env(env, steps=steps, seed=seed, task_ids=task_ids, raise_errors=True)
    finally:
        env.close()
    assert report.errors == [] and report.steps == steps
    assert report.episodes >= 2, report
    if env_id == "SearchQA-v0" or kwargs.get("action_format") != "search_answer":
        # The fuzz must get past the front door: some outputs are actions the world accepts.
        # (search_answer turns every output into <search>/<answer>, which shops and games reject.)
        assert report.valid_actions > steps // 10, report


@pytest.mark.parametrize("env_id", sorted(VARIANTS))
def test_unencodable_characters_never_reach_observations(env_id: str):
    """Regression (all envs): lone surrogates and NUL in valid actions were echoed back unencodable."""
    kwargs = next((v for v in VARIANTS[env_id] if v.get("observation_mode") == "html"), VARIANTS[env_id][0])
    env, task_ids = make(env_id, kwargs)
    action_format = env.action_format
    try:
        _, info = env.reset(seed=0, options={"task_id": task_ids[0]} if task_ids else None)
        admissible = info["admissible_actions"] or ["<search>x</search>", "<answer>x</answer>"]
        rng = random.Random(0)
        for action in [
            f"search[shampoo {chr(0xD800)}]",
            *(f"{a}{chr(0xDFFF)}{chr(0)}" for a in admissible[:5]),
            f"{admissible[0][:-1]}{chr(0xD800)}{admissible[0][-1]}",
            chr(0xD800),
            f"go to {chr(0xDBFF)}",
        ]:
            raw = wrap_action(action, action_format, rng)
            result = env.step(raw)
            check_step(env, raw, result, action_format=action_format)
            assert chr(0xD800) not in result[0] and chr(0) not in result[0]
            if result[2] or result[3]:
                env.reset(seed=0, options={"task_id": task_ids[0]} if task_ids else None)
    finally:
        env.close()
