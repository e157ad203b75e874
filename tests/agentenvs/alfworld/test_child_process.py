"""Killing a helper child: reaped, pipes closed, even with a request stuck in its stdin buffer."""

from __future__ import annotations

import sys

import pytest

from agentenvs.alfworld.child_process import kill_child, start_child


def test_kill_child_closes_the_pipes_of_a_running_child() -> None:
    process = start_child([sys.executable, "-c", "import sys; sys.stdin.read()"])
    kill_child(process)
    assert process.returncode is not None
    assert process.stdin is not None and process.stdin.closed
    assert process.stdout is not None and process.stdout.closed


def test_kill_child_after_a_write_into_a_dead_child() -> None:
    # The race CI met: the child died between the parent's liveness check and its write, so
    # the flush failed and the request stayed buffered; closing flushes again into the dead pipe.
    process = start_child([sys.executable, "-c", "pass"])
    process.wait()
    assert process.stdin is not None
    with pytest.raises(BrokenPipeError):
        process.stdin.write(b"request")
        process.stdin.flush()
    kill_child(process)  # must not raise
    assert process.stdin.closed
    assert process.stdout is not None and process.stdout.closed
