"""The package's public names: one home each, imported on first use."""

import importlib

import pytest

import agents


def test_every_public_name_has_one_home_and_imports_on_first_use():
    assert sorted(agents.__all__) == sorted(agents._HOME_OF)
    for name in agents.__all__:
        assert getattr(agents, name) is getattr(importlib.import_module(agents._HOME_OF[name]), name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agents.Nope  # noqa: B018
