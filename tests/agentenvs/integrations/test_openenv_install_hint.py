"""Without openenv-core, the OpenEnv adapter names the one plain install that brings it (issue #26, item 8)."""

import sys

import pytest

import agentenvs.integrations
from agentenvs.integrations import openenv


def test_a_missing_openenv_core_names_the_openenv_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "agentenvs.integrations._openenv", None)  # as if it could not import
    monkeypatch.delattr(agentenvs.integrations, "_openenv", raising=False)
    with pytest.raises(ImportError, match=r'pip install "agentenvs\[openenv\]"') as caught:
        openenv.TextEnvClient  # noqa: B018  (the lazy attribute imports openenv-core)
    assert "--no-deps" not in str(caught.value)
