"""Nightly fuzz: every registered env with hostile model outputs, the shop's HTTP routes, and floods
of both servers.

Per env (all its observation modes and action formats, the steps split evenly between
them): fuzzed outputs sent, exceptions and broken invariants (see
:mod:`agentenvs.testing.fuzzing`), steps/s, episodes, accepted actions and the process's
RSS after the env (current and peak). Then the shop's routes
(:mod:`agentenvs.testing.shop_routes`): requests sent, status counts and 5xx. Then the floods,
on loopback only (one address floods, a victim at another plays on):

- the shop (in process, client addresses set per request): ``--flood-sessions`` new sessions
  from one address (429 past ``max_sessions_per_client``), the victim's session and a newcomer
  still served, oversized bodies (413);
- the shop's server (werkzeug on 127.0.0.1): ``--flood-stalled`` half-sent requests while a
  victim shops (disconnected mid-headers, 408 mid-body);
- the OpenEnv server (uvicorn on 127.0.0.1, flooding from 127.0.0.2): ``--flood-sessions``
  ``openenv/session/create`` calls over ``/mcp`` and idle WebSocket clients past the per-client
  cap (``CAPACITY_REACHED``), ``--flood-stalled`` half-sent requests while the victim plays
  (408, or closed when nothing was sent), oversized bodies, chunked or not (413).

Then the snapshots (:mod:`agentenvs.testing.snapshot_attacks`): ``--forgeries`` forged,
corrupted and foreign snapshots per env, each refused cleanly or restored truthfully, with no
privileged key in a default env's info.

Exit status 1 when anything failed, so a scheduler can alert on it.

ALFWorld replays its first seeded game (generating games is not what is fuzzed).

Run: ``python benchmarks/fuzz_envs.py [--parts envs shop floods snapshots] [--steps 10000] [--requests 5000]
[--flood-sessions 2000] [--flood-stalled 64] [--forgeries 2000] [--seed 0] [--envs WebShop-v0 ...]``
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import logging
import resource
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.registration import agentenvs_ids
from agentenvs.testing.fuzzing import FuzzReport, env_variants, fuzz_env
from agentenvs.testing.shop_routes import fuzz_routes
from agentenvs.testing.snapshot_attacks import attack_snapshots
from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine

QUIET: dict[str, dict[str, Any]] = {"ALFWorld-v0": {"prefetch": False}}
"""No prefetch process: the fuzz replays one game."""

SMALL_WORLDS: dict[str, dict[str, Any]] = {"ALFWorld-v0": {"num_generated_games": 8}}
"""The snapshot attack reseeds often: a pool of 8 games, so it restores games rather than generating them."""


def rss_mib() -> tuple[float, float]:
    """Current and peak resident memory of this process, in MiB (current needs psutil)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    try:
        import psutil
    except ImportError:
        return float("nan"), peak
    return psutil.Process().memory_info().rss / 2**20, peak


def fuzz_one_env(env_id: str, steps: int, seed: int) -> tuple[FuzzReport, int]:
    """All of ``env_id``'s variants, ``steps`` outputs in all; the merged report and the variant count."""
    variants = env_variants(env_id)
    total = FuzzReport()
    for index, variant in enumerate(variants):
        share = steps // len(variants) + (index < steps % len(variants))
        env = gym.make(env_id, privileged=True, **variant, **QUIET.get(env_id, {})).unwrapped
        task_ids = None
        if env_id == "ALFWorld-v0":
            task_ids = [env.reset(seed=0)[1]["task_id"]]
        try:
            report = fuzz_env(env, steps=share, seed=seed + index, task_ids=task_ids)
        finally:
            env.close()
        total.steps += report.steps
        total.episodes += report.episodes
        total.valid_actions += report.valid_actions
        total.terminated += report.terminated
        total.seconds += report.seconds
        total.errors += [(f"{variant} {raw}", trace) for raw, trace in report.errors]
    return total, len(variants)


PARTS = ("envs", "shop", "floods", "snapshots")
FLOOD_ADDRESS = "127.0.0.2"
"""Where the OpenEnv flood comes from: a loopback address of its own, so the victim (127.0.0.1) is
another client. Linux answers on all of 127.0.0.0/8."""
SHOP_MAX_SESSIONS = 1000
OPENENV_MAX_SESSIONS = 16
OPENENV_PER_CLIENT = 8
OPENENV_MAX_BODY = 1 << 20
OPENENV_REQUEST_TIMEOUT_S = 1.0
SHOP_REQUEST_TIMEOUT_S = 1.0


def flood_shop(sessions: int) -> tuple[list[str], bool]:
    """The shop's flood cases, in process; the lines to print and whether every expectation held."""
    app = create_app(WebShopEngine.generated(num_products=200, cache_index=False), max_sessions=SHOP_MAX_SESSIONS)

    def client_at(address: str) -> Any:
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = address
        return client

    victim, flood = client_at("198.51.100.2"), client_at("203.0.113.7")
    ok = victim.get("/victim").status_code == 200
    start = time.perf_counter()
    statuses = Counter(flood.get(f"/flood{i}").status_code for i in range(sessions))
    seconds = time.perf_counter() - start
    alive = victim.get("/search_results/victim/socks/1").status_code == 200
    newcomer = client_at("192.0.2.1").get("/newcomer").status_code == 200
    big = Counter(victim.post("/victim", data={"search_query": "x" * 20_000}).status_code for _ in range(10))
    cap = SHOP_MAX_SESSIONS // 2
    ok &= statuses[200] == min(sessions, cap) and statuses[429] == max(0, sessions - cap) and alive and newcomer
    ok &= big == Counter({413: 10})
    return [
        f"shop: {sessions} new sessions from one address in {seconds:.1f} s: {_counts(statuses)} "
        f"(max_sessions {SHOP_MAX_SESSIONS}, per client {cap}); the victim's session "
        f"{'alive' if alive else 'LOST'}, a newcomer {'served' if newcomer else 'REFUSED'}",
        f"shop: 10 bodies of 20 KB (limit 16 KiB): {_counts(big)}",
    ], ok


def flood_shop_server(stalled: int) -> tuple[list[str], bool]:
    """Half-sent requests at the shop's own server on loopback while a victim shops."""
    from agentenvs.webshop.server import make_shop_server

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # a line per request and per timeout
    app = create_app(WebShopEngine.generated(num_products=200, cache_index=False))
    server = make_shop_server(app, port=0, request_timeout_s=SHOP_REQUEST_TIMEOUT_S)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = "127.0.0.1", server.server_port
    try:
        connections = [_stalled(host, port, index, shop=True) for index in range(stalled)]
        start = time.perf_counter()
        served = Counter(_get_status(host, port, f"/fixed_{turn}") for turn in range(4))  # the victim
        answers = Counter(_answer(connection) for connection in connections)
        seconds = time.perf_counter() - start
    finally:
        server.shutdown()
        server.server_close()
    # Mid-headers (or nothing sent): disconnected; mid-body: 408.
    ok = served == Counter({302: 4}) and answers == Counter(
        {"408": (stalled + 2) // 4, "closed": stalled - (stalled + 2) // 4}
    )
    return [
        f"shop server: {stalled} half-sent requests (request_timeout_s={SHOP_REQUEST_TIMEOUT_S}): "
        f"{_counts(answers)}, all answered in {seconds:.1f} s; meanwhile the victim's 4 requests got {_counts(served)}"
    ], ok


def _counts(counter: Counter[Any]) -> str:
    return ", ".join(f"{key}: {count}" for key, count in sorted(counter.items(), key=str))


@contextlib.contextmanager
def _openenv_server() -> Iterator[tuple[str, int]]:
    from agentenvs.integrations.openenv import make_server

    urls: list[str] = []
    server = make_server(
        "SearchQA-v0",
        port=0,
        max_sessions=OPENENV_MAX_SESSIONS,
        max_sessions_per_client=OPENENV_PER_CLIENT,
        max_body_bytes=OPENENV_MAX_BODY,
        request_timeout_s=OPENENV_REQUEST_TIMEOUT_S,
        log_level="error",
        on_start=urls.append,
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not urls and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not urls:
        raise RuntimeError("the OpenEnv server did not start")
    host, port = urls[0].removeprefix("http://").split(":")
    try:
        yield host, int(port)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def _post(host: str, port: int, path: str, body: Any, *, source: str = FLOOD_ADDRESS) -> tuple[int, bytes]:
    """A POST from ``source``: a JSON value, raw bytes, or an iterator of chunks (sent chunked)."""
    connection = http.client.HTTPConnection(host, port, timeout=60, source_address=(source, 0))
    try:
        data = json.dumps(body).encode() if not isinstance(body, bytes | Iterator) else body
        connection.request("POST", path, body=data, headers={"content-type": "application/json"})
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def _stalled(host: str, port: int, index: int, *, shop: bool = False) -> socket.socket:
    """A connection from the flood's address that sent part of a request (or nothing) and stalls."""
    path, body_type, body = (
        (b"/fixed_0", b"application/x-www-form-urlencoded", b"search_query=so")
        if shop
        else (b"/reset", b"application/json", b"{")
    )
    sent = (
        b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: appl",  # part of the headers
        b"POST "
        + path
        + b" HTTP/1.1\r\nHost: x\r\nContent-Type: "
        + body_type
        + b"\r\nContent-Length: 100\r\n\r\n"
        + body,
        b"POS",  # part of the request line
        b"",  # nothing at all
    )[index % 4]
    connection = socket.create_connection((host, port), timeout=60, source_address=(FLOOD_ADDRESS, 0))
    connection.sendall(sent)
    return connection


def _answer(connection: socket.socket) -> str:
    """What a stalled connection got: its status line's code, ``closed`` (nothing), or ``open``."""
    reply = b""
    try:
        while chunk := connection.recv(4096):
            reply += chunk
    except TimeoutError:
        return "open"
    finally:
        connection.close()
    return reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/1.1 ") else "closed"


def flood_openenv(sessions: int, stalled: int) -> tuple[list[str], bool]:
    """The OpenEnv server's flood cases over loopback; the lines to print and whether every expectation held."""
    from websockets.sync.client import connect

    from agentenvs.integrations.openenv import TextEnvClient

    lines: list[str] = []
    with _openenv_server() as (host, port):
        url = f"http://{host}:{port}"
        with TextEnvClient(base_url=url, connect_timeout_s=10, message_timeout_s=60).sync() as victim:
            victim.reset(seed=0)
            create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
            start = time.perf_counter()
            replies = [json.loads(_post(host, port, "/mcp", create)[1]) for _ in range(sessions)]
            seconds = time.perf_counter() - start
            made = Counter(
                "session"
                if "result" in reply
                else "refused (per client)"
                if "max_sessions_per_client" in reply.get("error", {}).get("message", "")
                else "error"
                for reply in replies
            )
            frames: Counter[str] = Counter()
            for _ in range(10):  # idle WebSocket clients past the cap
                sock = socket.create_connection((host, port), timeout=30, source_address=(FLOOD_ADDRESS, 0))
                with connect(f"ws://{host}:{port}/ws", sock=sock, open_timeout=30) as extra:
                    frames[json.loads(extra.recv(timeout=30))["data"]["code"]] += 1
            played = not victim.step("<search>Fethstoul Systems</search>").observation.info.get("error")
            newcomer = "result" in json.loads(_post(host, port, "/mcp", create, source="127.0.0.3")[1])
            ok = made["session"] == min(sessions, OPENENV_PER_CLIENT) and frames == Counter({"CAPACITY_REACHED": 10})
            ok &= played and newcomer
            lines.append(
                f"OpenEnv: {sessions} session/create over /mcp from one address in {seconds:.1f} s: {_counts(made)} "
                f"(max_sessions {OPENENV_MAX_SESSIONS}, per client {OPENENV_PER_CLIENT}); 10 more WebSocket "
                f"clients: {_counts(frames)}; the victim {'played on' if played else 'FAILED'}, "
                f"a newcomer {'served' if newcomer else 'REFUSED'}"
            )

            connections = [_stalled(host, port, index) for index in range(stalled)]
            start = time.perf_counter()
            steps = 0
            for turn in range(4):  # the victim plays (and a plain request is served) while they stall
                result = victim.step(f"<search>query {turn}</search>")
                steps += not result.observation.info.get("error")
                if result.done:
                    victim.reset(seed=turn)
            health = _get_status(host, port, "/health")
            answers = Counter(_answer(connection) for connection in connections)
            seconds = time.perf_counter() - start
            expected = Counter({"408": stalled - stalled // 4, "closed": stalled // 4})
            ok &= steps == 4 and health == 200 and answers == expected
            lines.append(
                f"OpenEnv: {stalled} half-sent requests (request_timeout_s={OPENENV_REQUEST_TIMEOUT_S}): "
                f"{_counts(answers)}, all answered in {seconds:.1f} s; meanwhile the victim played {steps} of 4 "
                f"steps and /health got {health}"
            )

            body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}' + b" " * (2 * OPENENV_MAX_BODY)
            chunked = (body[offset : offset + (1 << 16)] for offset in range(0, len(body), 1 << 16))
            big = Counter(_post(host, port, path, body)[0] for path in ("/reset", "/step", "/mcp") for _ in range(3))
            big[_post(host, port, "/mcp", iter(chunked))[0]] += 1
            ok &= big == Counter({413: 10})
            played = not victim.step("<answer>x</answer>").observation.info.get("error")
            ok &= played
            lines.append(
                f"OpenEnv: 10 bodies of 2 MiB (limit 1 MiB; one chunked): {_counts(big)}; "
                f"the victim {'played on' if played else 'FAILED'}"
            )
    return lines, ok


def _get_status(host: str, port: int, path: str) -> int:
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="fuzzed outputs per env (split over its variants)")
    parser.add_argument("--requests", type=int, default=5_000, help="hostile HTTP requests to the shop")
    parser.add_argument("--seed", type=int, default=0, help="seed of the outputs and requests")
    parser.add_argument("--envs", nargs="*", default=None, help="env ids (default: every registered agentenvs id)")
    parser.add_argument("--show", type=int, default=3, help="failures to print in full per env")
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to run (default: all of it)"
    )
    parser.add_argument(
        "--flood-sessions", type=int, default=2000, help="new sessions one address asks each server for"
    )
    parser.add_argument(
        "--flood-stalled", type=int, default=64, help="half-sent requests held open at the OpenEnv server"
    )
    parser.add_argument("--forgeries", type=int, default=2000, help="forged snapshots restored per env")
    args = parser.parse_args()
    failed = False
    if "envs" in args.parts:
        failed |= fuzz_envs(args)
    if "shop" in args.parts:
        failed |= fuzz_shop(args)
    if "floods" in args.parts:
        print()
        held = True
        for flood in (
            lambda: flood_shop(args.flood_sessions),
            lambda: flood_shop_server(args.flood_stalled),
            lambda: flood_openenv(args.flood_sessions, args.flood_stalled),
        ):
            lines, ok = flood()
            print("\n".join(lines), flush=True)
            held &= ok
        print(f"floods: {'every expectation held' if held else 'SOME EXPECTATION FAILED'}")
        failed |= not held
    if "snapshots" in args.parts:
        failed |= attack_envs(args)
    return 1 if failed else 0


def attack_envs(args: argparse.Namespace) -> bool:
    """The snapshots' part; whether anything failed."""
    failed = False
    print(f"\n{'env':<14}{'forgeries':>10}{'refused':>9}{'accepted':>9}{'broken':>8}{'seconds':>9}")
    for env_id in args.envs or agentenvs_ids():
        start = time.perf_counter()
        settings = {**QUIET.get(env_id, {}), **SMALL_WORLDS.get(env_id, {})}
        report = attack_snapshots(env_id, forgeries=args.forgeries, seed=args.seed, **settings)
        print(
            f"{env_id:<14}{report.forgeries:>10}{report.refused:>9}{report.accepted:>9}{len(report.errors):>8}"
            f"{time.perf_counter() - start:>9.1f}",
            flush=True,
        )
        for family, problem in report.errors[: args.show]:
            print(f"  {family}: " + problem.strip().replace("\n", "\n  "))
        failed |= bool(report.errors)
    return failed


def fuzz_envs(args: argparse.Namespace) -> bool:
    """The envs' part; whether anything failed."""
    failed = False
    print(
        f"{'env':<14}{'variants':>9}{'outputs':>9}{'episodes':>9}{'accepted':>9}{'exceptions':>11}"
        f"{'steps/s':>9}{'RSS MiB':>9}{'peak MiB':>9}"
    )
    for env_id in args.envs or agentenvs_ids():
        report, variants = fuzz_one_env(env_id, args.steps, args.seed)
        current, peak = rss_mib()
        rate = report.steps / report.seconds if report.seconds else float("nan")
        print(
            f"{env_id:<14}{variants:>9}{report.steps:>9}{report.episodes:>9}{report.valid_actions:>9}"
            f"{len(report.errors):>11}{rate:>9.0f}{current:>9.0f}{peak:>9.0f}",
            flush=True,
        )
        for raw, trace in report.errors[: args.show]:
            print(f"  output {raw}\n  " + trace.strip().replace("\n", "\n  "))
        failed |= bool(report.errors)
    return failed


def fuzz_shop(args: argparse.Namespace) -> bool:
    """The shop routes' part; whether anything failed."""
    logging.getLogger("agentenvs.webshop.app").setLevel(logging.CRITICAL)  # each 5xx is counted below instead
    app = create_app(WebShopEngine.generated(num_products=1000, cache_index=True))
    start = time.perf_counter()
    routes = fuzz_routes(app, requests=args.requests, seed=args.seed)
    seconds = time.perf_counter() - start
    statuses = ", ".join(f"{status}: {count}" for status, count in sorted(routes.statuses.items()))
    print(
        f"\nshop routes: {routes.requests} requests in {seconds:.1f} s ({routes.requests / seconds:.0f}/s), "
        f"5xx: {len(routes.server_errors)}\n  statuses: {statuses}"
    )
    for method, path, status, body in routes.server_errors[: args.show]:
        print(f"  {status} {method} {path}\n    {body}")
    return bool(routes.server_errors)


if __name__ == "__main__":
    sys.exit(main())
