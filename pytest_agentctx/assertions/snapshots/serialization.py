"""The snapshot text of a context or a run: a header, then one value per line, redacted.

The first line names the format version (:data:`HEADER`); a snapshot written in another
version fails with a request to re-run pytest with ``--snapshot-update``. With options that
project the run, the next line says how. Then come the lines of the value (``writer``): of
an :class:`AgentContext`, or of a run result (the runtime's ``RunResult``, recognised by
its shape, :class:`RunShaped`), whose agent's name, output and context are written.

Secrets are written as ``REDACTED``: every string of the value (message contents, tool
arguments and results, metadata and its keys, sub-agent runs) passes the test's redactor,
the one its cassette uses, so a snapshot taken while recording equals the one its replay
gives, where the cassette holds ``REDACTED``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import Field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard

from pytest_agentctx.assertions.snapshots.options import SnapshotOptions
from pytest_agentctx.assertions.snapshots.writer import Writer
from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.context.scrub import redact
from pytest_agentctx.redaction.active import active
from pytest_agentctx.redaction.output import shows_secret

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor

#: Bumped whenever the serialized form changes; old snapshots then need --snapshot-update.
FORMAT_VERSION = 1
#: The extension of snapshot files.
FILE_EXTENSION = "agentctx"
#: The first line of every snapshot file.
HEADER = f"# pytest-agentctx snapshot, format {FORMAT_VERSION}"

_DEFAULT_OPTIONS = SnapshotOptions()


class _Agent(Protocol):
    @property
    def name(self) -> str: ...


class RunShaped(Protocol):
    """A run result as a snapshot sees it: a dataclass with the ``agent`` that ran (its
    ``name``), the final ``output`` and the run's ``context``. The runtime's ``RunResult``
    is one; the assertions layer knows it by this shape, not by its class."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def agent(self) -> _Agent: ...

    @property
    def context(self) -> AgentContext: ...

    @property
    def output(self) -> str | None: ...


def is_run_result(data: Any) -> TypeGuard[RunShaped]:
    """Whether ``data`` is a run result: a dataclass instance with an ``agent``, an
    ``output`` and an :class:`AgentContext` as its ``context``."""
    return (
        dataclasses.is_dataclass(data)
        and not isinstance(data, type)
        and isinstance(getattr(data, "context", None), AgentContext)
        and hasattr(data, "agent")
        and hasattr(data, "output")
    )


def snapshot_text(
    data: Any, options: SnapshotOptions | None = None, redactor: Redactor | None = None
) -> str:
    """:func:`serialize`, redacted by ``redactor`` or else by the running test's."""
    return serialize(data, options, redactor or active())


def serialize(
    data: Any, options: SnapshotOptions | None = None, redactor: Redactor | None = None
) -> str:
    """The snapshot text of ``data``: a header, then one value per line.

    With a ``redactor``, every secret it knows is written as ``REDACTED``: the strings of
    ``data`` are scrubbed before they are written (so truncation, ``normalize`` hooks and
    quoting see what a replay from the redacted cassette gives), and the text once more.
    """
    options = options or _DEFAULT_OPTIONS
    if redactor is None or not redactor.secret_values:
        return _serialize(data, options)
    if not _scrub_first(options, redactor.secret_values):
        text = _serialize(data, options)
        if not shows_secret(text, redactor):  # the usual case: no secret in the run
            return text
    return redactor.text(_serialize(_redacted(data, redactor), options))


def _scrub_first(options: SnapshotOptions, secrets: Sequence[str]) -> bool:
    """Whether a secret in the data might not show in the text as it is (a string cut
    short, changed by a hook, or written with escapes): then the data is always scrubbed
    before it is written."""
    return (
        options.truncate is not None
        or any(callable(replacement) for replacement in options.normalize.values())
        or any(not s.isprintable() or "\\" in s or "'" in s for s in secrets)
    )


def _redacted(data: Any, redactor: Redactor) -> Any:
    """``data`` with its strings scrubbed (of a run result: what the snapshot writes)."""
    if is_run_result(data):
        return dataclasses.replace(
            data, context=redact(data.context, redactor), output=redact(data.output, redactor)
        )
    return redact(data, redactor)


def _serialize(data: Any, options: SnapshotOptions) -> str:
    writer = Writer(options)
    lines = writer.lines
    lines.append(HEADER)
    projection = options.describe()
    if projection is not None:
        lines.append(f"# projection: {projection}")
    if is_run_result(data):
        writer.line("", "RunResult")
        writer.value("agent", data.agent.name, "agent")
        writer.value("output", data.output, "output")
        writer.value("context", data.context, "context")
    else:
        writer.value("", data, None)
    lines.append("")
    return "\n".join(lines)
