"""``python -m agentenvs.webshop serve`` starts the shop on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from agentenvs.webshop.__main__ import main


def test_help_and_unknown_command(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--help"])
    assert stop.value.code == 0 and "--num-products" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["dance"])
    assert stop.value.code == 2


def test_serve_answers_on_loopback():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "agentenvs.webshop", "serve", "--port", str(port), "--num-products", "100"]
        + ["--max-sessions", "4", "--session-idle", "5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/fixed_0", timeout=5) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        assert "Instruction:" in page and 'id="search_input"' in page
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--num-products", "999999999999"], "num_products must be an integer in [1, 1200000], got 999999999999"),
        (["--max-sessions", "0"], "max_sessions"),
    ],
)
def test_a_bad_argument_is_an_error_line_not_a_traceback(capsys, argv, says):
    assert main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m agentenvs.webshop serve: error: ") and says in err and "Traceback" not in err


def test_port_0_prints_the_port_it_got():
    server = subprocess.Popen(
        [sys.executable, "-m", "agentenvs.webshop", "serve", "--port", "0", "--num-products", "50"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline()  # the first line names the URL
        port = int(line.rsplit(":", 1)[1].strip(" /\n"))
        assert port > 0, line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/fixed_0", timeout=30) as reply:
            assert "Instruction:" in reply.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_shop_too_large_is_refused_naming_the_bound():
    import gymnasium as gym

    import agentenvs  # noqa: F401
    from agentenvs.webshop.engine import MAX_PRODUCTS, WebShopEngine

    with pytest.raises(ValueError, match=r"WebShopEnv\.num_products must be an integer in \[1, "):
        gym.make("WebShop-v0", num_products=10**20)
    with pytest.raises(ValueError, match="WebShopEngine.generated.num_products"):
        WebShopEngine.generated(MAX_PRODUCTS + 1)
