"""OpenAIPolicy against local OpenAI-compatible servers: scripted, serving the tiny model, failing, hanging."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import zlib

import pytest
from flask import Response, jsonify

from agents.collection.collector import Collector
from agents.collection.evaluation import evaluate_policy
from agents.policy import SamplingSettings
from agents.policy.openai_policy import (
    MAX_CHARS_PER_TOKEN,
    MAX_REPLY_BYTES,
    OpenAIPolicy,
    PolicyServerError,
    cut_at_stop,
    restore_stop,
)
from tests.support.openai_server import error_reply, hanging_reply, serve

pytest.importorskip("openai")


def test_stop_strings_are_put_back_and_cut_after():
    stops = ("</search>", "</answer>")
    assert restore_stop("<think>x</think><answer>Paris", stops) == "<think>x</think><answer>Paris</answer>"
    assert restore_stop("<answer>a</answer><search>b", stops) == "<answer>a</answer><search>b</search>"
    assert restore_stop("<search>b</search>", stops) == "<search>b</search>"  # nothing was stripped
    assert restore_stop("plain", ("\n",)) == "plain" and restore_stop("x", ("\n",), matched="\n") == "x\n"
    assert restore_stop("x", ("</a>",), matched="END") == "x"  # not a stop we asked for
    assert cut_at_stop("a</search>b</answer>c", stops) == "a</search>"
    assert cut_at_stop("no stop", stops) == "no stop"


def test_requests_carry_the_prompt_settings_and_replies_come_back_in_order():
    with serve(lambda body: body["messages"][-1]["content"] + " ok</answer>") as (url, log):
        policy = OpenAIPolicy(url, "scripted", max_new_tokens=7, system_prompt="Be brief.", concurrency=3, seed=5)
        prompts = [f"<answer>q{i}" for i in range(5)]
        generations = policy.generate(prompts, greedy=True, stop=("</search>", "</answer>"))
        sampled = policy.generate(prompts[:2], stop=("</answer>",))
        again = OpenAIPolicy(url, "scripted", seed=5).generate(prompts[:2], stop=("</answer>",))
    # the server stripped "</answer>" (as vLLM does); the policy put it back
    assert [g.text for g in generations] == [f"<answer>q{i} ok</answer>" for i in range(5)]
    assert [g.prompt for g in generations] == prompts and generations[0].response_ids == []
    first = next(r for r in log.requests if r["messages"][-1]["content"] == prompts[0])
    assert first["model"] == "scripted" and first["max_tokens"] == 7
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first["temperature"] == 0.0 and "seed" not in first and first["stop"] == ["</search>", "</answer>"]
    seeds = [r["seed"] for r in log.requests[5:7]]
    assert [g.text for g in sampled] == ["<answer>q0 ok</answer>", "<answer>q1 ok</answer>"]
    assert sorted(seeds) == sorted(r["seed"] for r in log.requests[7:9])  # same policy seed, same request seeds
    assert log.requests[5]["temperature"] == 1.0 and again[0].text == sampled[0].text


def test_the_stop_the_server_names_is_put_back():
    with serve(lambda body: "go north\n", name_stop=True) as (url, _):
        [generation] = OpenAIPolicy(url, "m").generate(["?"], stop=("\n",))
    assert generation.text == "go north\n"


def test_concurrency_is_limited():
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow(body):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return body["messages"][-1]["content"]

    with serve(slow) as (url, _):
        texts = [g.text for g in OpenAIPolicy(url, "m", concurrency=2).generate([str(i) for i in range(6)])]
    assert texts == [str(i) for i in range(6)] and state["most"] == 2


def test_server_errors_are_retried_then_named():
    with serve(error_reply(500)) as (url, log):
        policy = OpenAIPolicy(url, "m", max_retries=1)
        with pytest.raises(
            PolicyServerError, match=r"policy server http://127\.0\.0\.1:\d+/v1 \(model 'm'\): HTTP 500"
        ):
            policy.generate(["hello"])
    assert len(log.requests) == 2  # the first try and one retry


def test_a_hanging_server_times_out_fast():
    release = threading.Event()
    with serve(hanging_reply(release)) as (url, _):
        policy = OpenAIPolicy(url, "m", timeout_s=0.3, max_retries=0)
        started = time.perf_counter()
        with pytest.raises(PolicyServerError, match=r"no reply within timeout_s=0\.3 s"):
            policy.generate(["hello"])
        elapsed = time.perf_counter() - started
        release.set()
    assert elapsed < 5


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (lambda body: jsonify({"id": "x", "choices": []}), "no choices"),
        (lambda body: jsonify({"id": "x", "choices": [{"index": 0, "message": {"role": "assistant"}}]}), "no message"),
        (lambda body: Response("<html>not json</html>", status=200, mimetype="text/html"), "malformed reply"),
    ],
)
def test_malformed_replies_are_named(reply, message):
    with serve(reply) as (url, _), pytest.raises(PolicyServerError, match=message):
        OpenAIPolicy(url, "m", max_retries=0).generate(["hello"])


def test_an_unreachable_server_is_named():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    policy = OpenAIPolicy(f"http://127.0.0.1:{port}/v1", "m", max_retries=0, timeout_s=2)
    with pytest.raises(PolicyServerError, match=rf"policy server http://127\.0\.0\.1:{port}/v1 .*cannot connect"):
        policy.generate(["hello"])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"base_url": "localhost:8000"}, "base_url must be an http"),
        ({"model": ""}, "model must be a non-empty"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1"),
        ({"timeout_s": 0}, "timeout_s must be a finite number > 0"),
        ({"max_retries": -1}, "max_retries must be an integer >= 0"),
        ({"top_p": 0}, r"top_p must be a finite number in \(0, 1\]"),
    ],
)
def test_bad_settings_are_named(setting, message):
    arguments = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **setting}
    with pytest.raises(ValueError, match=f"OpenAIPolicy.{message}"):
        OpenAIPolicy(arguments.pop("base_url"), arguments.pop("model"), **arguments)


def test_a_served_tiny_model_plays_as_the_local_one(tiny_model_path):
    """The server wraps the tiny model's greedy generation: the served policy plays the same episodes."""
    from agents.policy import TransformersPolicy

    local = TransformersPolicy(tiny_model_path, sampling=SamplingSettings(max_new_tokens=12), seed=0)
    one_at_a_time = threading.Lock()  # the server answers on several threads; one local policy is not thread-safe

    def generate(body):
        with one_at_a_time:
            [generation] = local.generate([body["messages"][-1]["content"]], greedy=True, stop=body.get("stop") or ())
        return generation.text

    def play(policy):
        collector = Collector(policy, "SearchQA-v0", num_groups=3, group_size=1, env_kwargs={"max_turns": 2})
        try:
            metrics = evaluate_policy(policy, collector, episodes=3, seed=0)
            batch, _ = collector.collect(list(collector.task_ids[:3]), seed=0, greedy=True)
        finally:
            collector.close()
        return metrics, [turn.raw_output for t in batch.trajectories for turn in t.turns]

    local_metrics, local_outputs = play(local)
    with serve(generate, name_stop=True) as (url, log):
        served_metrics, served_outputs = play(OpenAIPolicy(url, "tiny-random-qwen3", max_new_tokens=12))
    assert served_outputs == local_outputs and len(log.requests) >= 6
    assert {k: v for k, v in served_metrics.items() if not k.startswith("time/")} == {
        k: v for k, v in local_metrics.items() if not k.startswith("time/")
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"temperature": float("nan")}, r"OpenAIPolicy\.temperature must be a finite number >= 0, got nan"),
        ({"temperature": "0.7"}, r"OpenAIPolicy\.temperature must be a finite number >= 0, got '0\.7'"),
        ({"top_p": float("inf")}, r"OpenAIPolicy\.top_p must be a finite number in \(0, 1\]"),
        ({"timeout_s": None}, r"OpenAIPolicy\.timeout_s must be a finite number > 0, got None"),
        ({"timeout_s": float("inf")}, r"OpenAIPolicy\.timeout_s must be a finite number > 0, got inf"),
        ({"max_new_tokens": "128"}, r"OpenAIPolicy\.max_new_tokens must be an integer >= 1, got '128'"),
        ({"max_retries": True}, r"OpenAIPolicy\.max_retries must be an integer >= 0, got True"),
        ({"seed": 1.5}, r"OpenAIPolicy\.seed must be an integer"),
    ],
)
def test_bad_settings_name_the_field(kwargs, message):
    from agents.policy.openai_policy import OpenAIPolicy

    with pytest.raises(ValueError, match=message):
        OpenAIPolicy("http://127.0.0.1:9/v1", "served-model", **kwargs)


# -- hostile servers (issue #25): every reply is bounded in time and size, every failure is named --------
def _completion_json(content: str) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return json.dumps(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    ).encode()


def test_a_200_reply_that_is_not_json_is_named():
    bad = lambda body: Response("{not json", status=200, mimetype="application/json")  # noqa: E731
    with (
        serve(bad) as (url, _),
        pytest.raises(
            PolicyServerError, match=r"policy server http://127\.0\.0\.1:\d+/v1 \(model 'm'\): malformed reply"
        ),
    ):
        OpenAIPolicy(url, "m", max_retries=0).generate(["hello"])


@pytest.mark.parametrize("status", [302, 307])
def test_a_redirect_is_an_http_error_whose_body_is_bounded_too(status):
    """Before, httpx followed it and read the redirect's body itself: a gzip bomb grew to 2.3 GB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(packer.compress(b"a" * 2**20) for _ in range(64)) + packer.flush()

    def redirect(body):
        return Response(bomb, status=status, headers={"Location": "/v1/chat/completions", "Content-Encoding": "gzip"})

    with serve(redirect) as (url, _), pytest.raises(PolicyServerError, match="policy server .*(larger than|HTTP 30)"):
        OpenAIPolicy(url, "m", max_retries=0).generate(["hello"])


def test_a_reply_nested_too_deep_is_a_malformed_reply():
    deep = lambda body: Response(b"[" * 200_000 + b"]" * 200_000, status=200, mimetype="application/json")  # noqa: E731
    with serve(deep) as (url, _), pytest.raises(PolicyServerError, match="malformed reply"):
        OpenAIPolicy(url, "m", max_retries=0).generate(["hello"])


def test_a_trickling_server_times_out_within_the_deadline():
    """4 bytes every 0.25 s for a minute: each read is quick, the whole reply is not; timeout_s bounds the reply."""
    done = threading.Event()

    def trickle(body):
        def chunks():
            yield b'{"id": "x", "choices": ['
            for _ in range(240):
                if done.wait(0.25):
                    return
                yield b"    "

        return Response(chunks(), status=200, mimetype="application/json")

    with serve(trickle) as (url, _):
        policy = OpenAIPolicy(url, "m", timeout_s=1, max_retries=0)
        started = time.monotonic()
        try:
            with pytest.raises(PolicyServerError, match=r"policy server http://127\.0\.0\.1:\d+/v1 .*timeout_s=1"):
                policy.generate(["hello"])
        finally:
            done.set()
        elapsed = time.monotonic() - started
    assert elapsed < 30  # a sanity bound only: the trickle alone lasts 60 s


def test_a_server_dripping_its_status_line_and_headers_times_out_within_the_deadline():
    """One byte every 0.25 s of the status line and headers (a minute's worth): httpx's per-read
    timeout never fires, the request's deadline does."""
    done = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: " + b"a" * 240 + b"\r\n\r\n"

    def drip():
        listener.settimeout(30)
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.recv(65536)
            for byte in head:
                if done.wait(0.25):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    server = threading.Thread(target=drip, daemon=True)
    server.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    started = time.monotonic()
    try:
        with pytest.raises(PolicyServerError, match=r"timeout_s=1"):
            OpenAIPolicy(url, "m", timeout_s=1, max_retries=0).generate(["hello"])
    finally:
        done.set()
        listener.close()
        server.join(5)
    assert time.monotonic() - started < 30  # a sanity bound only: the drip alone lasts a minute


def test_a_gzip_bomb_is_refused_without_inflating_it():
    """64 MiB of reply text gzipped into about 64 KiB: more than MAX_REPLY_BYTES once inflated."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head, tail = _completion_json("@").split(b"@")
    bomb = packer.compress(head) + b"".join(packer.compress(b"a" * 2**20) for _ in range(64))
    bomb += packer.compress(tail) + packer.flush()
    assert MAX_REPLY_BYTES < 64 * 2**20 and len(bomb) < MAX_REPLY_BYTES

    def reply(body):
        return Response(bomb, status=200, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    with (
        serve(reply) as (url, _),
        pytest.raises(
            PolicyServerError, match=rf"policy server http://127\.0\.0\.1:\d+/v1 .*larger than {MAX_REPLY_BYTES} bytes"
        ),
    ):
        OpenAIPolicy(url, "m", max_retries=0).generate(["hello"])


def test_a_reply_over_max_reply_bytes_is_refused_and_a_gzipped_good_one_is_read():
    big = lambda body: Response(_completion_json("a" * 5000), mimetype="application/json")  # noqa: E731
    with serve(big) as (url, _), pytest.raises(PolicyServerError, match=r"refused reply: .*larger than 4096 bytes"):
        OpenAIPolicy(url, "m", max_retries=0, max_reply_bytes=4096).generate(["hello"])
    packed = gzip.compress(_completion_json("<answer>gz"))
    good = lambda body: Response(  # noqa: E731
        packed, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}
    )
    with serve(good) as (url, _):
        [generation] = OpenAIPolicy(url, "m", max_reply_bytes=4096).generate(["hello"], stop=("</answer>",))
    assert generation.text == "<answer>gz</answer>" and generation.finish_reason == "stop"


def test_a_server_ignoring_max_tokens_gets_its_text_cut():
    with serve(lambda body: "x" * 50_000) as (url, _):
        [generation] = OpenAIPolicy(url, "m", max_new_tokens=8).generate(["hello"])
    assert generation.text == "x" * (8 * MAX_CHARS_PER_TOKEN) and generation.finish_reason == "length"
