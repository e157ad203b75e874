"""Data location and cache folders: one rule for explicit arguments, env vars and defaults."""

from pathlib import Path

import pytest

from agentenvs.core.paths import CACHE_ENV_VAR, cache_dir, data_folder, given, locate_data


def test_cache_dir_from_env_var_and_default(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    assert cache_dir("bm25") == tmp_path / "bm25"
    assert cache_dir() == tmp_path
    for unset in ("", None):  # an empty variable is "not given", like an unset one
        if unset is None:
            monkeypatch.delenv(CACHE_ENV_VAR)
        else:
            monkeypatch.setenv(CACHE_ENV_VAR, unset)
        assert cache_dir("alfworld") == Path.home() / ".cache" / "agentenvs" / "alfworld"


def test_cache_dir_expands_user(monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, "~/somewhere")
    assert cache_dir("x") == Path.home() / "somewhere" / "x"


def test_empty_string_means_not_given(monkeypatch, tmp_path):
    assert given("") is None and given(None) is None and given(tmp_path) == tmp_path
    monkeypatch.setenv("TEST_AGENTENVS_DATA", str(tmp_path))
    assert data_folder("", "TEST_AGENTENVS_DATA") == tmp_path  # "" falls through to the variable
    assert data_folder(None, "TEST_AGENTENVS_DATA") == tmp_path
    monkeypatch.setenv("TEST_AGENTENVS_DATA", "")
    assert data_folder("", "TEST_AGENTENVS_DATA") is None
    assert data_folder(tmp_path / "a", "TEST_AGENTENVS_DATA") == tmp_path / "a"  # the argument wins


def test_locate_data_order_and_defaults(monkeypatch, tmp_path):
    (tmp_path / "small.json").write_text("[]")
    (tmp_path / "full.json").write_text("[]")
    other = tmp_path / "other.json"
    other.write_text("[]")
    monkeypatch.setenv("TEST_AGENTENVS_DATA", str(tmp_path))
    found = locate_data("product file", env_var="TEST_AGENTENVS_DATA", names=("small.json", "full.json"))
    assert found == tmp_path / "small.json"
    (tmp_path / "small.json").unlink()
    assert (
        locate_data("product file", env_var="TEST_AGENTENVS_DATA", names=("small.json", "full.json")).name
        == "full.json"
    )
    assert locate_data("product file", explicit=other, names=("full.json",), env_var="TEST_AGENTENVS_DATA") == other
    assert locate_data("product file", explicit="", folder=tmp_path, names=("full.json",)).name == "full.json"


def test_locate_data_messages(monkeypatch, tmp_path):
    monkeypatch.delenv("TEST_AGENTENVS_DATA", raising=False)
    with pytest.raises(
        FileNotFoundError,
        match=r"Shop: the product file is needed: pass data_path=<folder holding a\.json> or set \$TEST_AGENTENVS_DATA\. Get it",
    ):
        locate_data("product file", env_var="TEST_AGENTENVS_DATA", names=("a.json",), owner="Shop", hint="Get it.")
    with pytest.raises(FileNotFoundError, match=f"Shop: no product file at {tmp_path / 'a.json'}"):
        locate_data("product file", folder=tmp_path, names=("a.json", "b.json"), owner="Shop")
    with pytest.raises(FileNotFoundError, match="no questions file at .*missing.jsonl"):
        locate_data("questions file", explicit=tmp_path / "missing.jsonl", folder=tmp_path, names=("a.json",))


def test_locate_data_folders(tmp_path):
    (tmp_path / "json_2.1.1").mkdir()
    (tmp_path / "notes").write_text("a file, not a folder")
    assert locate_data("games", folder=tmp_path, names=("json_2.1.1",), kind="dir") == tmp_path / "json_2.1.1"
    with pytest.raises(FileNotFoundError, match="no games folder"):
        locate_data("games folder", folder=tmp_path, names=("notes",), kind="dir")
    with pytest.raises(FileNotFoundError):
        locate_data("games", explicit=tmp_path / "notes", kind="dir")
