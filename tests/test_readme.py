"""Every ``python`` and ``bash`` block of README.md and docs/*.md runs as written (or as its marker says).

Each block is one test (``README.md::<heading>-<n>``), run in a fresh subprocess in a temporary
folder, offline, with this checkout's packages first on the path: python blocks with this
interpreter, bash blocks with ``bash -euo pipefail`` (``.venv/bin/python`` and ``python`` are this
interpreter). The markers a block may carry (``skip`` with a reason, ``replace`` to run a training
block at a tiny size, ``server`` for a block that talks to a served env) are described in
:mod:`tests.support.readme_blocks`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.readme_blocks import NOT_CODE, RUNNABLE, Block, page_blocks, parse_blocks

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
BLOCKS = [block for page in PAGES for block in page_blocks(page, REPO_ROOT)]
HANG_GUARD_S = 900
"""A block that runs longer is stuck (no verdict depends on time: the slowest block takes ~1 min)."""
SERVER_START_S = 120


def test_every_fence_says_whether_it_is_code():
    unnamed = [f"{block.page}:{block.line}" for block in BLOCKS if block.language not in {*RUNNABLE, *NOT_CODE}]
    assert not unnamed, f"fences without a runnable language ({sorted(RUNNABLE)}) or 'text': {unnamed}"
    assert any(block.page == "README.md" and block.runnable for block in BLOCKS)


def test_markers_are_read_and_a_stale_or_misplaced_one_fails():
    page = (
        "## A\n<!-- readme-test: skip needs a GPU -->\n```bash\nvllm serve\n```\n"
        '## B\n<!-- readme-test: server serve --port {port} -->\n<!-- readme-test: replace {"8000": "{port}"} -->\n'
        "```python\nconnect(8000)\n```\n"
    )
    skipped, served = parse_blocks(page, "P.md")
    assert skipped.skip == "needs a GPU" and skipped.test_id == "P.md::a-1"
    assert served.server_command(5) == "serve --port 5" and served.runnable_code(5) == "connect(5)\n"
    stale = parse_blocks('<!-- readme-test: replace {"9000": "1"} -->\n```python\nconnect(8000)\n```\n', "P.md")[0]
    with pytest.raises(ValueError, match="'9000' is not in the block"):
        stale.runnable_code(0)
    with pytest.raises(ValueError, match="must come right before a fence"):
        parse_blocks("<!-- readme-test: skip x -->\ntext\n```bash\nls\n```\n", "P.md")
    with pytest.raises(ValueError, match="malformed readme-test marker"):
        parse_blocks("<!-- readme-test: skp x -->\n```bash\nls\n```\n", "P.md")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + path if path else "")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", MPLBACKEND="Agg")
    env.update(TOKENIZERS_PARALLELISM="false", TRL_EXPERIMENTAL_SILENCE="1")
    return env


def _shell(code: str) -> str:
    return code.replace(".venv/bin/python", sys.executable)


@contextmanager
def _served(command: str | None, port: int, cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """Runs ``command`` in the background until the body is done, once ``port`` takes connections."""
    if command is None:
        yield
        return
    log = cwd / "server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {_shell(command)}"], cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + SERVER_START_S  # a guard against a server that never starts, not a verdict
        while True:
            if server.poll() is not None:
                pytest.fail(f"the server {command!r} exited with {server.returncode}:\n{log.read_text()[-4000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the server {command!r} did not open port {port}:\n{log.read_text()[-4000:]}")
                time.sleep(0.5)
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.parametrize("block", [block for block in BLOCKS if block.runnable], ids=lambda block: block.test_id)
def test_block_runs(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.page}:{block.line}: {block.skip}")
    port = _free_port()
    code = block.runnable_code(port)
    env = _environment()
    if RUNNABLE[block.language] == "python":
        script = tmp_path / "block.py"
        script.write_text(code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", _shell(code)]
    with _served(block.server_command(port), port, tmp_path, env):
        result = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False
        )
    output = (result.stdout + result.stderr)[-6000:]
    assert result.returncode == 0, f"{block.page}:{block.line} exited with {result.returncode}:\n{output}"
