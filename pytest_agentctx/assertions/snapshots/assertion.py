"""The ``agent_snapshot`` fixture's assertion: ``assert result.context == agent_snapshot``.

:class:`AgentSnapshotAssertion` is syrupy's assertion with the agent extension, the test's
:class:`SnapshotOptions` (and those of one call: ``agent_snapshot(last=3)``) and the test's
redactor, and with failure texts that say what to run next: ``--snapshot-update`` for a
snapshot that does not exist yet, that differs from the run, or that is in another format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from syrupy.assertion import DiffMode, SnapshotAssertion
from syrupy.exceptions import TaintedSnapshotError
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SnapshotIndex

from pytest_agentctx.assertions.errors import SnapshotError
from pytest_agentctx.assertions.snapshots.extension import AgentSnapshotExtension
from pytest_agentctx.assertions.snapshots.options import SnapshotOptions
from pytest_agentctx.assertions.snapshots.serialization import FORMAT_VERSION, snapshot_text

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.session import SnapshotSession

    from pytest_agentctx.redaction.redactor import Redactor


def _header_of(text: str | bytes | None) -> str:
    if text is None:
        return "(empty)"
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text.split("\n", 1)[0][:80] or "(empty)"


@dataclass(eq=False, order=False, repr=False)
class AgentSnapshotAssertion(SnapshotAssertion):
    """The ``agent_snapshot`` fixture: ``assert result.context == agent_snapshot``.

    Call it to change the options of one assertion:
    ``assert ctx == agent_snapshot(last=3, truncate=200, omit=["**.metadata"])``.
    """

    options: SnapshotOptions = field(default_factory=SnapshotOptions)
    redactor: Redactor | None = None
    _call_options: SnapshotOptions | None = field(init=False, default=None)

    @classmethod
    def for_test(
        cls,
        session: SnapshotSession,
        test_location: PyTestLocation,
        *,
        update_snapshots: bool,
        update_new_snapshots_only: bool = False,
        options: SnapshotOptions | None = None,
        redactor: Redactor | None = None,
    ) -> AgentSnapshotAssertion:
        """An agent snapshot assertion of the test at ``test_location`` in syrupy's
        ``session``, as syrupy's own ``snapshot`` fixture makes one (with syrupy's
        ``--snapshot-update`` flags); its snapshots are redacted by ``redactor`` (the test's,
        the one its cassette uses), or by the running test's when it is ``None``."""
        return cls(
            session=session,
            extension_class=AgentSnapshotExtension,
            test_location=test_location,
            update_snapshots=update_snapshots,
            update_new_snapshots_only=update_new_snapshots_only,
            options=options or SnapshotOptions(),
            redactor=redactor,
        )

    def __call__(
        self,
        *,
        diff: SnapshotIndex | None = None,
        diff_data: SerializableData | None = None,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        extension_class: type[Any] | None = None,
        matcher: PropertyMatcher | None = None,
        name: SnapshotIndex | None = None,
        normalize: Mapping[str, Any] | None = None,
        last: int | None = None,
        fields: str | Sequence[str] | None = None,
        omit: str | Sequence[str] | None = None,
        truncate: int | None = None,
    ) -> AgentSnapshotAssertion:
        """Options for the next assertion only (and syrupy's ``name=``, ``diff=``)."""
        if exclude is not None or include is not None or matcher is not None:
            raise SnapshotError(
                "agent_snapshot does not take syrupy's include=, exclude= or matcher=; use "
                "agent_snapshot(fields=[...]), omit=[...] or normalize={path: replacement}."
            )
        if any(value is not None for value in (normalize, last, fields, omit, truncate)):
            previous = self._call_options
            self._call_options = self.options.merged(
                normalize=normalize, last=last, fields=fields, omit=omit, truncate=truncate
            )
            self._post_assert_actions.append(lambda: setattr(self, "_call_options", previous))
        super().__call__(diff=diff, diff_data=diff_data, extension_class=extension_class, name=name)
        return self

    def _serialize(self, data: SerializableData) -> str:
        options = self._call_options or self.options
        return snapshot_text(data, options, self.redactor)

    def get_assert_diff(self, *, diff_mode: DiffMode = DiffMode.DETAILED) -> list[str]:
        """Syrupy's diff, with what to run next."""
        result = self.executions[self.num_executions - 1]
        if isinstance(result.exception, TaintedSnapshotError) and isinstance(
            result.recalled_data, bytes
        ):
            return [
                f"The snapshot file {result.snapshot_location} is not UTF-8 text (it starts "
                f"{result.recalled_data!r}), so not a snapshot this plugin wrote: it was "
                "damaged or replaced.",
                "Restore it from version control, or re-run pytest with --snapshot-update to "
                "rewrite it, then review the diff.",
            ]
        if isinstance(result.exception, TaintedSnapshotError):
            return [
                f"The snapshot file {result.snapshot_location} is not in pytest-agentctx "
                f"snapshot format {FORMAT_VERSION}; its first line is "
                f"{_header_of(result.recalled_data or result.exception.snapshot_data)!r}.",
                "Re-run pytest with --snapshot-update to rewrite it, then review the diff.",
            ]
        if result.success or result.exception is not None:
            return super().get_assert_diff(diff_mode=diff_mode)
        if result.recalled_data is None:
            return [
                f"Snapshot {result.snapshot_name!r} does not exist: {result.snapshot_location}",
                "Re-run pytest with --snapshot-update to create it, then review the new file.",
            ]
        hint = (
            "The run differs from its snapshot. If the change is intended, re-run pytest "
            "with --snapshot-update and review the diff of the snapshot file."
        )
        return [hint, *super().get_assert_diff(diff_mode=diff_mode)]
