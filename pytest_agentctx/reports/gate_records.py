"""The gate's findings as data: one :class:`GateRecord` per finding, from the gate to the
JSON report (``summary.gate.records``), the ``gate`` command, the HTML page and JUnit.

A record names its test (``nodeid``, ``None`` for a finding about the whole session), its
``kind``, the ``measure`` it is about, the figures (``baseline``, ``now``, ``allowed``,
an ``interval`` and a ``p_value`` where a statistic gave them), its ``verdict`` (``fail``
fails the gate; ``pass`` and ``info`` only inform) and its ``message``, the line the
terminal prints. Every reader renders from the fields: none parses the message back.
:meth:`GateRecord.to_dict` gives its JSON (:class:`GateRecordDict`) and
:func:`record_from_dict` reads it again, checking each field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from pytest_agentctx.reports.errors import ReportError

#: What a record is about: a ``budget`` exceeded, a budget or baseline run ``unmeasured``,
#: a stale or unused ``cassette``, a test's ``drift`` from the baseline, a ``new`` test (not
#: in the baseline) or one ``not_run`` (in the baseline only), the suite's ``pass_rate``
#: against the baseline's, a ``flip`` (a test or repetition that passed on one side and
#: failed on the other), a figure's paired ``difference`` from the baseline, and the
#: ``margin`` (non-inferiority) held against the pass rates' differences.
GateKind = Literal[
    "budget",
    "unmeasured",
    "cassette",
    "drift",
    "new",
    "not_run",
    "pass_rate",
    "flip",
    "difference",
    "margin",
]
#: ``fail`` fails the gate; ``pass`` is a check that held; ``info`` is shown only.
Verdict = Literal["fail", "pass", "info"]
#: A figure of a record: a count, a rate, a cost, a trajectory, a word.
Figure = int | float | str | list[str] | None

GATE_KINDS: tuple[GateKind, ...] = get_args(GateKind)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


class GateRecordDict(TypedDict):
    """The JSON of a :class:`GateRecord` (``summary.gate.records[i]`` in the report)."""

    nodeid: str | None
    kind: GateKind
    measure: str
    baseline: Figure
    now: Figure
    allowed: Figure
    interval: list[float] | None
    p_value: float | None
    verdict: Verdict
    message: str


@dataclass(frozen=True)
class GateRecord:
    """One finding of the gate (see the module's docstring for the fields).

    ``interval`` is ``(low, high)``: the confidence interval of the change (``now`` minus
    ``baseline``) where the comparison gave one; ``p_value`` the p-value of the comparison
    (the exact McNemar test of the flips for ``pass_rate``)."""

    nodeid: str | None
    kind: GateKind
    measure: str
    message: str
    verdict: Verdict = "fail"
    baseline: Figure = None
    now: Figure = None
    allowed: Figure = None
    interval: tuple[float, float] | None = None
    p_value: float | None = None

    @property
    def fails(self) -> bool:
        """Whether the record fails the gate."""
        return self.verdict == "fail"

    def to_dict(self) -> GateRecordDict:
        """The record's JSON (its fields, the interval as a list)."""
        return GateRecordDict(
            nodeid=self.nodeid,
            kind=self.kind,
            measure=self.measure,
            baseline=_copy(self.baseline),
            now=_copy(self.now),
            allowed=_copy(self.allowed),
            interval=None if self.interval is None else [self.interval[0], self.interval[1]],
            p_value=self.p_value,
            verdict=self.verdict,
            message=self.message,
        )


def _copy(value: Figure) -> Figure:
    return list(value) if isinstance(value, list) else value


def _problem(name: str, value: object, expected: str) -> ReportError:
    return ReportError(
        f"gate record: {name}={value!r}; expected {expected}. The report was not written by "
        "this pytest-agentctx: write it again with pytest --agent-report=PATH."
    )


def _figure(data: Mapping[str, object], name: str) -> Figure:
    value = data.get(name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise _problem(name, value, "a number, a text, a list of texts or null")


def _number(data: Mapping[str, object], name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _problem(name, value, "a number or null")
    return float(value)


def _interval(data: Mapping[str, object]) -> tuple[float, float] | None:
    value = data.get("interval")
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
    ):
        return float(value[0]), float(value[1])
    raise _problem("interval", value, "[low, high] or null")


def record_from_dict(data: object) -> GateRecord:
    """The :class:`GateRecord` of ``data`` (a :class:`GateRecordDict` read from a report);
    a :class:`ReportError` naming the field that is wrong."""
    if not isinstance(data, Mapping):
        raise _problem("record", data, "an object with the fields of a gate record")
    nodeid = data.get("nodeid")
    if nodeid is not None and not isinstance(nodeid, str):
        raise _problem("nodeid", nodeid, "a node id or null")
    kind = data.get("kind")
    if kind not in GATE_KINDS:
        raise _problem("kind", kind, f"one of {', '.join(GATE_KINDS)}")
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        raise _problem("verdict", verdict, f"one of {', '.join(VERDICTS)}")
    measure, message = data.get("measure"), data.get("message")
    if not isinstance(measure, str):
        raise _problem("measure", measure, "a text")
    if not isinstance(message, str):
        raise _problem("message", message, "a text")
    return GateRecord(
        nodeid=nodeid,
        kind=kind,
        measure=measure,
        message=message,
        verdict=verdict,
        baseline=_figure(data, "baseline"),
        now=_figure(data, "now"),
        allowed=_figure(data, "allowed"),
        interval=_interval(data),
        p_value=_number(data, "p_value"),
    )


def records_from_gate(gate: object) -> list[GateRecord]:
    """The records of a report's ``summary.gate`` (none when it has none: a report of an
    earlier version lists its failures as lines only)."""
    if not isinstance(gate, Mapping):
        return []
    records = gate.get("records")
    if not isinstance(records, list):
        return []
    return [record_from_dict(record) for record in records]


def failure_lines(records: Iterable[GateRecord]) -> list[str]:
    """The message of every failing record, in order: ``summary.gate.failures``."""
    return [record.message for record in records if record.fails]


def records_by_test(records: Iterable[GateRecord]) -> dict[str, list[GateRecord]]:
    """The failing records of each test, by node id (session-wide ones left out)."""
    found: dict[str, list[GateRecord]] = {}
    for record in records:
        if record.fails and record.nodeid is not None:
            found.setdefault(record.nodeid, []).append(record)
    return found


def junit_gate_properties(passed: bool, records: Sequence[GateRecord]) -> list[tuple[str, str]]:
    """The gate's JUnit XML properties (of the test suite): ``agentctx.gate`` (``passed``
    or ``failed``), then one ``agentctx.gate.record`` per failing or session-wide record,
    its JSON (sorted keys, one line)."""
    properties = [("agentctx.gate", "passed" if passed else "failed")]
    properties += [
        ("agentctx.gate.record", json.dumps(record.to_dict(), sort_keys=True))
        for record in records
        if record.fails or record.nodeid is None
    ]
    return properties
