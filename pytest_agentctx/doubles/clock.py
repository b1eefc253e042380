"""Time and ids, injected rather than patched.

The runtime never reads the wall clock or a random generator directly: it asks the
:class:`Clock` and the :class:`IdFactory` it was given. Under test both are deterministic:
:class:`~pytest_agentctx.context.clock.StepClock` (in the context layer, since captures of
traffic use it too) advances by a fixed step on every read and :class:`SequentialIds`
counts, so two runs of the same agent produce byte-identical contexts. The plugin's clock
options are read here (:class:`ClockSettings`).
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pytest_agentctx.context.clock import parse_datetime

if TYPE_CHECKING:
    import pytest

__all__ = [
    "Clock",
    "ClockSettings",
    "IdFactory",
    "RandomIds",
    "SequentialIds",
    "SystemClock",
]


@runtime_checkable
class Clock(Protocol):
    """Anything with a ``now()`` that returns an aware :class:`datetime`."""

    def now(self) -> datetime: ...


@runtime_checkable
class IdFactory(Protocol):
    """Makes a new id with the given prefix, such as ``call`` or ``run``."""

    def __call__(self, prefix: str) -> str: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class SequentialIds:
    """Ids counted per prefix: ``call_1``, ``call_2``, ``run_1``..."""

    def __init__(self) -> None:
        self._counters: defaultdict[str, itertools.count[int]] = defaultdict(
            lambda: itertools.count(1)
        )
        self._lock = threading.Lock()

    def __call__(self, prefix: str) -> str:
        with self._lock:
            number = next(self._counters[prefix])
        return f"{prefix}_{number}"

    def __repr__(self) -> str:
        return "SequentialIds()"


class RandomIds:
    """Random ids, as providers make them: ``call_`` plus 24 hex digits."""

    def __call__(self, prefix: str) -> str:
        import uuid

        return f"{prefix}_{uuid.uuid4().hex[:24]}"

    def __repr__(self) -> str:
        return "RandomIds()"


@dataclass(frozen=True)
class ClockSettings:
    """The plugin's clock options: where the clocks start, the step, frozen_clock's ignore."""

    start: datetime
    step: timedelta
    ignore: tuple[str, ...]

    @classmethod
    def from_config(cls, config: pytest.Config) -> ClockSettings:
        """The settings of a pytest session: ``--agent-clock-start`` over the ``agent_clock_*``
        ini options; a value that cannot be read raises ``ValueError``."""
        return cls.build(
            start=str(config.getoption("agent_clock_start") or config.getini("agent_clock_start")),
            step=str(config.getini("agent_clock_step")),
            ignore=(str(line) for line in config.getini("agent_clock_ignore")),
        )

    @classmethod
    def build(cls, *, start: str, step: str, ignore: Iterable[str]) -> ClockSettings:
        """Read the option values; a value that cannot be read raises ``ValueError``."""
        parsed = parse_datetime(start, what="agent_clock_start")
        try:
            seconds = float(step)
            delta = timedelta(seconds=seconds)  # refuses nan, inf and overflowing values
        except (ValueError, OverflowError):
            raise ValueError(
                f"agent_clock_step = {step!r} is not a number of seconds; "
                "set it to e.g. 1 or 0.5 in your pytest configuration."
            ) from None
        if seconds < 0:
            raise ValueError(
                f"agent_clock_step = {step!r} must not be negative; "
                "set it to e.g. 1 or 0.5 in your pytest configuration."
            )
        return cls(parsed, delta, tuple(ignore))
