"""WebShop Flask shop: requests/s under a bounded concurrent load on loopback.

Starts ``python -m agentenvs.webshop serve`` (1k products) in a subprocess, then drives it
from this process with 1 and with ``--concurrency`` client threads, each its own session
walking search page -> results -> item page -> option -> sub-page. Prints requests/s and
the ratio to an in-process baseline measured here: the same walk through Flask's test
client (no sockets, no HTTP parsing), and the error count (must be 0).

Run: ``python benchmarks/webshop_server.py [--concurrency 8] [--seconds 5]``
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from agentenvs.webshop.app import create_app
from agentenvs.webshop.data import shuffle_goals
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.pages import item_url, results_url, sub_page_url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def walk(engine: WebShopEngine, goals, index: int) -> list[str]:
    """The URLs one shopper visits for goal ``index``."""
    goal = goals[index % len(goals)]
    sid = f"fixed_{index % len(goals)}-{index}"  # a session of its own on that goal
    keywords = " ".join(goal.instruction_text.lower().split())
    options = dict(list(goal.goal_options.items())[:1]) if isinstance(goal.goal_options, dict) else {}
    return [
        f"/{sid}",
        results_url(sid, keywords, 1),
        results_url(sid, keywords, 2),
        item_url(sid, goal.asin, keywords, 1, {}),
        item_url(sid, goal.asin, keywords, 1, options),
        sub_page_url(sid, goal.asin, keywords, 1, "Features", options),
    ]


def load(base: str, walks: list[list[str]], clients: int, seconds: float) -> tuple[float, int]:
    done = errors = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(number: int) -> None:
        nonlocal done, errors
        i = number
        while time.perf_counter() < deadline:
            for path in walks[i % len(walks)]:
                try:
                    with urllib.request.urlopen(base + quote(path, safe="/%:")) as reply:
                        reply.read()
                        ok = reply.status == 200
                except (urllib.error.URLError, OSError):
                    ok = False
                with lock:
                    done += 1
                    errors += not ok
            i += clients

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done / (time.perf_counter() - start), errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    engine = WebShopEngine.generated(1000, seed=0, cache_index=False)
    goals = shuffle_goals(engine.goals)
    walks = [walk(engine, goals, i) for i in range(200)]

    client = create_app(engine).test_client()
    for path in walks[0][:1]:
        client.get(path)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        for path in walks[count % len(walks)]:
            client.get(path)
        count += 1
    baseline = count * len(walks[0]) / (time.perf_counter() - start)
    print(f"[baseline] Flask test client, in-process: {baseline:.0f} requests/s")

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentenvs.webshop", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/fixed_0").read()
                break
            except OSError:
                time.sleep(0.1)
        for path in {w[0] for w in walks}:  # open every session first
            urllib.request.urlopen(base + path).read()
        for clients in (1, args.concurrency):
            rate, errors = load(base, walks, clients, args.seconds)
            print(
                f"[server] {clients:>2} concurrent client(s) on loopback: {rate:6.0f} requests/s "
                f"({rate / baseline:.2f}x the in-process baseline), {errors} errors"
            )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
