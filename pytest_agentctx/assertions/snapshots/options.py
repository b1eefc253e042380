"""Options of a snapshot: volatile values and projections (:class:`SnapshotOptions`).

The ``agent_snapshot_config`` fixture gives the options of every snapshot of a test, and
``agent_snapshot(...)`` those of one assertion; path globs name the values they apply to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentctx.assertions.errors import SnapshotError


def _as_globs(value: str | Iterable[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    globs = tuple(value)
    for glob in globs:
        if not isinstance(glob, str) or not glob:
            raise SnapshotError(
                f"SnapshotOptions({what}=...): {glob!r} is not a path glob; give strings such "
                "as 'iterations[*].metadata' or 'latency_ms'."
            )
    return globs


def _positive(value: int | None, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SnapshotError(
            f"SnapshotOptions({what}={value!r}): expected a whole number of at least 1, "
            f"or None for no limit."
        )
    return value


@dataclass(frozen=True)
class SnapshotOptions:
    """How a value is written into a snapshot: volatile values and projections.

    - ``normalize``: ``{path glob: replacement}`` for values that change from run to run.
      The replacement is written as it is, or, if it is a function, the function receives
      the value and its result is written like any value.
    - ``ids``: names of the fields and keys whose string values are generated ids, written
      as ``<id:1>``, ``<id:2>``... in first-seen order (the same id, the same number).
    - ``last``: keep only the last N iterations of the run.
    - ``fields``: keep only the values at these path globs (and everything below them).
    - ``omit``: leave out the values at these path globs.
    - ``truncate``: cut strings longer than this many characters.

    Path globs: ``*`` is any run of characters inside one path segment, ``**`` any run
    across segments, and a bare name (``latency_ms``) matches that field anywhere.
    """

    normalize: Mapping[str, Any] = field(default_factory=dict)
    ids: tuple[str, ...] = ("id", "*_id")
    last: int | None = None
    fields: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    truncate: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.normalize, Mapping):
            raise SnapshotError(
                f"SnapshotOptions(normalize={self.normalize!r}): expected a mapping of path "
                "globs to replacements, e.g. {'**.latency_ms': '<latency>'}."
            )
        _as_globs(list(self.normalize), "normalize")
        object.__setattr__(self, "normalize", dict(self.normalize))
        object.__setattr__(self, "ids", _as_globs(self.ids, "ids"))
        object.__setattr__(self, "fields", _as_globs(self.fields, "fields"))
        object.__setattr__(self, "omit", _as_globs(self.omit, "omit"))
        _positive(self.last, "last")
        _positive(self.truncate, "truncate")

    def merged(
        self,
        *,
        normalize: Mapping[str, Any] | None = None,
        ids: Iterable[str] | None = None,
        last: int | None = None,
        fields: str | Iterable[str] | None = None,
        omit: str | Iterable[str] | None = None,
        truncate: int | None = None,
    ) -> SnapshotOptions:
        """These options with more: ``normalize`` and ``omit`` add, the others replace."""
        return SnapshotOptions(
            normalize={**self.normalize, **(normalize or {})},
            ids=self.ids if ids is None else tuple(ids),
            last=self.last if last is None else last,
            fields=self.fields if fields is None else _as_globs(fields, "fields"),
            omit=(*self.omit, *_as_globs(omit, "omit")),
            truncate=self.truncate if truncate is None else truncate,
        )

    def describe(self) -> str | None:
        """The projection in words, for the snapshot's header (``None`` if there is none)."""
        parts = []
        if self.last is not None:
            parts.append(f"last {self.last} iterations")
        if self.fields:
            parts.append(f"fields {', '.join(self.fields)}")
        if self.omit:
            parts.append(f"without {', '.join(self.omit)}")
        if self.truncate is not None:
            parts.append(f"strings cut at {self.truncate} characters")
        return "; ".join(parts) or None
