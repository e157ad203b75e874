"""The plumbing of ALFWorld's helper processes: start a child, kill it, let it die with its parent.

The planner's verifier (:mod:`agentenvs.alfworld.verifier`) and the translation prefetch
(:mod:`agentenvs.alfworld.translator`) each run a plain ``python -m ...`` child that answers
requests on its stdin; both start, watch and stop it the same way. Neither child imports the
other's module through this one, so the engine (which prefetches) and the verifier (which
plays the engine) stay free of import cycles.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def start_child(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """Starts ``command`` with this process's pid appended, piped stdin/stdout, stderr dropped.

    The child imports this package even where it is not installed (a source tree), and
    inherits no other file descriptors, so it sees end of file once this process is gone.
    """
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [*command, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # TextWorld's warnings; errors come back in the answers
        env=env,
        close_fds=True,
    )


def kill_child(process: subprocess.Popen[bytes]) -> None:
    """Kills ``process`` (if still running), reaps it and closes its pipes.

    A request written just as the child died stays in stdin's buffer; closing flushes it
    into the dead pipe, which raises although the pipe is then closed. That is dropped: the
    request was never answered, and the caller (which may send it again) already knows.
    """
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(BrokenPipeError):
                pipe.close()


def exit_with_parent(parent: int) -> None:
    """A child's watcher thread: exits the child once ``parent`` is gone (it is then re-parented).

    ctypes releases the GIL during the planner's search, so this thread runs even then.
    """
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)
