"""Unit tests of pytest_agentctx._files: atomic writes, and no temporary file left behind by
a killed write once the folder is written again."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from pytest_agentctx._files import (
    STALE_AFTER_SECONDS,
    atomic_write_bytes,
    atomic_write_text,
    pid_running,
    remove_stale_temporaries,
    remove_stale_temporaries_under,
    unwritable_reason,
)


def _leftover(folder: Path, name: str, pid: int, *, age: float = 0.0) -> Path:
    """A temporary file as a write of ``name`` by process ``pid`` leaves it when killed."""
    path = folder / f".{name}.{pid}.0123abcd.tmp"
    path.write_text('{"half": ')
    if age:
        then = time.time() - age
        os.utime(path, (then, then))
    return path


def test_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    atomic_write_text(tmp_path / "c.json", "old")
    atomic_write_text(tmp_path / "c.json", "new")

    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("c.json", "new")]


def test_a_temporary_file_of_a_dead_process_goes_when_the_file_is_written(tmp_path, dead_pid):
    _leftover(tmp_path, "c.json", dead_pid)

    atomic_write_text(tmp_path / "c.json", "new")

    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_a_temporary_file_of_a_running_process_is_kept(tmp_path):
    mine = _leftover(tmp_path, "c.json", os.getpid())  # as a write in progress in this process

    atomic_write_text(tmp_path / "c.json", "new")

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c.json", mine.name])


def test_an_old_temporary_file_goes_whatever_its_process_id(tmp_path):
    _leftover(tmp_path, "c.json", os.getpid(), age=STALE_AFTER_SECONDS + 60)

    atomic_write_text(tmp_path / "c.json", "new")

    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_writing_a_file_leaves_the_temporary_files_of_other_files_alone(tmp_path, dead_pid):
    other = _leftover(tmp_path, "other.json", dead_pid)

    atomic_write_text(tmp_path / "c.json", "new")

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c.json", other.name])


def test_a_folder_sweep_removes_only_files_shaped_like_temporaries(tmp_path, dead_pid):
    stale = _leftover(tmp_path, "c.json", dead_pid)
    kept = ["c.json", ".c.json.swp", "notes.tmp", f".c.json.{dead_pid}.tmp", ".hidden"]
    for name in kept:
        (tmp_path / name).write_text("mine")

    removed = remove_stale_temporaries(tmp_path)

    assert removed == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept)


def test_a_sweep_with_a_prefix_removes_only_temporaries_with_that_prefix(tmp_path, dead_pid):
    plain = _leftover(tmp_path, "c.json", dead_pid)
    prefixed = tmp_path / f".agentctx-tmp-a.md.{dead_pid}.0123abcd.tmp"
    prefixed.write_text("half")

    atomic_write_bytes(tmp_path / "a.md", b"new", temp_prefix=".agentctx-tmp-")

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.md", plain.name])


def test_a_sweep_of_a_missing_folder_removes_nothing(tmp_path):
    assert remove_stale_temporaries(tmp_path / "absent") == []


def test_a_tree_sweep_clears_every_folder_but_hidden_ones(tmp_path, dead_pid):
    deep = tmp_path / "tests" / "test_tone"
    deep.mkdir(parents=True)
    hidden = tmp_path / ".git"
    hidden.mkdir()
    stale = [_leftover(tmp_path, "a.json", dead_pid), _leftover(deep, "b.json", dead_pid)]
    alive = _leftover(deep, "c.json", os.getpid())
    untouched = _leftover(hidden, "d.json", dead_pid)

    removed = remove_stale_temporaries_under(tmp_path)

    assert sorted(removed) == sorted(stale)
    assert (alive.exists(), untouched.exists()) == (True, True)


def test_a_tree_sweep_skips_the_folders_done_and_notes_those_it_sweeps(tmp_path, dead_pid):
    deep = tmp_path / "tests"
    deep.mkdir()
    kept = _leftover(tmp_path, "a.json", dead_pid)
    stale = _leftover(deep, "b.json", dead_pid)
    done = {tmp_path}

    removed = remove_stale_temporaries_under(tmp_path, done=done)

    assert (removed, kept.exists()) == ([stale], True)
    assert done == {tmp_path, deep}


def test_a_tree_sweep_of_a_missing_folder_removes_nothing(tmp_path):
    assert remove_stale_temporaries_under(tmp_path / "absent") == []


def test_this_process_runs_and_an_ended_one_does_not(dead_pid):
    assert (pid_running(os.getpid()), pid_running(dead_pid)) == (True, False)


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    atomic_write_text(tmp_path / "c.json", "old")

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(tmp_path / "c.json", "new")

    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("c.json", "old")]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_mode_gives_the_file_its_permissions_whatever_the_umask(tmp_path):
    old_umask = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "shared.txt", "text", mode=0o644)
        atomic_write_text(tmp_path / "private.txt", "text")
    finally:
        os.umask(old_umask)

    assert (tmp_path / "shared.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private.txt").stat().st_mode & 0o777 == 0o600


def test_text_is_written_as_utf8_with_its_line_ends_as_they_are(tmp_path):
    atomic_write_text(tmp_path / "c.txt", "a\nb\r\n°C\n")

    assert (tmp_path / "c.txt").read_bytes() == "a\nb\r\n°C\n".encode()


def test_a_file_already_at_the_temporary_name_is_never_written_nor_removed(tmp_path, monkeypatch):
    class _FixedUuid:
        hex = "0123abcd" + "0" * 24

    monkeypatch.setattr(uuid, "uuid4", _FixedUuid)  # the module _files calls
    planted = tmp_path / f".c.json.{os.getpid()}.0123abcd.tmp"
    planted.write_text("not mine")

    with pytest.raises(FileExistsError):
        atomic_write_text(tmp_path / "c.json", "new")

    assert sorted(p.name for p in tmp_path.iterdir()) == [planted.name]
    assert planted.read_text() == "not mine"


# -- unwritable_reason ---------------------------------------------------------------


def test_a_path_in_a_writable_folder_is_writable(tmp_path):
    assert unwritable_reason(tmp_path / "report.json") is None


def test_a_path_whose_folders_can_be_created_is_writable(tmp_path):
    assert unwritable_reason(tmp_path / "a" / "b" / "report.json") is None


def test_a_folder_is_not_a_file_to_write(tmp_path):
    assert unwritable_reason(tmp_path) == f"{tmp_path} is a folder; give the path of a file"


def test_a_file_where_a_folder_should_be_is_named(tmp_path):
    (tmp_path / "reports").write_text("not a folder")

    reason = unwritable_reason(tmp_path / "reports" / "2025" / "report.json")

    assert reason == (
        f"{tmp_path / 'reports'} is a file, not a folder, so "
        f"{tmp_path / 'reports' / '2025'} cannot be created"
    )


def test_a_folder_that_is_not_writable_is_named(tmp_path, monkeypatch):
    real = os.access
    # chmod does not stop root, who runs some CI containers: the check is what matters.
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != tmp_path and real(p, mode))

    assert unwritable_reason(tmp_path / "report.json") == f"the folder {tmp_path} is not writable"


@pytest.mark.parametrize(("durable", "flushes"), [(True, 1), (False, 0)])
def test_only_a_durable_write_is_flushed_to_disk(tmp_path, monkeypatch, durable, flushes):
    flushed: list[int] = []
    monkeypatch.setattr(os, "fsync", flushed.append)

    atomic_write_bytes(tmp_path / "entry.json", b"{}", durable=durable)

    assert (len(flushed), (tmp_path / "entry.json").read_bytes()) == (flushes, b"{}")
