"""The runs of one test, gathered from every fixture that produces contexts (:class:`RunLog`).

Budgets, reports and the CI gate read a test's runs from its log, as
:class:`~pytest_agentctx.context.runs.RunRecord` objects, and measure them with
:func:`~pytest_agentctx.reports.figures.run_stats`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pytest_agentctx.context.runs import RunRecord


@dataclass
class _RunSources:
    exact: list[Callable[[], Iterable[RunRecord]]] = field(default_factory=list)
    captured: Callable[[], Iterable[RunRecord]] | None = None

    def records(self, *, captured: bool) -> list[RunRecord]:
        exact = [record for source in self.exact for record in source()]
        if exact or not captured or self.captured is None:
            return exact
        return list(self.captured())


class RunLog:
    """The runs of one test, gathered from every fixture that produces contexts.

    Two kinds of source: *exact* ones (the package's runtime, whose results are the runs
    themselves) and the *captured* one (the runs rebuilt from the test's model traffic:
    its cassette, the fake model, or the traffic recorded live). The runs of a test are
    those of its exact sources when they made any, otherwise the captured ones: a runtime
    run's traffic is captured too, and must not count twice.

    Sources are functions called when the runs are read (after the test ran, so runs that
    finished late are included); a captured source builds its contexts only then, so a test
    whose runs nobody reads (no budget, report or gate) does not pay for them. A repeated
    test (``agent_repeat``) starts a new part for each repetition (:meth:`new_part`).
    """

    def __init__(self) -> None:
        self._parts = [_RunSources()]
        self._repeated = False

    def new_part(self) -> None:
        """Start the sources of a new repetition of the test: the first repetition takes
        the log's first part unless runs are in it already; every later one has a part of
        its own, even when the one before made no run."""
        if self._repeated or self._parts[-1].exact or self._parts[-1].captured is not None:
            self._parts.append(_RunSources())
        self._repeated = True

    def add_source(self, source: Callable[[], Iterable[RunRecord]]) -> None:
        """An exact source (the runtime's results)."""
        self._parts[-1].exact.append(source)

    def set_captured(self, source: Callable[[], Iterable[RunRecord]]) -> None:
        """The source of the runs rebuilt from the test's traffic (the last one set wins:
        ``agent_context``'s recorder sees more than the fake model's own log)."""
        self._parts[-1].captured = source

    @property
    def captures(self) -> bool:
        """Whether any part has a captured source."""
        return any(part.captured is not None for part in self._parts)

    @property
    def measurable(self) -> bool:
        """Whether any source can give this test's runs (it is an agent test)."""
        return any(part.exact or part.captured is not None for part in self._parts)

    def exact_records(self) -> list[RunRecord]:
        """The runs of the exact sources only: nothing is built from traffic."""
        return [record for part in self.records_by_part(captured=False) for record in part]

    def records_by_part(self, *, captured: bool = True) -> list[list[RunRecord]]:
        """The runs of each part (each repetition of an ``agent_repeat`` test), as
        :meth:`records` gives them (or only the exact sources' with ``captured=False``)."""
        return [part.records(captured=captured) for part in self._parts]

    def records(self, *, last_part: bool = False) -> list[RunRecord]:
        """The test's runs (or those of its last repetition): in each part, the exact
        sources' when they made any, else the captured ones."""
        parts = self._parts[-1:] if last_part else self._parts
        return [record for part in parts for record in part.records(captured=True)]
