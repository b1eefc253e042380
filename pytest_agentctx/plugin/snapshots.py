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
    from syrupy.session import SnapshotSession

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
    request: pytest.FixtureRequest, agent_snapshot_config: SnapshotOptions
) -> AgentSnapshotAssertion:
    """A syrupy snapshot of an agent run: ``assert result.context == agent_snapshot``.

    Stored as ``__snapshots__/<module>/<test>.agentctx``; ``--snapshot-update`` writes it.
    Secrets are written as ``REDACTED`` by the test's redactor, the one its cassette uses.
    """
    from syrupy.location import PyTestLocation

    from pytest_agentctx.assertions.snapshots.assertion import AgentSnapshotAssertion

    option = request.config.option
    return AgentSnapshotAssertion.for_test(
        syrupy_session(request.config),
        PyTestLocation(request.node),
        update_snapshots=bool(option.update_snapshots),
        update_new_snapshots_only=bool(getattr(option, "update_new_snapshots_only", False)),
        options=agent_snapshot_config,
        redactor=redactor_for(request),
    )


def syrupy_session(config: pytest.Config) -> SnapshotSession:
    """syrupy's session, which syrupy's own ``snapshot`` fixture makes its assertions in:
    ``agent_snapshot`` takes it rather than that fixture by its name, as a project may
    define a fixture named ``snapshot`` of its own."""
    session: SnapshotSession | None = getattr(config, "_syrupy", None)
    if session is None:
        raise pytest.UsageError(
            "agent_snapshot needs syrupy's pytest plugin, which is not loaded in this "
            "session (was it disabled with -p no:syrupy?); expected it loaded, as "
            "installing pytest-agentctx installs it. Remove -p no:syrupy, or do not use "
            "agent_snapshot."
        )
    return session
