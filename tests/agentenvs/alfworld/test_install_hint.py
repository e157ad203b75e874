"""Without the planner or TextWorld, ALFWorld-v0 names the install that brings them (issue #26, item 8)."""

import sys
from types import SimpleNamespace

import pytest

from agentenvs.alfworld.env import ALFWorldEnv


def test_a_missing_engine_dependency_names_the_alfworld_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "agentenvs.alfworld.engine", None)  # as if fast_downward were missing
    env = SimpleNamespace(_engine=None, _translation_cache_size=0)
    with pytest.raises(
        ImportError, match=r'ALFWorld-v0 needs the alfworld extra .*pip install "agentenvs\[alfworld\]"'
    ):
        ALFWorldEnv._get_engine(env)
