"""The prefetch of ALFWorld's PDDL → SAS translations, in one small helper process per process.

Loading a game spends most of its time in Fast Downward's translator, which holds the GIL
and swaps ``sys.stdout`` / ``sys.argv`` while it runs, so it cannot overlap play in a thread.
:func:`shared_translator` gives every :class:`~agentenvs.alfworld.engine.AlfredEngine` in a
process one helper: a thread that hands game files, one at a time, to a child process
(``python -m agentenvs.alfworld.translator``) and returns the translations as futures.

The child is a fresh interpreter (``subprocess``), not a ``fork``: a fork of a trainer's
process keeps a copy-on-write image of everything the trainer holds (a model, its optimizer,
KV caches), and each page the trainer later rewrites stays behind in the child. One forked
helper per engine, 48 engines in a training run with evaluation, filled 24 GiB and had runs
killed for memory; the fresh child holds TextWorld and the translator only. It exits when
its parent does (a watcher thread), so a killed trainer leaves nothing behind.

Example:
    >>> future = shared_translator().submit("game.tw-pddl")  # doctest: +SKIP
    >>> key, translation = future.result()  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from agentenvs.alfworld.child_process import exit_with_parent, kill_child, start_child
from agentenvs.alfworld.translation import translate_game_file

_HEADER = struct.Struct("!Q")  # each message: its pickle's length, then the pickle


def _write(stream: IO[bytes], message: object) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    """The next message, or raises EOFError when the other side has gone."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other process closed the pipe")
    size = _HEADER.unpack(header)[0]
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the other process closed the pipe mid-message")
    return pickle.loads(payload)  # noqa: S301  (our own child's answers)


class TranslatorProcess:
    """A child process that translates game files, one request at a time.

    Not thread-safe: :func:`shared_translator` calls it from its one thread. A child that
    died (killed from outside) is started again by the next request.

    Args:
        command: The child's command line (default: this module under this Python);
            the parent's pid is appended.
    """

    def __init__(self, command: list[str] | None = None) -> None:
        self._command = command if command is not None else [sys.executable, "-m", __name__]
        self._process: subprocess.Popen[bytes] | None = None

    def translate(self, game_file: str) -> Any:
        """The translator's ``(cache key, Translation)`` of ``game_file``.

        A child found dead (killed from outside) gets one fresh replacement and the request
        is sent again: a translation has no side effects.

        Raises:
            RuntimeError: if the fresh child died too, or the translation failed there.
        """
        for attempt in range(2):
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            try:
                _write(process.stdin, game_file)
                ok, answer = _read(process.stdout)
                break
            except (OSError, EOFError) as error:
                self.close()
                if attempt:
                    raise RuntimeError(f"the translator process died: {error}") from error
        if not ok:
            raise RuntimeError(f"translating {game_file} failed: {answer}")
        return answer

    def close(self) -> None:
        """Stops the child."""
        if self._process is not None:
            kill_child(self._process)
        self._process = None

    @property
    def pid(self) -> int | None:
        """The running child's pid (None before the first request)."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self.close()
            process = start_child(self._command)
            self._process = process
            try:  # importing TextWorld takes about a second; a child that cannot import dies
                assert process.stdout is not None
                ready = _read(process.stdout)
            except EOFError as error:
                self.close()
                raise RuntimeError(f"the translator process ({' '.join(self._command)}) did not start") from error
            if ready != (True, "ready"):
                self.close()
                raise RuntimeError(f"the translator process answered {ready!r} instead of starting")
        return self._process


class SharedTranslator:
    """One thread and one :class:`TranslatorProcess`, shared by a process's engines."""

    def __init__(self) -> None:
        self.process = TranslatorProcess()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="alfworld-prefetch")

    def submit(self, game_file: str) -> Future[Any]:
        """Queues ``game_file``; the future holds its ``(cache key, Translation)``."""
        return self._thread.submit(self.process.translate, game_file)

    def close(self) -> None:
        """Drops queued requests and stops the child."""
        self._thread.shutdown(wait=True, cancel_futures=True)
        self.process.close()


_SHARED: SharedTranslator | None = None
_SHARED_LOCK = threading.Lock()


def shared_translator() -> SharedTranslator:
    """This process's translator, started on first use and stopped at exit."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = SharedTranslator()
            atexit.register(_SHARED.close)
        return _SHARED


def _forget_in_child() -> None:
    # A forked process (a vector-env worker) has no copy of the thread; it starts its own if needed.
    global _SHARED, _SHARED_LOCK
    _SHARED, _SHARED_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


# -- the child ------------------------------------------------------------------------
def serve(parent: int) -> None:
    """The child's loop: one translation per request on stdin, one answer back."""
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True).start()
    # Answers go to a private copy of stdout; what the translator prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _write(out, (True, "ready"))
    requests = sys.stdin.buffer
    while True:
        try:
            game_file = _read(requests)
        except EOFError:
            return
        try:
            answer: tuple[bool, Any] = (True, translate_game_file(game_file))
        except Exception as error:  # reported to the parent, which translates in-process instead
            answer = (False, f"{type(error).__name__}: {error}")
        _write(out, answer)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
