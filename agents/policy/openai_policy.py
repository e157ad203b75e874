"""Any OpenAI-compatible server as a policy (vLLM, SGLang, llama.cpp, a hosted API), for evaluation
and for collecting data without gradients.

:class:`OpenAIPolicy` sends each prompt as the user message of one ``/v1/chat/completions``
request (the server applies its model's chat template), so the envs, prompt builder and action
projection are the ones local training uses. Requests run ``concurrency`` at a time; the
``openai`` client retries connection errors, 408/409/429 and 5xx replies ``max_retries`` times
with back-off and gives up on a try after ``timeout_s`` (a deadline for the whole reply, not per
chunk: a server trickling bytes times out too). A reply body is read up to ``max_reply_bytes``
(:data:`MAX_REPLY_BYTES`, counted compressed and decompressed) and a response text is cut to
``max_new_tokens * MAX_CHARS_PER_TOKEN`` characters (``finish_reason="length"``) when a server
ignores ``max_tokens``. What still fails (an unreachable server, an error status, a reply that is
not JSON, too large or without a message) raises :class:`PolicyServerError`, naming the server,
the model and what went wrong.

Local sampling keeps the stop string in the response (the projection reads ``</action>``), but a
server strips it: :func:`restore_stop` puts it back, from the server's ``stop_reason`` /
``matched_stop`` (vLLM, SGLang) or else the stop that closes the response's last open tag, and
:func:`cut_at_stop` cuts after the first stop for servers that ignore ``stop``.

Sampling is reproducible on servers that honour ``seed``: each request's seed is drawn from
:attr:`OpenAIPolicy.generator`, which the evaluation reseeds. Greedy requests use temperature 0.
Served models give no token ids: generations have empty ``prompt_ids`` / ``response_ids`` (a
collected batch has the text, infos and rewards, not the tensors an update needs).

Example:
    >>> policy = OpenAIPolicy("http://127.0.0.1:8000/v1", "Qwen/Qwen3-0.6B", max_new_tokens=64)  # doctest: +SKIP
    >>> [generation] = policy.generate(["Say hi."], greedy=True)                                   # doctest: +SKIP
    >>> restore_stop("<think>go</think><action>look", ("</action>",))
    '<think>go</think><action>look</action>'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from agentenvs.core.checks import check_float, check_int, check_str, shown

MAX_SERVER_STOPS = 4
"""Stop strings sent with a request (the OpenAI API's limit); more are applied by the client only."""

MAX_REPLY_BYTES = 8 * 2**20
"""Default ``max_reply_bytes``: a reply of a few thousand tokens is a few KiB; a bigger body is refused."""

MAX_CHARS_PER_TOKEN = 32
"""Characters a token may stand for (a generous bound; tokens average about 4) when cutting a response."""


class PolicyServerError(RuntimeError):
    """The policy server could not be reached or gave no usable reply (the message says which)."""


@dataclass
class ServedGeneration:
    """One response from a served model (text only: the server gives no token ids).

    Attributes:
        prompt: The prompt (the user message).
        text: The response, its stop string put back.
        finish_reason: The server's ``finish_reason`` (``"stop"``, ``"length"``, ...).
        prompt_ids: Empty (no tokenizer on this side).
        response_ids: Empty.
        logprobs: Empty.
        trunk_hiddens: None (no model on this side).
    """

    prompt: str
    text: str
    finish_reason: str = "stop"
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    trunk_hiddens: None = None

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """``(0, 0)``: there are no response tokens to point into."""
        return 0, 0


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to and including its first stop string (unchanged without one).

    >>> cut_at_stop("<search>a</search> and more</search>", ("</search>", "</answer>"))
    '<search>a</search>'
    """
    ends = [text.find(stop) + len(stop) for stop in stops if stop and stop in text]
    return text[: min(ends)] if ends else text


def restore_stop(text: str, stops: Sequence[str], matched: str | None = None) -> str:
    """The response with the stop string a server stripped put back.

    ``matched`` is the stop the server says it hit (vLLM's ``stop_reason``, SGLang's
    ``matched_stop``). Without it, a closing-tag stop (``</x>``) is put back when its ``<x>`` is
    the response's last open tag; other stops are left out (nothing says which one was hit).

    >>> restore_stop("<search>a</search><answer>b", ("</search>", "</answer>"))
    '<search>a</search><answer>b</answer>'
    >>> restore_stop("go north", ("\\n",), matched="\\n")
    'go north\\n'
    >>> restore_stop("no tags", ("</action>",))
    'no tags'
    """
    if matched is not None:
        return text + matched if matched in stops and not text.endswith(matched) else text
    best, best_at = None, -1
    for stop in stops:
        if not (stop.startswith("</") and stop.endswith(">")) or text.endswith(stop):
            continue
        opened = text.rfind("<" + stop[2:])
        if opened > best_at and stop not in text[opened:]:
            best, best_at = stop, opened
    return text + best if best is not None else text


class OpenAIPolicy:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint (see the module docstring).

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: The served model's name.
        api_key: The key (None: ``$OPENAI_API_KEY``, else ``"EMPTY"`` as local servers accept).
        temperature: Sampling temperature when not greedy.
        top_p: Nucleus-sampling threshold when not greedy.
        max_new_tokens: Longest response (``max_tokens``).
        system_prompt: A system message before every prompt (None: none).
        timeout_s: Seconds one request may take, each try, from sending it to its whole reply.
        max_retries: Retries of a failed request (connection errors, 408/409/429, 5xx).
        concurrency: Requests in flight at once.
        seed: Seeds :attr:`generator` (the per-request sampling seeds).
        extra_body: Extra JSON fields for every request (server-specific, e.g. ``{"top_k": 20}``).
        max_reply_bytes: Largest reply body accepted, compressed or not.

    Raises:
        ValueError: A setting out of range (the message names it).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 128,
        system_prompt: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        concurrency: int = 8,
        seed: int = 0,
        extra_body: dict[str, Any] | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        import openai

        from agents.policy.bounded_http import BoundedHttpClient

        owner = "OpenAIPolicy"
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"OpenAIPolicy.base_url must be an http(s) URL, got {shown(base_url)}")
        check_str(owner, "model", model)
        temperature = check_float(owner, "temperature", temperature, minimum=0)
        top_p = check_float(owner, "top_p", top_p, minimum=0, maximum=1, min_inclusive=False)
        max_new_tokens = check_int(owner, "max_new_tokens", max_new_tokens, minimum=1)
        concurrency = check_int(owner, "concurrency", concurrency, minimum=1)
        max_retries = check_int(owner, "max_retries", max_retries, minimum=0)
        timeout_s = check_float(owner, "timeout_s", timeout_s, minimum=0, min_inclusive=False)
        check_str(owner, "system_prompt", system_prompt, non_empty=False, optional=True)
        seed = check_int(owner, "seed", seed)
        max_reply_bytes = check_int(owner, "max_reply_bytes", max_reply_bytes, minimum=1)
        self.base_url, self.model = base_url, model
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.system_prompt = system_prompt
        self.timeout_s, self.max_retries, self.concurrency = timeout_s, max_retries, concurrency
        self.extra_body, self.max_reply_bytes = dict(extra_body or {}), max_reply_bytes
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout_s,
            max_retries=max_retries,
            http_client=BoundedHttpClient(deadline_s=timeout_s, max_bytes=max_reply_bytes, timeout=timeout_s),
        )
        self.generator = torch.Generator().manual_seed(seed)
        self.device = torch.device("cpu")
        self.pad_token_id = 0

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> list[ServedGeneration]:
        """One response per prompt, ``concurrency`` requests at a time, in prompt order.

        Raises:
            PolicyServerError: A request failed after its retries, or a reply had no message.
        """
        stops = tuple(stop or ())
        # Greedy requests draw no seeds, so they leave the sampling stream where it was (as local greedy decoding does).
        seeds = (
            [None] * len(prompts)
            if greedy
            else torch.randint(0, 2**31 - 1, (len(prompts),), generator=self.generator).tolist()
        )
        requests = [
            self._request(prompt, seed, max_new_tokens or self.max_new_tokens, greedy, stops)
            for prompt, seed in zip(prompts, seeds, strict=True)
        ]
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            replies = list(pool.map(self._complete, requests))
        limit = (max_new_tokens or self.max_new_tokens) * MAX_CHARS_PER_TOKEN
        return [self._generation(prompt, reply, stops, limit) for prompt, reply in zip(prompts, replies, strict=True)]

    def check_server(self) -> None:
        """Sends one greedy one-token request, so that a wrong URL, model or key fails before anything else is built.

        Raises:
            PolicyServerError: naming what failed (as :meth:`generate` does).
        """
        self._complete(self._request("ping", None, 1, True, ()))

    def close(self) -> None:
        """Closes the HTTP client."""
        self.client.close()

    # -- helpers ------------------------------------------------------------------------
    def _request(
        self, prompt: str, seed: int | None, max_new_tokens: int, greedy: bool, stops: tuple[str, ...]
    ) -> dict[str, Any]:
        messages = [{"role": "user", "content": prompt}]
        if self.system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_new_tokens,
            "temperature": 0.0 if greedy else self.temperature,
            "top_p": 1.0 if greedy else self.top_p,
        }
        if seed is not None:
            request["seed"] = int(seed)
        if stops and len(stops) <= MAX_SERVER_STOPS:
            request["stop"] = list(stops)
        if self.extra_body:
            request["extra_body"] = self.extra_body
        return request

    def _complete(self, request: dict[str, Any]) -> Any:
        import openai

        from agents.policy.bounded_http import ReplyTooLarge

        where = f"policy server {self.base_url} (model {self.model!r})"
        try:
            return self.client.chat.completions.create(**request)
        except ReplyTooLarge as error:
            raise PolicyServerError(f"{where}: refused reply: {error}") from None
        except openai.APITimeoutError:
            raise PolicyServerError(
                f"{where}: no reply within timeout_s={self.timeout_s} s ({self.max_retries} retries)"
            ) from None
        except openai.APIConnectionError as error:
            raise PolicyServerError(
                f"{where}: cannot connect ({self.max_retries} retries): {error.__cause__ or error}"
            ) from None
        except openai.APIStatusError as error:
            raise PolicyServerError(f"{where}: HTTP {error.status_code}: {_short(error.message)}") from None
        except (openai.OpenAIError, ValueError, RecursionError) as error:  # a reply that is not the API's JSON
            raise PolicyServerError(f"{where}: malformed reply: {_short(str(error))}") from None

    def _generation(self, prompt: str, reply: Any, stops: tuple[str, ...], limit: int) -> ServedGeneration:
        where = f"policy server {self.base_url} (model {self.model!r})"
        choices = getattr(reply, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise PolicyServerError(f"{where}: malformed reply (no choices): {_short(repr(reply))}")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise PolicyServerError(f"{where}: malformed reply (no message text): {_short(repr(choice))}")
        finish_reason = str(getattr(choice, "finish_reason", None) or "stop")
        if finish_reason == "stop":
            extras = getattr(choice, "model_extra", None) or {}
            matched = next(
                (extras[key] for key in ("stop_reason", "matched_stop") if isinstance(extras.get(key), str)), None
            )
            text = restore_stop(text, stops, matched)
        text = cut_at_stop(text, stops)
        if len(text) > limit:  # the server ignored max_tokens: keep what that many tokens could hold
            text, finish_reason = text[:limit], "length"
        return ServedGeneration(prompt, text, finish_reason)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
