"""Errors of the reports: report and baseline files that cannot be read, budget and
repeat markers or options with bad values, and statistics asked of values they cannot take.
"""

from __future__ import annotations

from pytest_agentctx.exceptions import UsageError, publish

__all__ = [
    "ReportError",
    "BudgetError",
    "RepeatError",
    "StatisticsError",
]


class ReportError(UsageError):
    """A report or ``--agent-baseline`` file that cannot be read (missing, not JSON, not a
    pytest-agentctx report, another schema version, past a limit), or a gate tolerance that
    cannot work. Its message may quote the report, which may come from a stranger: control
    characters in it are shown as escapes (:func:`~pytest_agentctx._untrusted.visible`)."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            from pytest_agentctx._untrusted import visible

            args = (visible(args[0]),)
        super().__init__(*args)


class BudgetError(UsageError):
    """A behaviour budget that cannot work: an ``agent_budget`` marker or an
    ``agent_budget_*`` ini option with an unknown key, a negative value or a value of the
    wrong type."""


class RepeatError(UsageError):
    """An ``agent_repeat`` marker that cannot work: a run count below 1, a pass rate
    outside 0 to 1, or an unknown option."""


class StatisticsError(ReportError, ValueError):
    """A statistic asked of values it cannot take: a count of runs below 0, more passes
    than runs, a confidence level outside 0 to 1, a ``k`` above the number of runs, no
    values to average, unpaired sequences. Also a :class:`ValueError`, as for any function
    given a value outside its domain."""


publish(globals())
