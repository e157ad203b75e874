"""dataset='official' end to end on small files in the release's formats."""

from __future__ import annotations

import json

import gymnasium as gym

import agentenvs  # noqa: F401
from agentenvs.webshop.expert import expert_action
from agentenvs.webshop.generator import generate_catalog


def test_official_layout_with_human_and_synthetic_goals(tmp_path):
    catalog = generate_catalog(80, seed=5)
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(catalog.raw_products))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(catalog.annotations))
    human = {
        p["asin"]: [
            {"instruction": f"i want a {p['query']}.", "instruction_attributes": ["x"], "instruction_options": []}
        ]
        for p in catalog.raw_products[:30]
    }
    (tmp_path / "items_human_ins.json").write_text(json.dumps(human))
    env = gym.make("WebShop-v0", dataset="official", data_path=tmp_path, split="all", cache_index=False).unwrapped
    assert len(env.engine.products) == 80 and env.engine.products[catalog.raw_products[0]["asin"]].rating == "N.A."
    env = gym.make(
        "WebShop-v0",
        dataset="official",
        data_path=tmp_path,
        split="all",
        goal_source="human",
        num_products=50,
        cache_index=False,
    ).unwrapped
    assert len(env.goals) == 30 and all(g.instruction_text.startswith("i want a ") for g in env.goals)
    env.reset(options={"task_id": "0"})
    while True:
        *_, terminated, truncated, info = env.step(expert_action(env.goal, env.page))
        if terminated or truncated:
            break
    assert info["reward_parts"]["r_type"] == 1.0
