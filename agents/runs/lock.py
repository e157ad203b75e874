"""One run per folder: ``output_dir/.lock`` names the process that writes there.

Two runs on one ``output_dir`` would delete each other's records and mix their
checkpoints. :class:`RunLock` creates the lock file with ``O_EXCL`` (only one creator
wins), holding ``{"pid", "host"}``; a second run fails at once with an error naming the
holder. A lock left by a process that died on this host (its pid is gone) is taken over
with a printed note; one from another host is never guessed stale. The lock is removed
by :meth:`RunLock.release` and, should the holder forget, at interpreter exit.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with RunLock(folder):
    ...     RunLock(folder).acquire()
    Traceback (most recent call last):
    ...
    agents.runs.lock.RunLockedError: ... is in use by another run: pid ... on host ... (this process); ...
"""

from __future__ import annotations

import atexit
import json
import os
import socket
from pathlib import Path
from types import TracebackType

LOCK_FILE = ".lock"


class RunLockedError(RuntimeError):
    """Another live run holds the folder's lock."""


def _alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class RunLock:
    """The lock of one run folder (see the module docstring).

    Args:
        folder: The run's ``output_dir`` (created if missing).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / LOCK_FILE
        self.held = False

    def acquire(self) -> RunLock:
        """Takes the lock (idempotent for its holder); returns ``self``.

        Raises:
            RunLockedError: naming the other process, when a live run holds it.
        """
        if self.held:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        for _ in range(3):  # a stale lock is removed, then created again (another run may win the race)
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._take_over_if_stale(me)
                continue
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(me) + "\n")
            self.held = True
            atexit.register(self.release)
            return self
        raise RunLockedError(f"{self.path.parent} is in use by another run (its lock {self.path} keeps coming back)")

    def _take_over_if_stale(self, me: dict[str, object]) -> None:
        """Removes the lock file if its holder died on this host; else raises naming the holder."""
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
            pid, host = int(holder["pid"]), str(holder["host"])
        except FileNotFoundError:
            return  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError):
            raise RunLockedError(
                f"{self.path.parent} is locked by {self.path}, which names no pid and host; "
                "remove it if no run uses this folder"
            ) from None
        if host == me["host"] and not _alive(pid):
            print(f"{self.path}: taking over the lock of pid {pid} on {host}, which is no longer running", flush=True)
            self.path.unlink(missing_ok=True)
            return
        this = " (this process)" if host == me["host"] and pid == me["pid"] else ""
        raise RunLockedError(
            f"{self.path.parent} is in use by another run: pid {pid} on host {host}{this}; "
            "wait for it to finish, stop it, or give this run another output_dir"
        )

    def release(self) -> None:
        """Removes the lock file if this lock holds it."""
        if not self.held:
            return
        self.held = False
        atexit.unregister(self.release)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()
