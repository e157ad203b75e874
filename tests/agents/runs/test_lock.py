"""The run-folder lock: one run per output_dir; a dead holder's lock is taken over."""

import json
import os
import socket
import subprocess
import sys

import pytest

from agents.runs.lock import LOCK_FILE, RunLock, RunLockedError


def test_a_second_lock_fails_naming_the_holder_and_release_frees_the_folder(tmp_path):
    first = RunLock(tmp_path).acquire()
    holder = json.loads((tmp_path / LOCK_FILE).read_text())
    assert holder == {"pid": os.getpid(), "host": socket.gethostname()}
    with pytest.raises(RunLockedError, match=rf"in use by another run: pid {os.getpid()} on host .*\(this process\)"):
        RunLock(tmp_path).acquire()
    assert first.acquire() is first  # the holder may ask again
    first.release()
    assert not (tmp_path / LOCK_FILE).exists()
    with RunLock(tmp_path):
        assert (tmp_path / LOCK_FILE).is_file()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_lock_held_by_another_live_process_is_not_taken(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": sleeper.pid, "host": socket.gethostname()}))
        with pytest.raises(RunLockedError, match=f"pid {sleeper.pid} on host"):
            RunLock(tmp_path).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_note(tmp_path, capsys):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(finished.stdout)
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead, "host": socket.gethostname()}))
    with RunLock(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert f"taking over the lock of pid {dead}" in capsys.readouterr().out


def test_a_lock_from_another_host_or_unreadable_is_never_guessed_stale(tmp_path):
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": "elsewhere.invalid"}))
    with pytest.raises(RunLockedError, match="pid 1 on host elsewhere.invalid"):
        RunLock(tmp_path).acquire()
    (tmp_path / LOCK_FILE).write_text("garbage")
    with pytest.raises(RunLockedError, match="names no pid and host"):
        RunLock(tmp_path).acquire()
