"""What a test run keeps across its processes: cassette locks, run markers, run files.

* :func:`locked`: an exclusive lock per cassette across processes, so that ``pytest -n``
  workers recording into one shared cassette keep every interaction.
* :func:`mark_written` / :func:`written_in_run`: run markers, which say that a test run
  wrote a cassette (two tests whose cassettes have one path keep both tests'
  interactions); :func:`run_file`: another file of the run beside them (the xdist
  workers' lists of integration tests); :func:`end_runs` removes them when the run ends.
* :func:`sweep_folder` / :func:`sweep_tree`: once per session, the temporary files that
  killed writes left beside cassettes are removed.

Locks and markers live in one folder under the system temp dir, so cassette folders never
get lock files, and neither piles up there:

* A lock file exists only while a process holds or waits for it (:func:`locked`); one
  that a killed holder left is removed by the next process that locks it, or by
  :func:`end_runs`.
* A run marker (``runs/<run>/<cassette>``, an empty file) says that the test run
  ``<run>`` wrote the cassette. Beside the markers, ``pid-<pid>`` names each process of
  the run that wrote one (or another file of the run, :func:`run_file`: the xdist
  workers' lists of integration tests). A run's folder is removed once no process of it
  runs any more (:func:`end_runs`, when a session ends, and when a process first marks a
  cassette), or once it is :data:`RUN_MARKERS_KEPT_SECONDS` old (process ids get reused).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_agentctx._files import (
    pid_running,
    remove_stale_temporaries,
    remove_stale_temporaries_under,
)
from pytest_agentctx._locks import hold, let_go, try_hold

#: How long the markers of a run are kept at most, whatever its process ids say.
RUN_MARKERS_KEPT_SECONDS = 24 * 3600.0
#: Whether this process already swept the markers of ended runs.
_swept_runs = False


def _locks_folder(create: bool = True) -> Path:
    folder = Path(tempfile.gettempdir()) / "pytest-agentctx-locks"
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _lock_path(path: Path) -> Path:
    return _locks_folder() / f"{_digest(str(path.resolve()))}.lock"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[Path]:
    """Hold an exclusive lock for ``path`` across processes (the lock lives in the temp dir,
    so cassette folders get no lock files). Yields the lock file's path.

    The lock file is removed when the lock is released, so the temp dir does not keep one
    per cassette ever written; :mod:`pytest_agentctx._locks` says how that stays safe for
    the processes that wait on it.
    """
    lock_file = _lock_path(path)
    held = hold(lock_file)
    try:
        yield lock_file
    finally:
        let_go(lock_file, held)


def _runs_folder() -> Path:
    return _locks_folder(create=False) / "runs"


def run_marker(path: Path, run_id: str) -> Path:
    """The marker saying that the test run ``run_id`` wrote the cassette ``path``."""
    return _runs_folder() / _digest(run_id) / _digest(str(path.resolve()))


def mark_written(path: Path, run_id: str) -> None:
    """Note that the test run ``run_id`` wrote ``path`` (see :func:`written_in_run`)."""
    if not _swept_runs:
        _sweep(keep=_digest(run_id))
    marker = run_marker(path, run_id)
    for attempt in range(3):
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            (marker.parent / f"pid-{os.getpid()}").touch()
            marker.touch()
            return
        except FileNotFoundError:  # another process removed the folder meanwhile
            if attempt == 2:
                raise


def run_file(run_id: str, name: str, *, writer: bool = True) -> Path:
    """The path of the file ``name`` in the folder of the test run ``run_id``, beside its
    run markers and removed with them. For a ``writer``, the folder is made, with this
    process's ``pid-<pid>`` (the folder is kept while one of its processes runs)."""
    folder = _runs_folder() / _digest(run_id)
    if writer:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"pid-{os.getpid()}").touch()
    return folder / name


def written_in_run(path: Path, run_id: str) -> bool:
    """Whether the test run ``run_id`` wrote ``path`` (:func:`mark_written`)."""
    return run_marker(path, run_id).exists()


def end_runs(run_id: str) -> None:
    """At the end of the test run ``run_id`` (in the process that ran it, or the xdist
    controller, once its workers have ended): remove its markers, and those of other runs
    that no process runs any more (killed ones), and lock files nobody holds."""
    _swept_folders.clear()  # a next session in this process (pytester) sweeps them again
    if not _locks_folder(create=False).is_dir():
        return
    shutil.rmtree(_runs_folder() / _digest(run_id), ignore_errors=True)
    _sweep(keep=None)


def _sweep(keep: str | None) -> None:
    """Remove the run folders (but ``keep``) whose processes all ended, or that are too old,
    and the lock files that a killed holder left."""
    global _swept_runs
    _swept_runs = True
    now = time.time()
    with contextlib.suppress(OSError):
        for folder in os.scandir(_runs_folder()):
            if folder.name != keep and _run_ended(folder, now):
                shutil.rmtree(folder.path, ignore_errors=True)
    with contextlib.suppress(OSError):
        for entry in os.scandir(_locks_folder(create=False)):
            if entry.name.endswith(".lock"):
                _remove_free_lock(Path(entry.path))
            elif entry.name.endswith(".run"):  # a marker of older versions, one per cassette
                with contextlib.suppress(OSError):
                    if entry.stat().st_mtime < now - RUN_MARKERS_KEPT_SECONDS:
                        os.unlink(entry.path)


def _run_ended(folder: os.DirEntry[str], now: float) -> bool:
    try:
        if folder.stat(follow_symlinks=False).st_mtime < now - RUN_MARKERS_KEPT_SECONDS:
            return True
        names = os.listdir(folder.path)
        pids = [int(n[4:]) for n in names if n.startswith("pid-") and n[4:].isdigit()]
    except (OSError, ValueError):
        return False
    # A folder without any process yet is being made: it is kept until it is old.
    return bool(pids) and not any(pid_running(pid) for pid in pids)


def _remove_free_lock(lock_file: Path) -> None:
    """Remove ``lock_file`` if nobody holds it: taking its lock first, as only a holder may
    remove it (see :func:`locked`; a process about to lock it tries again on a new file)."""
    try:
        held = try_hold(lock_file)
    except OSError:
        return
    if held is not None:
        let_go(lock_file, held)


#: The cassette folders this process cleared of temporary files in this session.
_swept_folders: set[Path] = set()


def sweep_folder(folder: Path) -> None:
    """Once per session: remove the temporary files that killed writes left in the
    cassette folder ``folder`` (see :func:`~pytest_agentctx._files.remove_stale_temporaries`),
    so a run that only replays clears them too."""
    if folder not in _swept_folders:
        _swept_folders.add(folder)
        remove_stale_temporaries(folder)


def sweep_tree(root: Path) -> None:
    """:func:`sweep_folder` of ``root`` and every folder under it (see
    :func:`~pytest_agentctx._files.remove_stale_temporaries_under`): the temporary files
    killed writes left beside cassettes this run does not load go too, and the folders of
    those it loads are not swept again."""
    remove_stale_temporaries_under(root, done=_swept_folders)
