"""Writing files so that nothing is ever half-written: a temporary file, then a rename.

A write goes to ``<prefix><name>.<pid>.<hex>.tmp`` beside the target (created anew: an
existing file or link of that name is never opened), is flushed to disk and renamed over the
target. A process killed between the two (``kill -9``, a crash, a power
cut) leaves the target as it was and the temporary file behind; the next write of the same
file removes the temporary files that such a process left, never those of a process that is
still writing (:func:`remove_stale_temporaries`, which also clears a whole folder, and
:func:`remove_stale_temporaries_under` a tree of them).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from pathlib import Path

#: A temporary file older than this is left over whatever its process id says (the id may
#: have been reused by another process since): a write takes seconds, not an hour.
STALE_AFTER_SECONDS = 3600.0

#: ``<name>.<pid>.<8 hex digits>.tmp``, after the prefix: the shape of every temporary file.
_TEMPORARY = re.compile(r"(?P<name>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the new one.

    The text goes, encoded in UTF-8 and with its line ends as they are, to a temporary file
    beside ``path``, is flushed to disk, and is renamed over ``path``; if anything fails, the
    temporary file is removed and ``path`` is as it was. ``mode``: the permissions of the
    file, whatever the umask (by default, those the umask gives a new file).
    """
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def atomic_write_bytes(
    path: Path,
    data: bytes,
    *,
    temp_prefix: str = ".",
    mode: int | None = None,
    durable: bool = True,
) -> None:
    """:func:`atomic_write_text` for bytes. The temporary file's name starts with
    ``temp_prefix``, so that a reader of the folder can tell it from the real files.
    ``durable=False`` skips the flush to disk, for a file whose reader tells a torn one
    (after a power cut) from a whole one, such as a cache entry with its own checksum.

    Once written, the temporary files of ``path`` that a dead process left are removed
    (:func:`remove_stale_temporaries`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{temp_prefix}{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    # "x": a new file or an error, never another writer's file nor a link planted there;
    # opened before the try, so that a file this write did not create is never removed.
    handle = open(temporary, "xb")  # noqa: SIM115 (closed by the with below)
    try:
        with handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    remove_stale_temporaries(path.parent, name=path.name, temp_prefix=temp_prefix)


def remove_stale_temporaries(
    folder: Path, *, name: str | None = None, temp_prefix: str = "."
) -> list[Path]:
    """Remove the temporary files in ``folder`` (of the file ``name`` only, when given) that
    no running write will rename: those of a process that is no longer running, and those
    older than :data:`STALE_AFTER_SECONDS`. Returns the paths removed.

    The temporary file of a write in progress is kept: its process is alive (another xdist
    worker, another pytest run, another thread of this process), and it is young. A file
    that cannot be removed is left for a later write.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    removed: list[Path] = []
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(temp_prefix):
            continue
        match = _TEMPORARY.fullmatch(entry.name[len(temp_prefix) :])
        if match is None or (name is not None and match["name"] != name):
            continue
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_SECONDS
            if not old and pid_running(int(match["pid"])):
                continue
            os.unlink(entry.path)
        except OSError:  # gone already (another process removed it), or not ours to remove
            continue
        removed.append(Path(entry.path))
    return removed


#: At most this many folders are looked into by :func:`remove_stale_temporaries_under`.
MAX_SWEPT_FOLDERS = 10_000


def remove_stale_temporaries_under(
    root: Path, *, temp_prefix: str = ".", done: set[Path] | None = None
) -> list[Path]:
    """:func:`remove_stale_temporaries` in ``root`` and every folder under it (but hidden
    ones, and no more than :data:`MAX_SWEPT_FOLDERS`; links to folders are not followed),
    but those in ``done``, to which each folder swept is added. Returns the paths
    removed."""
    removed: list[Path] = []
    for count, (top, folders, _) in enumerate(os.walk(root)):
        if count >= MAX_SWEPT_FOLDERS:
            break
        folders[:] = [name for name in folders if not name.startswith(".")]
        folder = Path(top)
        if done is not None:
            if folder in done:
                continue
            done.add(folder)
        removed.extend(remove_stale_temporaries(folder, temp_prefix=temp_prefix))
    return removed


def pid_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):  # not a process id this system can have
        return False
    return True


def unwritable_reason(path: Path) -> str | None:
    """Why the file ``path`` cannot be written (created or replaced), or ``None`` when it
    looks writable: a folder at ``path``, a file where one of its folders should be, or a
    folder that is not writable. The folders missing on the way would be created.

    It only looks: a write can still fail (a full disk), and must say so itself.
    """
    if path.is_dir():
        return f"{path} is a folder; give the path of a file"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    missing = "" if folder == path.parent else f", so {path.parent} cannot be created"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder{missing}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable{missing}"
    return None
