"""The syrupy extension: one ``.agentctx`` text file per snapshot, and short diffs.

``assert result.context == agent_snapshot`` stores the context in
``__snapshots__/<test module>/<test name>.agentctx``, one file per snapshot, and compares
later runs with it. :class:`AgentSnapshotExtension` writes the text of ``serialization``
to that file atomically (UTF-8, ``\\n`` line ends, readable by all), treats a file of
another format as tainted (to be rewritten with ``--snapshot-update``), and shows a
failure as the diff of the changed lines only, with one line of context around them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

from syrupy.constants import SYMBOL_ELLIPSIS
from syrupy.data import SnapshotCollection
from syrupy.exceptions import TaintedSnapshotError
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation
from syrupy.terminal import context_style, reset
from syrupy.types import (
    PropertyFilter,
    PropertyMatcher,
    SerializableData,
    SerializedData,
    SnapshotIndex,
)

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx._untrusted import LimitExceeded, read_untrusted, visible
from pytest_agentctx.assertions.errors import SnapshotError
from pytest_agentctx.assertions.snapshots.serialization import (
    FILE_EXTENSION,
    HEADER,
    snapshot_text,
)

_CONTEXT_LINES = 1
_CHUNK = 256
#: The longest name of a snapshot before its index, ``~`` and digest included.
_MAX_NAME = 200


def _slug(sanitize: Callable[[str], str], name: str) -> str:
    """``name`` with each character ``sanitize`` (syrupy's) would drop replaced by ``_``."""
    return "".join(char if sanitize(char) else "_" for char in name)


def _common_run(old: list[str], new: list[str], *, from_end: bool, limit: int | None = None) -> int:
    """How many lines ``old`` and ``new`` share at their start (or end), up to ``limit``."""
    most = min(len(old), len(new)) if limit is None else limit
    size = 0
    if from_end:
        a, b = len(old), len(new)
        while (
            size + _CHUNK <= most
            and old[a - size - _CHUNK : a - size] == new[b - size - _CHUNK : b - size]
        ):
            size += _CHUNK
        while size < most and old[a - size - 1] == new[b - size - 1]:
            size += 1
        return size
    while size + _CHUNK <= most and old[size : size + _CHUNK] == new[size : size + _CHUNK]:
        size += _CHUNK
    while size < most and old[size] == new[size]:
        size += 1
    return size


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (by bisection)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, limit
    end_a, end_b = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[end_a - mid : end_a - lo] == b[end_b - mid : end_b - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_start(text: str, position: int, *, back: int) -> int:
    """Where the line holding ``position`` starts, moved ``back`` lines earlier."""
    start = text.rfind("\n", 0, position) + 1
    for _ in range(back):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _line_end(text: str, position: int, *, ahead: int) -> int:
    """Where the line holding ``position`` ends, moved ``ahead`` lines later."""
    end = text.find("\n", position)
    for _ in range(ahead):
        if end == -1:
            break
        end = text.find("\n", end + 1)
    return len(text) if end == -1 else end


class AgentSnapshotExtension(SingleFileSnapshotExtension):
    """A syrupy extension: one ``.agentctx`` text file per snapshot, in the agent format.

    Use it through the ``agent_snapshot`` fixture, or with syrupy's own fixture:
    ``snapshot.use_extension(AgentSnapshotExtension)``.
    """

    file_extension = FILE_EXTENSION
    _write_mode = WriteMode.TEXT

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        """The snapshot's file name (without ``.agentctx``): the test's name as syrupy
        writes it when no character of it is one a file name cannot hold (``\\/?*:|"<>``
        and control characters) and it holds no secret; otherwise those characters become
        ``_``, the secrets of the running test ``REDACTED``, and ``~`` and a digest of the
        test's name follow (:func:`~pytest_agentctx.redaction.names.file_stem`): one file
        per test, which :meth:`matches_test_location` relates to it."""
        from pytest_agentctx.redaction.active import active
        from pytest_agentctx.redaction.names import file_stem

        raw = AbstractSyrupyExtension.get_snapshot_name(test_location=test_location, index=0)
        full = AbstractSyrupyExtension.get_snapshot_name(test_location=test_location, index=index)
        redactor = active()
        stem = file_stem(
            raw,
            functools.partial(_slug, cls._sanitize_filename),
            redact=None if redactor is None else redactor.text,
            max_length=_MAX_NAME,
        )
        return f"{stem}{cls._sanitize_filename(full[len(raw) :])}"[: cls._max_stem_length()]

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        """Whether the file ``snapshot_location`` is a snapshot of the test: syrupy's
        rule, or, for a name that ends with a digest (:meth:`get_snapshot_name`), the
        digest of that test's name (whatever was redacted in it)."""
        if super().matches_test_location(
            test_location=test_location, snapshot_location=snapshot_location
        ):
            return True
        from pytest_agentctx.redaction.names import SEPARATOR, digest

        location = Path(snapshot_location)
        stem = cls._snapshot_stem(location.name)
        if (
            stem is None
            or location.parent.name != test_location.basename
            or not test_location.matches_snapshot_site(snapshot_location)
        ):
            return False
        raw = AbstractSyrupyExtension.get_snapshot_name(test_location=test_location, index=0)
        tail = f"{SEPARATOR}{digest(raw)}"
        return stem.endswith(tail) or f"{tail}." in stem or f"{tail}[" in stem

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> str:
        """The snapshot text of ``data`` with the default options, redacted by the running
        test's redactor."""
        if exclude is not None or include is not None:
            raise SnapshotError(
                "The agent snapshot extension does not take syrupy's include=/exclude=; "
                "use agent_snapshot(fields=[...]) or agent_snapshot(omit=[...]) instead."
            )
        return snapshot_text(data)

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializableData | None:
        """The stored text, or ``None``; a file in another format is tainted (rewrite it).
        It is read as untrusted input (:func:`~pytest_agentctx._untrusted.read_untrusted`):
        a regular file of at most ``file_bytes``, never a FIFO or a device."""
        try:
            text = read_untrusted(Path(snapshot_location)).decode("utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as error:  # binary garbage: tainted, shown as its bytes
            raise TaintedSnapshotError(snapshot_data=error.object[:32]) from None
        except LimitExceeded as exc:
            raise SnapshotError(f"Snapshot {exc}") from None
        except OSError as exc:
            raise SnapshotError(
                f"Snapshot {snapshot_location} cannot be read ({exc.strerror or exc}). "
                "Restore it from version control, or delete it and write it again: "
                "pytest --snapshot-update"
            ) from None
        if not text.startswith(HEADER + "\n"):
            raise TaintedSnapshotError(snapshot_data=text)
        return text

    def diff_lines(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> Iterator[str]:
        """Syrupy's diff of the changed lines only, with one line of context around them.

        The unchanged text before and after the change is found by comparing halves of
        the two texts (in C), so a one-line change in a long snapshot costs a few string
        comparisons, not a split of both texts into lines or a line diff.
        """
        # a stored snapshot may come from a stranger: its control characters are shown
        old, new = visible(str(snapshot_data)), visible(str(serialized_data))
        prefix = _common_prefix(old, new)
        suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
        start = _line_start(old, prefix, back=_CONTEXT_LINES + 1)
        old_stop = _line_end(old, max(prefix, len(old) - suffix), ahead=_CONTEXT_LINES + 1)
        new_stop = _line_end(new, max(prefix, len(new) - suffix), ahead=_CONTEXT_LINES + 1)
        old_lines = old[start:old_stop].split("\n")
        new_lines = new[start:new_stop].split("\n")
        same_start = _common_run(old_lines, new_lines, from_end=False)
        same_end = _common_run(
            old_lines,
            new_lines,
            from_end=True,
            limit=min(len(old_lines), len(new_lines)) - same_start,
        )
        first = max(0, same_start - _CONTEXT_LINES)
        old_end = min(len(old_lines), len(old_lines) - same_end + _CONTEXT_LINES)
        new_end = min(len(new_lines), len(new_lines) - same_end + _CONTEXT_LINES)
        if start > 0 or first > 0:
            yield reset(context_style(f"  {SYMBOL_ELLIPSIS}"))
        yield from super().diff_lines(
            "\n".join(new_lines[first:new_end]), "\n".join(old_lines[first:old_end])
        )
        if old_stop < len(old) or new_stop < len(new) or old_end < len(old_lines):
            yield reset(context_style(f"  {SYMBOL_ELLIPSIS}"))

    @classmethod
    def write_snapshot_collection(
        cls,
        *,
        snapshot_collection: SnapshotCollection,
        name_order: dict[str, int] | None = None,
    ) -> None:
        """Write the snapshot atomically: a temporary file, then a rename over the old one.

        The file is UTF-8 with ``\\n`` line ends on every system, readable by all
        (``0o644``) whatever the umask.
        """
        location = Path(snapshot_collection.location)
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise SnapshotError(
                f"Cannot write {location}: expected the snapshot text, got {type(data).__name__}."
            )
        atomic_write_text(location, data, mode=0o644)
