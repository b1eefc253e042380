"""Exclusive locks across processes, held on lock files that are removed after use.

:func:`hold` waits for the lock of a lock file (creating the file), :func:`try_hold` makes
one attempt on a file that exists, and :func:`let_go` removes the lock file and releases the
lock. So a lock file exists only while a process holds or waits for it, and a folder of lock
files does not keep one per path ever locked.

Removing a lock file that others may wait on is the classic race: a process waiting on the
removed file gets its lock while another locks the new file at the same path, and both go
on. Two rules make it safe here:

* only a holder removes the lock file, and before it releases the lock;
* a process that gets the lock checks that the path still names the file it locked; if not
  (the holder removed it while this process waited on it), nobody else will ever lock that
  file, so the process lets go and starts again on the file now at the path (created anew
  by whoever comes first).

So the file at the path is locked by one process at most, and only a process holding the
lock of the file at the path goes on.

Why ``fcntl`` on POSIX and filelock only elsewhere: filelock's POSIX lock (``flock`` too)
never removes its lock files, by design, so that waiters share one file; removing them
ourselves around it would rely on how its internals treat a removed file, which it does not
document. The ``flock`` code here is short and keeps both rules above. Where ``fcntl`` does
not exist (Windows), the lock is filelock's ``FileLock`` (``LockFileEx``), which removes the
lock file on release itself; Windows does not delete a file that another process has open,
so the race above does not arise there, and a file left that way goes at a later release.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from filelock import BaseFileLock

fcntl: ModuleType | None
try:
    import fcntl
except ModuleNotFoundError:  # Windows
    fcntl = None

#: A held lock: a descriptor holding an ``flock`` lock, or a filelock lock where there is
#: no ``fcntl``.
Held: TypeAlias = "int | BaseFileLock"


def _file_lock(lock_file: Path) -> BaseFileLock:
    """filelock's lock of ``lock_file``, for where there is no ``fcntl`` (imported only
    there), usable from any thread of this process."""
    import filelock

    return filelock.FileLock(lock_file, thread_local=False)


def hold(lock_file: Path) -> Held:
    """Wait for the exclusive lock of ``lock_file`` (created if need be) and hold it: the
    file being the one at the path (see the module's docstring)."""
    if fcntl is None:
        lock = _file_lock(lock_file)
        lock.acquire()
        return lock
    while True:
        descriptor = _lock_once(lock_file, wait=True)
        if descriptor is not None:
            return descriptor
        # The file was removed while this process waited: lock the one at the path now.


def try_hold(lock_file: Path) -> Held | None:
    """The lock of ``lock_file``, held, or ``None`` at once: another process holds it, or
    there is no file. Errors other than these (a file that cannot be opened) are raised."""
    if fcntl is None:
        if not lock_file.exists():
            return None
        from filelock import Timeout

        lock = _file_lock(lock_file)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            return None
        return lock
    return _lock_once(lock_file, wait=False)


def let_go(lock_file: Path, held: Held) -> None:
    """Remove ``lock_file`` and release its lock ``held`` (in that order: see the module's
    docstring)."""
    if isinstance(held, int):
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_file)  # while still holding it
        finally:
            os.close(held)  # releases the lock
        return
    held.release()  # filelock removes the file once it has released the lock


def _lock_once(lock_file: Path, *, wait: bool) -> int | None:
    """A descriptor holding the ``flock`` lock of the file at ``lock_file``, or ``None``:
    the file this process locked is no longer the one at the path, or (without ``wait``)
    another process holds the lock, or there is no file."""
    assert fcntl is not None
    flags = os.O_RDWR | os.O_CREAT if wait else os.O_RDWR
    try:
        descriptor = os.open(lock_file, flags, 0o666)
    except FileNotFoundError:
        if wait:
            raise
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        held = os.fstat(descriptor)
        current = os.stat(lock_file)
    except (BlockingIOError, FileNotFoundError):
        os.close(descriptor)
        return None
    except BaseException:
        os.close(descriptor)
        raise
    if (current.st_dev, current.st_ino) != (held.st_dev, held.st_ino):
        os.close(descriptor)
        return None
    return descriptor
