"""The planner's verification of a generated game, run in a child process with limits.

TextWorld's planner (Fast Downward's lazy search with a ``g`` evaluator: a blind,
uniform-cost search) has no time or memory bound; on a large problem it searches for
minutes while its memory grows by gigabytes, and TextWorld's own env hangs on the same
problem. :class:`PlannerProcess` runs the whole verification of a game — plan, then
replay the plan through the real engine — in a child process and kills it when it
exceeds a time limit, or lets it fail when it exceeds a memory limit (an address space
limit set in the child, above what the child already uses).

**The time limit counts the child's CPU time**, not the wall clock: a machine loaded
by other work gives the child fewer seconds of CPU per second, and a wall-clock limit
would then reject a game an idle machine keeps. CPU seconds are the planner's own work,
so the verdict does not depend on the load. The wall clock stays only as a safety net
(``wall_time_limit_s``, 30 times the CPU limit by default) for a child that makes no
progress at all; a verdict it gives says so (:attr:`Verdict.wall_clock`), and the
generator verifies that draw again before it rejects it.

The child is ``python -m agentenvs.alfworld.verifier``, a plain subprocess rather than a
``multiprocessing`` one: daemonic processes (gymnasium's ``AsyncVectorEnv`` workers)
may start subprocesses but not ``multiprocessing`` children, and a subprocess never
re-imports the user's ``__main__``. It answers one JSON line per request and stays alive
between games (importing TextWorld takes about a second); one that exceeded a limit is
killed and the next request starts a fresh one. It exits when its parent does.

Example:
    >>> limits = PlannerLimits(time_limit_s=20.0, memory_limit_mb=1024)
    >>> limits.wall_deadline_s
    600.0
    >>> with PlannerProcess(limits) as planner:  # doctest: +SKIP
    ...     verdict = planner.verify("game.tw-pddl", "planning.tw-pddl")
    >>> verdict.walkthrough  # doctest: +SKIP
    ['go to countertop 1', 'take mug 1 from countertop 1', ...]
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from agentenvs.alfworld.child_process import exit_with_parent, kill_child, start_child
from agentenvs.core.checks import check_float, check_int

STARTUP_TIMEOUT_S = 180.0
"""How long a fresh child may take to import TextWorld (not counted in the time limit)."""


@dataclass(frozen=True)
class PlannerLimits:
    """Limits of one verification in the child process.

    Attributes:
        time_limit_s: CPU seconds the child may spend on one game's verification (the
            wall clock where the platform does not tell a process's CPU time).
        memory_limit_mb: Address space (MiB) one verification may add to the child.
        wall_time_limit_s: The safety net: wall-clock seconds after which the child is
            stopped however little CPU it was given (default
            ``WALL_LIMIT_FACTOR * time_limit_s``); at least ``time_limit_s``.
    """

    time_limit_s: float = 20.0
    memory_limit_mb: int = 1024
    wall_time_limit_s: float | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        time_limit = check_float(owner, "time_limit_s", self.time_limit_s, minimum=0.0, min_inclusive=False)
        object.__setattr__(self, "time_limit_s", time_limit)
        object.__setattr__(
            self, "memory_limit_mb", check_int(owner, "memory_limit_mb", self.memory_limit_mb, minimum=64)
        )
        if self.wall_time_limit_s is not None:
            object.__setattr__(
                self,
                "wall_time_limit_s",
                check_float(owner, "wall_time_limit_s", self.wall_time_limit_s, minimum=time_limit),
            )

    @property
    def wall_deadline_s(self) -> float:
        """The wall-clock safety net in seconds (``wall_time_limit_s`` or its default)."""
        return self.wall_time_limit_s if self.wall_time_limit_s is not None else WALL_LIMIT_FACTOR * self.time_limit_s


WALL_LIMIT_FACTOR: Final = 30.0
"""The default wall-clock safety net, in multiples of the CPU time limit."""


@dataclass(frozen=True)
class Verdict:
    """What verifying one game found.

    Attributes:
        walkthrough: The winning commands, or None when the game is rejected.
        reason: Why the game was rejected ("" when accepted).
        exceeded_limit: Whether a limit (time, memory) or a crash rejected it, rather
            than the game itself (no plan, or a plan that does not win).
        seconds: Wall-clock time of the verification.
        peak_rss_mb: The child's peak resident memory during it, when known.
        wall_clock: Whether the wall-clock safety net rejected it (the child got less
            than its CPU time limit before the net fired: the verdict may depend on the
            machine's load, so it is worth verifying again).
    """

    walkthrough: list[str] | None
    reason: str
    exceeded_limit: bool
    seconds: float
    peak_rss_mb: float | None
    wall_clock: bool = False


class PlannerProcess:
    """A child process that verifies games under :class:`PlannerLimits`.

    Not thread-safe: give each thread its own.

    Args:
        limits: The time and memory limits of one verification.
        command: The child's command line (default: this module under this Python);
            the parent's pid is appended.
    """

    def __init__(self, limits: PlannerLimits | None = None, command: Sequence[str] | None = None) -> None:
        self.limits = limits or PlannerLimits()
        self._command = list(command) if command is not None else [sys.executable, "-m", __name__]
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> PlannerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def verify(self, game_file: str | os.PathLike[str], planning_file: str | os.PathLike[str]) -> Verdict:
        """Plans on ``planning_file``, names the plan with ``game_file``'s objects, replays it there.

        ``planning_file`` is a game over a subset of ``game_file``'s objects (or the
        game itself); the plan is kept only if it wins ``game_file``.
        """
        request = {
            "game": os.fspath(game_file),
            "planning_game": os.fspath(planning_file),
            "memory_limit_mb": self.limits.memory_limit_mb,
        }
        process = self._ensure_started()
        start, cpu_start = time.monotonic(), _cpu_seconds(process.pid)
        try:
            assert process.stdin is not None
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        except OSError:  # the child died between requests (a kill from outside): one fresh try
            self.close()
            process = self._ensure_started()
            start, cpu_start = time.monotonic(), _cpu_seconds(process.pid)
            assert process.stdin is not None
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        line = self._await_answer(start, cpu_start)
        seconds = time.monotonic() - start
        if line is _TIMEOUT or line is _WALL_TIMEOUT:
            peak = _peak_rss_mb(process.pid)
            self.close()
            if line is _WALL_TIMEOUT:
                reason = f"exceeded the wall-clock safety net ({self.limits.wall_deadline_s:g} s)"
                return Verdict(None, reason, True, seconds, peak, wall_clock=True)
            reason = f"exceeded the time limit ({self.limits.time_limit_s:g} s{_CPU_WORDS})"
            return Verdict(None, reason, True, seconds, peak)
        if line is None:  # the child died: out of memory in the planner (C++ aborts) or a crash
            code = process.wait()
            self.close()
            return Verdict(None, _death_reason(code, self.limits), True, seconds, None)
        answer = json.loads(str(line))
        if answer.get("out_of_memory"):
            self.close()  # a MemoryError may have left the child's state half-built
            return Verdict(
                None,
                f"exceeded the memory limit ({self.limits.memory_limit_mb} MiB)",
                True,
                seconds,
                answer["peak_rss_mb"],
            )
        walkthrough = answer["walkthrough"]
        return Verdict(walkthrough, answer["reason"], False, seconds, answer["peak_rss_mb"])

    def start(self) -> None:
        """Starts the child now, if it is not running (:meth:`verify` does it otherwise).

        Raises:
            RuntimeError: if the child does not start.
        """
        self._ensure_started()

    def close(self) -> None:
        """Stops the child (it is started again by the next :meth:`verify`)."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self._process = None
        self._buffer = b""

    # -- helpers ----------------------------------------------------------------------
    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        process = start_child(self._command)
        self._process = process
        self._finalizer = weakref.finalize(self, kill_child, process)
        ready = self._read_line(time.monotonic() + STARTUP_TIMEOUT_S)
        if not isinstance(ready, str) or not json.loads(ready).get("ready"):
            self.close()
            raise RuntimeError(f"the planner process ({' '.join(self._command)}) did not start")
        return process

    def _await_answer(self, start: float, cpu_start: float | None) -> str | None | object:
        """The child's answer; ``_TIMEOUT`` once it spent its CPU time limit, ``_WALL_TIMEOUT``
        at the wall-clock safety net (None at end of file).

        CPU time cannot grow faster than the wall clock (the planner runs on one thread), so
        after waiting ``limit - used`` more seconds the CPU time is read again; on an idle
        machine that is a single wait of ``time_limit_s``.
        """
        wall_deadline = start + self.limits.wall_deadline_s
        check_at = start + self.limits.time_limit_s
        assert self._process is not None
        while True:
            line = self._read_line(min(check_at, wall_deadline))
            if line is not _TIMEOUT:
                return line
            now = time.monotonic()
            if now >= wall_deadline:
                return _WALL_TIMEOUT
            cpu_now = _cpu_seconds(self._process.pid)
            if cpu_start is None or cpu_now is None:  # no CPU clock here: the wall clock decides
                return _TIMEOUT
            left = self.limits.time_limit_s - (cpu_now - cpu_start)
            if left <= 0:
                return _TIMEOUT
            check_at = now + max(left, _MIN_CPU_CHECK_S)

    def _read_line(self, deadline: float) -> str | None | object:
        """The child's next line; None at end of file; ``_TIMEOUT`` past ``deadline``."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _TIMEOUT
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                return _TIMEOUT
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()


_TIMEOUT = object()
_WALL_TIMEOUT = object()
_CPU_WORDS: Final = " of CPU" if os.path.exists("/proc/self/stat") else ""
_MIN_CPU_CHECK_S = 0.05
"""The shortest wait between two readings of the child's CPU time."""


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user and system) process ``pid`` has used, where Linux's /proc tells it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 0
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _death_reason(code: int, limits: PlannerLimits) -> str:
    # The planner's C++ code aborts (SIGABRT, std::bad_alloc) when the address space
    # limit refuses it memory; other deaths are crashes.
    if code == -signal.SIGABRT:
        return f"exceeded the memory limit ({limits.memory_limit_mb} MiB)"
    return f"the planner process died (exit code {code})"


def _peak_rss_mb(pid: int | str = "self") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    if pid == "self":  # not Linux: the lifetime peak (ru_maxrss is KiB on Linux, bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 1024)
    return None


# -- the child ------------------------------------------------------------------------
def plan_and_replay(engine: Any, game_file: str, planning_file: str) -> tuple[list[str] | None, str]:
    """The plan found on ``planning_file``, in ``game_file``'s words, if replaying it there wins.

    Returns:
        (walkthrough, "") when the plan wins, else (None, why not).
    """
    engine.start(planning_file)
    operators = engine.plan_operators()
    if not operators:
        return None, "the planner found no plan"
    engine.start(game_file)  # a fresh load and reset: the initial state of the game itself
    walkthrough = engine.commands(operators)
    won = False
    for command in walkthrough:
        _, _, done, infos = engine.step(command)
        won = bool(infos["won"])
        if done:
            break
    return (walkthrough, "") if won else (None, "the plan does not win the game")


def _address_space_mb() -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _limit_memory(limit_mb: int) -> None:
    """Lets the address space grow by ``limit_mb`` from here (soft limit; raisable again)."""
    used = _address_space_mb()
    if used is None:
        return
    soft = int((used + limit_mb) * 2**20)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _reset_peak_rss() -> None:
    try:  # Linux: "5" resets VmHWM, so each answer reports its own game's peak
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve(parent: int) -> None:
    """The child's loop: one verification per request line on stdin, one answer line back."""
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True).start()
    # Answers go to a private copy of stdout; what the translator or TextWorld print goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from agentenvs.alfworld.engine import AlfredEngine

    engine = AlfredEngine(translation_cache_size=0)
    _send(out, {"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        _reset_peak_rss()
        try:
            _limit_memory(int(request["memory_limit_mb"]))
            engine.game_file = None  # a failed earlier request may have left a half-loaded game
            walkthrough, reason = plan_and_replay(engine, request["game"], request["planning_game"])
            answer: dict[str, Any] = {"walkthrough": walkthrough, "reason": reason}
        except MemoryError:
            _send(out, {"out_of_memory": True, "peak_rss_mb": _peak_rss_mb()})
            return
        except Exception as error:  # a broken game is rejected like an unsolvable one
            where = traceback.extract_tb(error.__traceback__)[-1]
            answer = {"walkthrough": None, "reason": f"{type(error).__name__}: {error} ({where.name})"}
        answer["peak_rss_mb"] = _peak_rss_mb()
        _send(out, answer)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
