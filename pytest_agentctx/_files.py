"""Writing files so that nothing is ever half-written: a temporary file, then a rename."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the new one.

    The text goes to a temporary file beside ``path``, is flushed to disk, and is renamed
    over ``path``; if anything fails, the temporary file is removed and ``path`` is as it was.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes, *, temp_prefix: str = ".") -> None:
    """:func:`atomic_write_text` for bytes. The temporary file's name starts with
    ``temp_prefix``, so that a reader of the folder can tell it from the real files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{temp_prefix}{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
