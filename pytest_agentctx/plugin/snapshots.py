"""Snapshots of agent runs, and ``==`` explained on the context's models.

``agent_snapshot`` is a syrupy snapshot of a run or a context, redacted by the test's
redactor, with the options of ``agent_snapshot_config``; :func:`pytest_assertrepr_compare`
explains a failed ``==`` on the context's models or a pattern, mismatch by mismatch.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .capture import redactor_for

if TYPE_CHECKING:
    # Imported where they are used: loading the plugin at pytest's start-up then costs
    # little, and a session that never uses a fixture never pays for it.
    from syrupy.assertion import SnapshotAssertion

    from pytest_agentctx.assertions.snapshots.assertion import AgentSnapshotAssertion
    from pytest_agentctx.assertions.snapshots.options import SnapshotOptions


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """For ``==`` on the context's models or a pattern: the count, then every mismatch,
    with the running test's secrets redacted (only in the text: what compared equal, and
    what did not, is unchanged)."""
    from pytest_agentctx.assertions.patterns.report import assertrepr_compare

    lines = assertrepr_compare(op, left, right)
    if lines is None:
        return None
    from pytest_agentctx.redaction.active import active
    from pytest_agentctx.redaction.output import redact_lines

    redactor = active()
    return lines if redactor is None else redact_lines(lines, redactor)


@pytest.fixture
def agent_snapshot_config() -> SnapshotOptions:
    """Options of ``agent_snapshot`` (volatile values, projections); override to change."""
    from pytest_agentctx.assertions.snapshots.options import SnapshotOptions

    return SnapshotOptions()


@pytest.fixture
def agent_snapshot(
    request: pytest.FixtureRequest,
    snapshot: SnapshotAssertion,
    agent_snapshot_config: SnapshotOptions,
) -> AgentSnapshotAssertion:
    """A syrupy snapshot of an agent run: ``assert result.context == agent_snapshot``.

    Stored as ``__snapshots__/<module>/<test>.agentctx``; ``--snapshot-update`` writes it.
    Secrets are written as ``REDACTED`` by the test's redactor, the one its cassette uses.
    """
    from pytest_agentctx.assertions.snapshots.assertion import AgentSnapshotAssertion

    return AgentSnapshotAssertion.from_snapshot(
        snapshot, agent_snapshot_config, redactor_for(request)
    )
