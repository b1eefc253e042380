"""Unit tests of pytest_agentctx.traffic.cassettes.runs: cassette locks across processes,
run markers, and what a killed run leaves behind."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentctx import _locks
from pytest_agentctx.traffic.cassettes import runs
from pytest_agentctx.traffic.cassettes.runs import locked

try:
    import fcntl
except ModuleNotFoundError:  # Windows, where the locks are filelock's
    fcntl = None  # type: ignore[assignment]

#: The tests of the ``flock`` locks, which exist where ``fcntl`` does.
with_flock = pytest.mark.skipif(fcntl is None, reason="no fcntl on this system")


def test_lock_lives_outside_the_cassette_folder(tmp_path):
    with locked(tmp_path / "c.json") as lock_file:
        assert tmp_path not in lock_file.parents

    assert list(tmp_path.iterdir()) == []


# -- no debris: locks, run markers ----------------------------------


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temp dir of the test's own, where the locks and run markers go."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(runs, "_swept_runs", False)
    return folder


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_lock_file_is_removed_when_the_lock_is_released(tmp_path, temp_dir):
    with locked(tmp_path / "c.json") as lock_file:
        held = lock_file.exists()

    assert (held, _files_under(temp_dir)) == (True, [])


@with_flock
def test_a_held_lock_excludes_every_other_opener(tmp_path, temp_dir):
    with locked(tmp_path / "c.json") as lock_file:
        other = os.open(lock_file, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)


@with_flock
def test_a_process_that_waited_on_a_removed_lock_file_locks_the_new_one(
    tmp_path, temp_dir, monkeypatch
):
    """The race of removing lock files: a waiter that gets the lock of a file the holder
    removed must not go on, while another process holds the file now at the path."""
    lock_file = runs._lock_path(tmp_path / "c.json")
    old_holder = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    fcntl.flock(old_holder, fcntl.LOCK_EX)
    waiting = [threading.Event(), threading.Event()]  # the waiter's 1st and 2nd flock calls

    def flock(descriptor: int, operation: int) -> None:
        next(event for event in waiting if not event.is_set()).set()
        fcntl.flock(descriptor, operation)

    monkeypatch.setattr(_locks, "fcntl", SimpleNamespace(flock=flock, LOCK_EX=fcntl.LOCK_EX))
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(_locks.hold(lock_file)))  # type: ignore[arg-type]
    waiter.start()
    assert waiting[0].wait(10)  # the waiter opened the old file and waits for its lock
    os.unlink(lock_file)  # what a holder does when it releases: remove, then unlock
    new_holder = os.open(lock_file, os.O_RDWR | os.O_CREAT)  # another process comes first
    fcntl.flock(new_holder, fcntl.LOCK_EX)
    os.close(old_holder)
    assert waiting[1].wait(10)  # the waiter saw it locked a removed file, and tries again
    still_waiting = waiter.is_alive()
    new_file = os.fstat(new_holder).st_ino
    os.close(new_holder)
    waiter.join(10)
    try:
        assert still_waiting
        assert [os.fstat(d).st_ino for d in got] == [new_file]
    finally:
        for descriptor in got:
            os.close(descriptor)


def test_without_fcntl_a_held_lock_fails_another_attempt_at_once(tmp_path, temp_dir, monkeypatch):
    """Where there is no fcntl (Windows), the locks are filelock's."""
    monkeypatch.setattr(_locks, "fcntl", None)

    with locked(tmp_path / "c.json") as lock_file:
        other = _locks.try_hold(lock_file)
        runs.end_runs("run-1")  # leaves a held lock file
        still_there = lock_file.exists()
    again = _locks.try_hold(lock_file)
    assert again is not None
    _locks.let_go(lock_file, again)

    assert (other, still_there) == (None, True)


def test_the_run_bookkeeping_imports_and_locks_without_fcntl(tmp_path):
    script = f"""
import sys, warnings
from pathlib import Path
sys.modules["fcntl"] = None  # as on Windows
# Off Windows, filelock without fcntl says it falls back to its soft lock.
warnings.filterwarnings("ignore", "only soft file lock is available", UserWarning)
from pytest_agentctx.traffic.cassettes import runs
with runs.locked(Path({str(tmp_path / "c.json")!r})):
    print("locked")
"""
    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )

    assert (child.returncode, child.stdout, child.stderr) == (0, "locked\n", "")


def test_a_run_marker_says_which_run_wrote_a_cassette(tmp_path, temp_dir):
    runs.mark_written(tmp_path / "c.json", "run-1")

    assert runs.written_in_run(tmp_path / "c.json", "run-1")
    assert not runs.written_in_run(tmp_path / "c.json", "run-2")
    assert not runs.written_in_run(tmp_path / "other.json", "run-1")


def test_the_end_of_a_run_removes_its_markers(tmp_path, temp_dir):
    runs.mark_written(tmp_path / "c.json", "run-1")

    runs.end_runs("run-1")

    assert not runs.written_in_run(tmp_path / "c.json", "run-1")
    assert _files_under(temp_dir) == []


def _killed_run(temp_dir: Path, run_id: str, pid: int, cassette: Path) -> Path:
    """The markers a run of process ``pid`` left when it was killed."""
    folder = temp_dir / "pytest-agentctx-locks" / "runs" / runs._digest(run_id)
    folder.mkdir(parents=True)
    (folder / f"pid-{pid}").touch()
    runs.run_marker(cassette, run_id).touch()
    return folder


def test_the_next_run_removes_the_markers_of_a_killed_run(tmp_path, temp_dir, dead_pid):
    killed = _killed_run(temp_dir, "killed", dead_pid, tmp_path / "c.json")

    runs.mark_written(tmp_path / "c.json", "next")

    assert not killed.exists()
    assert runs.written_in_run(tmp_path / "c.json", "next")


def test_the_markers_of_a_run_still_running_are_kept(tmp_path, temp_dir):
    running = _killed_run(temp_dir, "running", os.getpid(), tmp_path / "c.json")

    runs.end_runs("another")

    assert runs.written_in_run(tmp_path / "c.json", "running")
    assert running.exists()


def test_the_markers_of_a_day_old_run_go_whatever_its_process_ids(tmp_path, temp_dir):
    old = _killed_run(temp_dir, "old", os.getpid(), tmp_path / "c.json")
    then = time.time() - runs.RUN_MARKERS_KEPT_SECONDS - 60
    os.utime(old, (then, then))

    runs.end_runs("another")

    assert not old.exists()


def test_a_lock_file_a_killed_holder_left_is_removed_when_a_run_ends(tmp_path, temp_dir):
    runs._lock_path(tmp_path / "c.json").touch()

    runs.end_runs("run-1")

    assert _files_under(temp_dir) == []


def test_a_lock_file_someone_holds_is_kept_when_a_run_ends(tmp_path, temp_dir):
    with locked(tmp_path / "c.json") as lock_file:
        runs.end_runs("run-1")

        assert lock_file.exists()
