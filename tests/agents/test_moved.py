"""Modules that moved into agents' subpackages still import from their old paths, with a warning."""

import importlib
import sys

import pytest

import agents
from agents._moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_gives_the_moved_module_and_warns(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)  # one module: patching either name patches both


def test_every_new_path_exists_and_nothing_else_is_answered():
    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agents.no_such_module")
    assert {"GRPOAgent", "ORSDAgent", "TASPOAgent", "SFTAgent", "GRPOConfig", "SFTConfig"} <= set(agents.__all__)
