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
