"""``python -m agents eval --endpoint URL --model NAME``: a served model on our envs, and clear errors."""

from __future__ import annotations

import socket

import pytest
from flask import Response

from agents.cli import main
from tests.support.openai_server import serve

pytest.importorskip("openai")


def test_eval_plays_a_served_model_through_our_prompts(capsys):
    # a scripted model that always gives the same (wrong) answer; the server strips the stop string
    with serve(lambda body: "<think>easy</think><answer>nobody</answer>") as (url, log):
        code = main(
            ["eval", "--endpoint", url, "--model", "scripted", "--env", "SearchQA-v0", "--episodes", "3",
             "--concurrency", "2", "--config.no-progress", "--config.env-kwargs", "max_turns", "2"]
        )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and len(log.requests) == 1 + 3  # the server checked first, then one answer ends each episode
    assert log.requests[0]["max_tokens"] == 1 and log.requests[0]["messages"][-1]["content"] == "ping"
    log.requests.pop(0)
    assert "eval/success_rate: 0" in printed and "eval/mean_episode_length: 1" in printed
    assert "eval/invalid_rate: 0" in printed  # the stripped </answer> was put back: a valid answer
    assert "Answer the question" in log.requests[0]["messages"][-1]["content"]  # our prompt builder's text
    assert log.requests[0]["temperature"] == 0.0 and log.requests[0]["stop"] == ["</search>", "</answer>"]


def test_eval_names_an_unreachable_server_without_a_traceback(capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = main(
        ["eval", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m", "--env", "SearchQA-v0",
         "--episodes", "2", "--max-retries", "0", "--config.no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and f"error: policy server http://127.0.0.1:{port}/v1 (model 'm'): cannot connect" in err
    assert "Traceback" not in err


def test_eval_checks_the_server_before_it_builds_the_envs(capsys, monkeypatch):
    import agents.collection.collector

    def never(*args, **kwargs):
        raise AssertionError("the envs were built before the server was checked")

    monkeypatch.setattr(agents.collection.collector, "Collector", never)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = main(
        ["eval", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m", "--env", "ALFWorld-v0",
         "--episodes", "2", "--max-retries", "0", "--config.no-progress"]
    )  # fmt: skip
    assert code == 1 and "cannot connect" in capsys.readouterr().err


def test_eval_refuses_endpoint_with_a_run(capsys):
    code = main(["eval", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--run", "runs/x"])
    assert code == 1 and "--endpoint and --run cannot be combined" in capsys.readouterr().err


def test_eval_names_a_server_whose_reply_is_not_json(capsys):
    not_json = lambda body: Response("{not json", status=200, mimetype="application/json")  # noqa: E731
    with serve(not_json) as (url, _):
        code = main(
            ["eval", "--endpoint", url, "--model", "m", "--env", "SearchQA-v0", "--episodes", "1",
             "--max-retries", "0", "--config.no-progress"]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and f"error: policy server {url} (model 'm'): malformed reply" in err
    assert "Traceback" not in err
