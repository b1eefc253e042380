"""A test's traffic made into runs, ``agent_context``, and the test's redactor.

The runs of a test are rebuilt from its traffic (:func:`capture_runs`): its cassette's
exchanges, the fake model's, or a recorder's (:func:`record_traffic`, for a budgeted test
with neither); ``agent_context`` gives them to the test. Each test that uses the plugin has
a redactor (:func:`redactor_for`: its cassette's, or one of the session's secrets), which
its snapshots, records, reports and failure messages pass (:func:`redacted`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import pytest

from .keys import CAPTURED_KEY, CLOCK_KEY, REDACTOR_KEY, RUNS_KEY, SECRETS_KEY, VCR_MATCHERS_KEY

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.traffic.capture import CapturedRuns, Exchange
    from pytest_agentctx.traffic.cassettes import Cassette
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction


def capture_runs(item: pytest.Item, source: Callable[[], Sequence[Exchange | Interaction]]) -> None:
    """Measure the runs of ``item`` from the exchanges ``source`` gives (built when read)."""
    from pytest_agentctx.reports.stats import RunLog
    from pytest_agentctx.traffic.capture import CapturedRuns

    clock = item.config.stash[CLOCK_KEY]
    runs = CapturedRuns(source, clock_start=clock.start, clock_step=clock.step)
    item.stash[CAPTURED_KEY] = runs
    item.stash.setdefault(RUNS_KEY, RunLog()).set_captured(runs.records)


def record_traffic(item: pytest.Item) -> Iterator[None]:
    """Capture the live traffic of a test that has a budget but no cassette or fake model
    (an agent talking to a loopback server or a real provider), so the budget is measured."""
    from pytest_agentctx.traffic import scopes
    from pytest_agentctx.traffic.capture import TrafficRecorder

    recorder = TrafficRecorder()
    capture_runs(item, lambda: recorder.exchanges)
    scopes.hold()  # to the session's end: a late request is refused between tests too
    recorder.start()
    try:
        yield
    finally:
        recorder.stop()


@pytest.fixture
def agent_context(
    request: pytest.FixtureRequest, _agentctx_cassette: Cassette | None
) -> Iterator[CapturedRuns]:
    """The conversations of this test, rebuilt from its LLM traffic (any SDK or framework).

    ``agent_context.context`` is the one conversation, ``agent_context.contexts`` all of
    them in the order they started, ``agent_context.non_llm`` the other exchanges. They are
    read from the test's cassette (replayed or recorded), or, with ``fake_llm``, from the
    traffic the fake model answered; timestamps come from the ``agent_clock_*`` clock.
    """
    from pytest_agentctx.traffic import scopes
    from pytest_agentctx.traffic.capture import TrafficRecorder

    item = request.node
    if _agentctx_cassette is not None:  # the cassette fixture captures its exchange log
        yield item.stash[CAPTURED_KEY]
        return
    if "fake_llm" in request.fixturenames:
        request.getfixturevalue("fake_llm")  # started first: the recorder sees its replies
    # A recorder also sees the exchanges that are no model call (agent_context.non_llm).
    recorder = TrafficRecorder()
    capture_runs(item, lambda: recorder.exchanges)
    runs = item.stash[CAPTURED_KEY]
    scopes.hold()  # to the session's end: a late request is refused between tests too
    recorder.start()
    try:
        yield runs
    finally:
        recorder.stop()


def redactor_of(item: pytest.Item) -> Redactor:
    """The redactor of ``item``: its own (:func:`redactor_for`), else the session's."""
    redactor = item.stash.get(REDACTOR_KEY, None)
    return redactor if redactor is not None else item.config.stash[SECRETS_KEY].redactor


def redacted(item: pytest.Item, text: str) -> str:
    """``text`` (a failure message) scrubbed of the secrets of ``item``."""
    return redactor_of(item).text(text)


def use_redactor(item: pytest.Item, redactor: Redactor) -> Redactor:
    """Make ``redactor`` the test's: its snapshots, record, reports and the assertion
    explanations printed while it runs pass it."""
    from pytest_agentctx.redaction.active import set_active

    item.stash[REDACTOR_KEY] = redactor
    set_active(redactor)
    return redactor


def redactor_for(request: pytest.FixtureRequest) -> Redactor:
    """The test's redactor: its cassette's when it has one, else one of the session's
    secrets and the ``redact_values`` of its ``agent_cassette_config``."""
    item: pytest.Item = request.node
    redactor = item.stash.get(REDACTOR_KEY, None)
    if redactor is not None:
        return redactor
    from pytest_agentctx.traffic.cassettes.per_test import cassette_config

    config = cassette_config(
        request.getfixturevalue("agent_cassette_config"),
        where=item.nodeid,
        matchers=request.config.stash.get(VCR_MATCHERS_KEY, {}),
    )
    secrets = request.config.stash[SECRETS_KEY]
    return use_redactor(item, secrets.for_test(config.get("redact_values", ())))
