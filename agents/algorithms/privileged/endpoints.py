"""Text generators for rubric writing, verification and guidance analysis.

Everything LM-based in this package takes a ``complete`` callable: a list of prompts in,
a list of completions out. :class:`OpenAIChatClient` is one for any OpenAI-compatible HTTP
endpoint (``POST {base_url}/chat/completions``), written on the standard library so it adds
no dependency; local models are adapted by the agent code through the policy's ``generate``.

Example:
    >>> client = OpenAIChatClient(base_url="http://localhost:8000/v1", model="qwen3-8b")
    >>> client.request_body("Is 2 prime?")["messages"]
    [{'role': 'user', 'content': 'Is 2 prime?'}]
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol


class CompleteFn(Protocol):
    """A text generator: one completion per prompt, in order."""

    def __call__(self, prompts: Sequence[str]) -> list[str]: ...


@dataclass(frozen=True)
class OpenAIChatClient:
    """Completions from an OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, OpenAI, ...).

    Attributes:
        base_url: The API root, e.g. ``http://localhost:8000/v1``.
        model: The model name the endpoint serves.
        api_key_env: Environment variable holding the API key (sent as a bearer token if set).
        temperature: Sampling temperature (0 for a deterministic verifier).
        max_tokens: Completion length limit.
        timeout_s: Per-request timeout in seconds.
        retries: Extra attempts after a failed request (with 0.5 s, 1 s, ... back-off).
        concurrency: Requests in flight at once.
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 256
    timeout_s: float = 60.0
    retries: int = 2
    concurrency: int = 8

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must be a non-empty model name")
        for name in ("max_tokens", "concurrency"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.retries < 0 or self.timeout_s <= 0 or self.temperature < 0:
            raise ValueError("retries must be >= 0, timeout_s > 0 and temperature >= 0")

    def request_body(self, prompt: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def _post(self, prompt: str) -> str:
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(self.request_body(prompt)).encode()
        error: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(0.5 * attempt)
            try:
                request = urllib.request.Request(url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    payload = json.loads(response.read().decode())
                return str(payload["choices"][0]["message"].get("content") or "")
            except (urllib.error.URLError, TimeoutError, OSError, KeyError, IndexError, ValueError) as caught:
                error = caught
        raise RuntimeError(f"chat endpoint {url} (model {self.model!r}) failed after {self.retries + 1} tries: {error}")

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        if len(prompts) <= 1 or self.concurrency == 1:
            return [self._post(prompt) for prompt in prompts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(self._post, prompts))
