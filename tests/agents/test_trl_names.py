"""agents.GRPOConfig against TRL's GRPOConfig, which shares its name: same names mean the same
defaults except the listed ones, TRL's other names are refused with ours, and docs/agents.md says so."""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

import pytest

from agents import GRPOConfig
from agents.trl_names import DIFFERENT_DEFAULTS, TRL_RENAMED, TRL_VERSION, trl_hint

AGENTS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
"""The page that holds the mapping table (the README links to it)."""


def _defaults(cls: type) -> dict[str, object]:
    values: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            values[field.name] = field.default_factory()
    return values


@pytest.fixture(scope="module")
def trl_defaults() -> dict[str, object]:
    trl = pytest.importorskip("trl", reason="TRL (the trl extra) is not installed")
    assert trl.__version__.startswith(TRL_VERSION), f"the tables were checked against TRL {TRL_VERSION}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _defaults(trl.GRPOConfig)


def test_a_field_named_as_trls_has_trls_default_unless_listed(trl_defaults):
    ours = _defaults(GRPOConfig)
    shared = sorted(set(ours) & set(trl_defaults))
    assert {"learning_rate", "lr_scheduler_type", "seed", "beta", "epsilon", "loss_type"} <= set(shared)
    differing = {name for name in shared if ours[name] != trl_defaults[name]}
    # Every difference is listed; a listed one may share TRL's value but not its effect (output_dir=None).
    assert differing <= set(DIFFERENT_DEFAULTS) <= set(shared)
    assert (ours["learning_rate"], ours["lr_scheduler_type"], ours["seed"]) == (1e-6, "linear", 42)


def test_trls_other_names_are_trl_fields_and_not_ours(trl_defaults):
    ours = {field.name for field in dataclasses.fields(GRPOConfig)}
    for name in TRL_RENAMED:
        assert name in trl_defaults and name not in ours


@pytest.mark.parametrize("name", sorted(TRL_RENAMED))
def test_a_trl_name_is_refused_with_ours(name):
    with pytest.raises(
        TypeError, match=rf"GRPOConfig got {name}=\.\.\.: {name} is TRL's name; agents.GRPOConfig calls it"
    ):
        GRPOConfig(**{name: 1})
    assert trl_hint(name) is not None and trl_hint("group_size") is None


def test_refusing_trl_names_keeps_the_dataclass_signature_and_behaviour():
    import inspect

    parameters = inspect.signature(GRPOConfig).parameters
    assert "group_size" in parameters and "args" not in parameters  # tyro and IDEs see the fields
    config = dataclasses.replace(GRPOConfig(group_size=3), num_groups=2)
    assert (config.group_size, config.num_groups) == (3, 2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        GRPOConfig(nonsense=1)  # type: ignore[call-arg]


def test_the_agents_page_states_every_difference():
    text = AGENTS_PAGE.read_text()
    table = text[text.index("| ours (default) | TRL `GRPOConfig`") :]
    table = table[: table.index("\n\n")]
    for name in TRL_RENAMED:
        assert f"`{name}" in table, f"docs/agents.md's TRL table does not name {name}"
    for name in DIFFERENT_DEFAULTS:
        assert re.search(rf"\| `{name}` \([^\n]*different default", table), (
            f"docs/agents.md's TRL table does not give {name}'s default"
        )
