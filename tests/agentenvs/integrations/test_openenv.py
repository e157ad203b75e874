"""agentenvs.integrations.openenv: a real OpenEnv server on loopback, driven by real OpenEnv clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("openenv.core.env_server.http_server")
requests = pytest.importorskip("requests")
ws_client = pytest.importorskip("websockets.sync.client")

import gymnasium as gym  # noqa: E402

import agentenvs  # noqa: E402, F401  (registers the ids)
from agentenvs.integrations._openenv import TextEnvironment  # noqa: E402
from agentenvs.integrations.openenv import TextAction, TextEnvClient, create_app, make_server  # noqa: E402
from tests.support.sockets import read_reply, stalled_connection  # noqa: E402

MAX_SESSIONS = 3
MAX_BODY_BYTES = 1 << 18
START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def serving(env_id: str = "SearchQA-v0", **options) -> Iterator[str]:
    """``env_id`` served on 127.0.0.1, a free port; stopped (and waited for) on exit."""
    urls: list[str] = []
    server = make_server(env_id, port=0, on_start=urls.append, **options)
    thread = threading.Thread(target=server.run, name="openenv-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not urls and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert urls, "the server did not start"
    try:
        yield urls[0]
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        assert not thread.is_alive(), "the server did not stop"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with serving(max_sessions=MAX_SESSIONS, max_sessions_per_client=MAX_SESSIONS, max_body_bytes=MAX_BODY_BYTES) as url:
        yield url


@pytest.fixture(scope="module")
def questions():
    return gym.make("SearchQA-v0").unwrapped.questions


def client(url: str):
    return TextEnvClient(base_url=url, connect_timeout_s=10, message_timeout_s=30).sync()


def test_a_full_episode_through_the_openenv_client(server_url, questions):
    task_id = next(iter(questions))
    example = questions[task_id]
    with client(server_url) as env:
        result = env.reset(task_id=task_id, episode_id="e-1")
        assert result.observation.text.startswith(f"Question: {example.question}")
        assert not result.done and result.observation.info["task_id"] == task_id
        result = env.step(TextAction(action=f"<search>{example.question}</search>"))
        assert result.observation.text.startswith("<information>") and result.reward == 0.0 and not result.done
        state = env.state()
        assert (state.episode_id, state.step_count, state.task_id, state.done) == ("e-1", 1, task_id, False)
        assert env.reset(task_id=task_id).observation.info["turn"] == 0 and env.state().episode_id not in (None, "e-1")
        env.step(TextAction(action=f"<search>{example.question}</search>"))
        result = env.step(f"<answer>{example.answers[0]}</answer>")
        assert result.done and result.reward == 1.0 and result.observation.terminated
        assert result.observation.info["won"] and env.state().won
        # A step after the end changes nothing (the session holds the finished episode; env.step would raise).
        after = env.step("<answer>other</answer>")
        assert after.done and after.reward == 0.0 and "over" in after.observation.info["error"]


def test_privileged_info_reaches_clients_only_when_exposed(server_url, questions):
    task_id = next(iter(questions))
    answer = questions[task_id].answers[0]
    with client(server_url) as env:  # the default server: clients are agents
        for result in (env.reset(task_id=task_id), env.step(f"<answer>{answer}x</answer>")):
            info = result.observation.info
            assert "privileged" not in info and "gold_answers" not in info and info["task_id"] == task_id
    environment = TextEnvironment("SearchQA-v0", expose_privileged=True)
    try:
        info = environment.reset(task_id=task_id).info
        assert info["privileged"]["gold_answers"] == list(questions[task_id].answers)
    finally:
        environment.close()


def test_openenv_generic_client_speaks_the_same_protocol(server_url):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=server_url).sync() as env:
        result = env.reset(seed=3)
        assert result.observation["text"].startswith("Question:")
        result = env.step({"action": "no tags at all"})
        assert result.reward == 0.0 and result.observation["info"]["action_valid"] is False


def test_sessions_are_isolated(server_url, questions):
    first_id, second_id = list(questions)[:2]
    with client(server_url) as first, client(server_url) as second:
        first.reset(task_id=first_id)
        second.reset(task_id=second_id)
        first.step("<search>anything</search>")
        first.step(f"<answer>{questions[first_id].answers[0]}</answer>")
        one, two = first.state(), second.state()
        assert (one.task_id, one.step_count, one.done) == (first_id, 2, True)
        assert (two.task_id, two.step_count, two.done) == (second_id, 0, False)
        result = second.step(f"<answer>{questions[second_id].answers[0]}</answer>")
        assert result.observation.info["task_id"] == second_id and result.reward == 1.0


def test_concurrent_sessions_play_their_own_episodes(server_url, questions):
    task_ids = list(questions)[10 : 10 + MAX_SESSIONS]
    results = {}

    def play(task_id: str) -> None:
        with open_session(server_url, task_id=task_id) as env:
            for _ in range(3):
                env.step(f"<search>{questions[task_id].question}</search>")
            result = env.step(f"<answer>{questions[task_id].answers[0]}</answer>")
            results[task_id] = (result.observation.info["task_id"], result.reward)

    threads = [threading.Thread(target=play, args=(task_id,)) for task_id in task_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == {task_id: (task_id, 1.0) for task_id in task_ids}


def open_session(url: str, **reset):
    """A client whose session has started: earlier tests' sessions are released just after they hang up."""
    deadline = time.monotonic() + 10
    while True:
        env = client(url)
        try:
            env.reset(**(reset or {"seed": 0}))
            return env
        except RuntimeError:
            env.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_sessions_beyond_max_sessions_are_refused_and_the_rest_keep_working(server_url):
    clients = []
    try:
        for _ in range(MAX_SESSIONS):
            clients.append(open_session(server_url))
        # The server refuses the extra session with an error frame as soon as it connects.
        with ws_client.connect(server_url.replace("http://", "ws://") + "/ws", open_timeout=10) as extra:
            assert json.loads(extra.recv(timeout=30))["data"]["code"] == "CAPACITY_REACHED"
        assert clients[0].step("<search>x</search>").observation.text.startswith("<information>")
    finally:
        for env in clients:
            env.close()


HUGE = b'{"action": {"action": "' + b"x" * MAX_BODY_BYTES + b'"}}'
MALFORMED_HTTP: list[tuple[str, str, bytes, dict[str, str]]] = [
    *[
        ("POST", "/reset", body, {"content-type": "application/json"})
        for body in (
            b"{",
            b"[]",
            b'"seed"',
            b"1",
            b"\xff\xfe\x00",
            b"[" * 100_000,
            b'{"seed": -1}',
            b'{"seed": "x"}',
            b'{"seed": 1.5}',
            b'{"seed": 1e400}',
            b'{"seed": NaN}',
            b'{"seed": 123456789012345678901234567890}',
            b'{"seed": "' + b"9" * 5000 + b'"}',
            b'{"episode_id": 5}',
            b'{"episode_id": "' + b"x" * 300 + b'"}',
            b'{"bogus": 1}',
            b'{"seed": 0, "options": {"task_id": "x"}}',
            b'{"task_id": "no-such-task"}',
            b'{"task_id": "' + b"\\ud800" * 50 + b'"}',
            b'{"task_id": 5}',
            b'{"task_id": ["kb0-q0"]}',
        )
    ],
    *[
        ("POST", "/step", body, {"content-type": "application/json"})
        for body in (
            b"",
            b"{}",
            b'{"action": 5}',
            b'{"action": "text"}',
            b'{"action": {}}',
            b'{"action": {"action": 5}}',
            b'{"action": {"action": null}}',
            b'{"action": {"action": ["\\ud800"]}}',
            b'{"action": {"action": {"nested": "x"}}}',
            b'{"action": {"action": "x", "bogus": 1}}',
            b'{"action": {"action": "x", "metadata": 5}}',
            b'{"action": {"type": "call_tool", "tool_name": "x", "arguments": {}}}',
            b'{"action": {"action": "x"}, "bogus": 1}',
            b'{"action": {"action": "x"}, "timeout_s": -1}',
            b'{"action": {"action": "x"}, "request_id": 7}',
            b'{"action": {"action": "x"}}',  # well formed, but HTTP /step is stateless: no episode
            b'{"action": {"action": "' + b"x" * 70_000 + b'"}}',
            HUGE,
        )
    ],
    ("POST", "/reset", b"seed=1", {"content-type": "application/x-www-form-urlencoded"}),
    ("POST", "/step", b"hello", {"content-type": "text/plain"}),
    ("GET", "/step", b"", {}),
    ("GET", "/reset", b"", {}),
    ("DELETE", "/state", b"", {}),
    ("POST", "/no-such-route", b"{}", {"content-type": "application/json"}),
    ("GET", "/ws", b"", {}),
]


@pytest.mark.parametrize(("method", "path", "body", "headers"), MALFORMED_HTTP, ids=range(len(MALFORMED_HTTP)))
def test_malformed_http_requests_get_a_4xx(server_url, method, path, body, headers):
    response = requests.request(method, server_url + path, data=body, headers=headers, timeout=30)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    if response.headers.get("content-type", "").startswith("application/json"):
        response.json()  # well-formed JSON, whatever the request held


@pytest.mark.parametrize("path", ["/step", "/reset", "/mcp"])
@pytest.mark.parametrize("chunked", [True, False])
def test_a_body_over_the_limit_gets_413_however_it_is_sent(server_url, path, chunked):
    """Before, ``/mcp`` answered a chunked body over the limit with 200 (a JSON-RPC parse error)."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}' + b" " * (2 * MAX_BODY_BYTES)

    def chunks():
        for start in range(0, len(body), MAX_BODY_BYTES // 4):
            yield body[start : start + MAX_BODY_BYTES // 4]

    headers = {"content-type": "application/json"}
    response = requests.post(server_url + path, data=chunks() if chunked else body, headers=headers, timeout=30)
    assert response.status_code == 413, (response.status_code, response.text[:200])
    assert str(MAX_BODY_BYTES) in response.json()["detail"]


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}",
    ],
)
def test_broken_http_gets_a_4xx_from_the_server(server_url, raw):
    host, port = server_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(raw)
        status_line = connection.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 4"), status_line


def test_escaped_lone_surrogates_in_an_action_become_u_fffd_as_in_env_step(server_url):
    step = {"action": {"action": "<search>\ud800 Fethstoul</search>"}}
    response = requests.post(server_url + "/step", data=json.dumps(step), headers={"content-type": "application/json"})
    assert response.status_code == 409  # validated; refused only because HTTP /step has no episode
    with client(server_url) as env:
        env.reset(seed=0)
        result = env.step("<search>\ud800 Fethstoul</search>")
        assert result.observation.info["action"] == "<search>\ufffd Fethstoul</search>"


def test_well_formed_http_requests_work(server_url):
    assert requests.post(server_url + "/reset", json={"seed": 1}, timeout=30).json()["observation"]["text"]
    assert requests.get(server_url + "/health", timeout=30).json()["status"] == "healthy"
    assert requests.get(server_url + "/metadata", timeout=30).json()["name"] == "SearchQA-v0"
    schema = requests.get(server_url + "/schema", timeout=30).json()
    assert schema["action"]["properties"]["action"]["type"] == "string"


MALFORMED_WS = [
    "{",
    "[]",
    "null",
    '"reset"',
    '{"type": "bogus"}',
    '{"type": "step", "data": {"action": 5}}',
    '{"type": "step", "data": {"action": "x", "bogus": 1}}',
    '{"type": "step", "data": "x"}',
    '{"type": "step"}',
    '{"type": "reset", "data": {"seed": -1}}',
    '{"type": "reset", "data": {"seed": "x"}}',
    '{"type": "reset", "data": {"task_id": 5}}',
    '{"type": "reset", "data": {"task_id": "no-such-task"}}',
    '{"type": "reset", "data": {"bogus": true}}',
    '{"type": "reset", "data": []}',
    '{"type": "state", "extra": 1}',
    '{"type": "reset", "data": {"seed": 0}' + " " * 10,  # cut short
    "[" * 100_000,
    '{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}",
    '{"type": "step", "data": {"action": "x", "bogus": "\\ud800"}}',  # an error reply that echoes a surrogate
    '{"type": "reset", "data": {"episode_id": "\\udfff", "task_id": 5}}',
]


def test_malformed_websocket_messages_get_error_frames_and_the_session_survives(server_url):
    ws_url = server_url.replace("http://", "ws://") + "/ws"
    with ws_client.connect(ws_url, open_timeout=10, close_timeout=5) as connection:
        connection.send(json.dumps({"type": "step", "data": {"action": "x"}}))  # before any reset
        assert json.loads(connection.recv(timeout=30))["type"] == "error"
        for message in [*MALFORMED_WS, b"\x00binary"]:
            connection.send(message)
            reply = json.loads(connection.recv(timeout=30))
            assert reply["type"] == "error", (message, reply)
        connection.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        reply = json.loads(connection.recv(timeout=30))
        assert reply["type"] == "observation" and reply["data"]["observation"]["text"].startswith("Question:")


def test_a_websocket_message_over_the_limit_closes_only_its_session(server_url):
    from websockets.exceptions import ConnectionClosed

    ws_url = server_url.replace("http://", "ws://") + "/ws"
    with ws_client.connect(ws_url, open_timeout=10, max_size=None) as connection:
        with pytest.raises(ConnectionClosed) as closed:
            connection.send("x" * (MAX_BODY_BYTES + 1))
            connection.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    with client(server_url) as env:
        assert env.reset(seed=0).observation.text.startswith("Question:")


def test_bad_env_arguments_fail_when_the_app_is_made():
    with pytest.raises(ValueError, match="top_k"):
        create_app("SearchQA-v0", top_k=0)
    with pytest.raises(ValueError, match="max_sessions"):
        create_app("SearchQA-v0", max_sessions=0)


def test_a_session_whose_first_reset_named_an_unknown_task_plays_on(server_url):
    """Before, every later step of such a session answered EXECUTION_ERROR (a broken env checker)."""
    ws_url = server_url.replace("http://", "ws://") + "/ws"
    with ws_client.connect(ws_url, open_timeout=10, close_timeout=5) as connection:
        connection.send(json.dumps({"type": "reset", "data": {"task_id": "no-such-task"}}))
        reply = json.loads(connection.recv(timeout=30))
        assert reply["type"] == "error" and "no-such-task" in json.dumps(reply)
        connection.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(connection.recv(timeout=30))["type"] == "observation"
        connection.send(json.dumps({"type": "step", "data": {"action": "<answer>x</answer>"}}))
        reply = json.loads(connection.recv(timeout=30))
        assert reply["type"] == "observation" and reply["data"]["done"], reply


def create_mcp_session(url: str) -> dict:
    """``openenv/session/create`` over HTTP ``/mcp``: a session that no connection keeps."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    return requests.post(url + "/mcp", json=request, timeout=30).json()


def test_idle_sessions_time_out_and_free_their_slots():
    """Before, sessions made over /mcp (or idle WebSockets) held every slot for ever."""
    with serving(max_sessions=2, max_sessions_per_client=2, session_timeout_s=0.5) as url:
        assert all("result" in create_mcp_session(url) for _ in range(2))
        assert "error" in create_mcp_session(url)  # full, for now
        # OpenEnv's reaper wakes every 5 s; a generous deadline keeps a loaded machine from failing this.
        deadline = time.monotonic() + 60
        while "result" not in create_mcp_session(url):
            assert time.monotonic() < deadline, "idle sessions were never destroyed"
            time.sleep(0.5)


def test_an_idle_websocket_session_times_out_and_its_connection_is_told():
    with serving(max_sessions=1, max_sessions_per_client=1, session_timeout_s=0.5) as url:
        with ws_client.connect(url.replace("http://", "ws://") + "/ws", open_timeout=10) as connection:
            connection.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(connection.recv(timeout=30))["type"] == "observation"
            deadline = time.monotonic() + 60  # the reaper wakes every 5 s
            while "result" not in (created := create_mcp_session(url)):
                assert time.monotonic() < deadline, "the idle WebSocket session kept its slot"
                time.sleep(0.5)
            # Its slot is someone else's now: the old connection may not play on.
            connection.send(json.dumps({"type": "step", "data": {"action": "<answer>x</answer>"}}))
            reply = json.loads(connection.recv(timeout=30))
            assert reply["type"] == "error" and "timed out" in reply["data"]["message"], reply
        assert created["result"]["session_id"]


def test_one_client_cannot_take_every_slot():
    with serving(max_sessions=4, max_sessions_per_client=2) as url:
        assert all("result" in create_mcp_session(url) for _ in range(2))
        refused = create_mcp_session(url)
        assert "max_sessions_per_client=2" in refused["error"]["message"], refused
        with ws_client.connect(url.replace("http://", "ws://") + "/ws", open_timeout=10) as extra:
            reply = json.loads(extra.recv(timeout=30))
            assert reply["data"]["code"] == "CAPACITY_REACHED" and "per_client" in reply["data"]["message"]
    with serving(max_sessions=3) as url:  # loopback: every local client (a trainer's rollouts) is one address
        assert all("result" in create_mcp_session(url) for _ in range(3))
    from agentenvs.core.hosts import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("example.org")
    with pytest.raises(ValueError, match="max_sessions_per_client"):
        create_app("SearchQA-v0", max_sessions_per_client=0)
    with pytest.raises(ValueError, match="session_timeout_s"):
        create_app("SearchQA-v0", session_timeout_s=0)


def test_connections_arriving_at_once_cannot_pass_the_per_client_cap_together():
    """Before, the cap was counted, the lock released, and the owner recorded only once the env was
    built: 16 simultaneous connects from one address got 16 sessions with a cap of 4."""
    from concurrent.futures import ThreadPoolExecutor

    with serving(max_sessions=16, max_sessions_per_client=4) as url:
        barrier = threading.Barrier(16)

        def create(_: int) -> dict:
            barrier.wait(timeout=60)
            return create_mcp_session(url)

        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(create, range(16)))
        assert sum("result" in reply for reply in replies) == 4, replies
        assert all("max_sessions_per_client=4" in r["error"]["message"] for r in replies if "error" in r)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(
            f"{record.getMessage()} {record.exc_info[1]!r}" if record.exc_info else record.getMessage()
        )


def test_a_client_hanging_up_mid_reply_is_not_logged_as_a_server_error():
    """Before, uvicorn logged ``Exception in ASGI application`` (``WebSocketDisconnected``)."""
    records = Records()
    logger = logging.getLogger("uvicorn.error")  # where uvicorn reports an application's exceptions
    logger.addHandler(records)
    try:
        with serving(max_sessions=4, max_sessions_per_client=4) as url:
            for _ in range(10):  # whether the reply to the reset meets the hang-up is a race: try a few
                with ws_client.connect(url.replace("http://", "ws://") + "/ws", open_timeout=10) as connection:
                    connection.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            open_session(url).close()  # the hung-up sessions' slots are free again
    finally:
        logger.removeHandler(records)
    assert not [message for message in records.messages if "Exception" in message], records.messages


def test_the_websocket_guard_ends_a_session_quietly_when_the_reply_meets_a_hang_up():
    """The race above, made certain: OpenEnv's handler fails sending to a client that is gone."""
    from starlette.websockets import WebSocketDisconnected

    from agentenvs.integrations._openenv import WebSocketGuard

    async def handler(scope, receive, send) -> None:
        raise WebSocketDisconnected('Cannot call "send" once a close message has been sent.')

    async def receive() -> dict:
        return {"type": "websocket.disconnect", "code": 1006}

    async def send(message) -> None:
        raise AssertionError("nothing is sent to a client that is gone")

    asyncio.run(WebSocketGuard(handler)({"type": "websocket"}, receive, send))  # raises nothing


def test_alfworld_game_paths_on_the_server_reach_no_client():
    """Before, every ALFWorld info sent ``game_file``: the game's absolute path on the server."""
    with serving("ALFWorld-v0", max_sessions=2) as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with ws_client.connect(ws_url, open_timeout=10, max_size=None) as connection:
            for message in ({"type": "reset", "data": {"seed": 0}}, {"type": "step", "data": {"action": "look"}}):
                connection.send(json.dumps(message))
                reply = connection.recv(timeout=60)
                info = json.loads(reply)["data"]["observation"]["info"]
                assert info["task_id"] and "game_file" not in info and "game.tw-pddl" not in reply, reply[:300]
    environment = TextEnvironment("ALFWorld-v0", expose_privileged=True)  # a trusted client may have it
    try:
        assert environment.reset(seed=0).info["game_file"].endswith("game.tw-pddl")
    finally:
        environment.close()


def raw_connection(url: str, sent: bytes) -> socket.socket:
    """A loopback connection to ``url`` that has sent ``sent`` and then stalls."""
    host, port = url.removeprefix("http://").split(":")
    return stalled_connection(host, int(port), sent)


HALF_SENT = {
    "a part of the headers": b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: appl",
    "a part of the request line": b"POS",
    "the headers and a part of the body": (
        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    ),
    "a part of a chunked body": (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"jso'
    ),
}


def test_half_sent_requests_get_408_and_free_their_connection_while_others_are_served():
    """Before, a client that sent part of a request and stalled held its connection for ever (no reply)."""
    with serving(max_sessions=2, request_timeout_s=0.5) as url:
        stalled = {name: raw_connection(url, sent) for name, sent in HALF_SENT.items()}
        silent = raw_connection(url, b"")  # opened, nothing sent
        try:
            # Served while every stalled client still holds its connection.
            assert requests.post(url + "/reset", json={"seed": 0}, timeout=30).status_code == 200
            with client(url) as env:
                assert env.reset(seed=0).observation.text
            for name, connection in stalled.items():
                reply = read_reply(connection)
                assert reply.startswith(b"HTTP/1.1 408 "), (name, reply[:200])
                assert b"connection: close" in reply.lower(), (name, reply[:300])
            assert read_reply(silent) == b""  # closed quietly, as an idle kept-alive connection is
        finally:
            for connection in [*stalled.values(), silent]:
                connection.close()
        assert requests.get(url + "/health", timeout=30).status_code == 200


def test_a_request_trickling_its_headers_gets_408_though_each_byte_comes_in_time():
    """The deadline is for the whole head: bytes that keep coming do not extend it (slowloris)."""
    with serving(max_sessions=2, request_timeout_s=0.5) as url:
        head = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Filler: " + b"a" * 1_000
        connection = raw_connection(url, b"")
        try:
            connection.settimeout(0.05)
            reply = b""
            for byte in head:  # one byte per 50 ms at most, far under the deadline each
                try:
                    connection.send(bytes([byte]))
                    reply = connection.recv(4096)
                except TimeoutError:
                    continue
                except OSError:  # the server closed while we were sending
                    break
                break
            assert (reply or read_reply(connection)).startswith(b"HTTP/1.1 408 "), reply[:200]
        finally:
            connection.close()


def test_a_client_trickling_a_refused_body_is_disconnected():
    """A 413 comes before the body is read; the rest is dropped so the client can read the reply.

    Before, a client that kept trickling that rest held the connection for as long as it liked
    (each byte cancelled uvicorn's keep-alive timer, and nothing armed it again).
    """
    with serving(max_sessions=2, max_body_bytes=MAX_BODY_BYTES, request_timeout_s=0.5) as url:
        head = f"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: {4 * MAX_BODY_BYTES}\r\n\r\n".encode()
        connection = raw_connection(url, head + b"{" * 1000)
        try:
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += connection.recv(4096)
            assert reply.startswith(b"HTTP/1.1 413 "), reply[:200]
            connection.settimeout(0.2)
            closed = False
            for _ in range(300):  # a byte every 0.2 s for up to a minute: a safety net, not the verdict
                try:
                    connection.send(b" ")
                    closed = connection.recv(4096) == b""
                except TimeoutError:
                    continue
                except OSError:  # reset by the server
                    closed = True
                if closed:
                    break
            assert closed, "the server kept a connection whose body it had refused"
        finally:
            connection.close()
        # A client that sends its whole oversized body still reads the 413, and the server serves on.
        assert requests.post(url + "/reset", data=b" " * (2 * MAX_BODY_BYTES), timeout=30).status_code == 413
        assert requests.get(url + "/health", timeout=30).status_code == 200


def test_the_body_limit_answers_a_stalled_body_with_408_and_closes():
    from agentenvs.integrations._openenv import BodyLimit

    async def route(scope, receive, send) -> None:
        raise AssertionError("a route never sees a body that did not arrive")

    async def stalled() -> dict:
        await asyncio.Event().wait()  # the rest of the body never comes
        raise AssertionError("unreachable")

    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/reset", "headers": [(b"content-length", b"100")]}
    asyncio.run(BodyLimit(route, max_body_bytes=1024, timeout_s=0.01)(scope, stalled, send))
    assert sent[0]["status"] == 408 and (b"connection", b"close") in sent[0]["headers"]
    assert b"did not arrive" in sent[1]["body"]


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "10", True])
def test_request_timeout_s_is_checked(bad):
    with pytest.raises(ValueError, match="request_timeout_s"):
        create_app("SearchQA-v0", request_timeout_s=bad)
    with pytest.raises(ValueError, match="request_timeout_s"):
        make_server("SearchQA-v0", port=0, request_timeout_s=bad)
