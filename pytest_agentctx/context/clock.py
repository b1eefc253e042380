"""The clocks that stamp a context's iterations: the :class:`Clock` protocol, the
deterministic :class:`StepClock`, the :class:`SystemClock`, the instant they start at
(:data:`DEFAULT_START`, :func:`parse_datetime`) and the plugin's clock options
(:class:`ClockSettings`).

The runtime never reads the wall clock directly: it asks the :class:`Clock` it was given.
Under test that is a :class:`StepClock`, which starts at a given instant and moves a fixed
step forward on every read, so two runs of the same agent, or two captures of the same
traffic, give the same timestamps. The ids the runtime is given are in
:mod:`pytest_agentctx.doubles.ids`; freezing the wall clock that user code reads
(``datetime.now()``) is :mod:`pytest_agentctx.doubles.freeze`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple, Protocol, runtime_checkable

#: The instant a deterministic clock starts at unless told otherwise.
DEFAULT_START = datetime(2025, 1, 1, tzinfo=UTC)


@runtime_checkable
class Clock(Protocol):
    """Anything with a ``now()`` that returns an aware :class:`datetime`."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class StepClock:
    """A clock that starts at ``start`` and moves ``step`` forward on every read.

    The first read returns ``start``. Reads are thread-safe, so concurrent tool calls
    still get distinct, ordered instants.
    """

    def __init__(
        self, start: datetime = DEFAULT_START, step: timedelta = timedelta(seconds=1)
    ) -> None:
        if start.tzinfo is None:
            raise ValueError(
                f"StepClock(start={start!r}) needs an aware datetime; give it a timezone, "
                "for example datetime(2025, 1, 1, tzinfo=UTC)."
            )
        if step < timedelta(0):
            raise ValueError(f"StepClock(step={step!r}) must not go backwards; use a step >= 0.")
        self.start = start
        self.step = step
        self._reads = 0
        self._lock = threading.Lock()

    @property
    def reads(self) -> int:
        """How many times :meth:`now` has been called."""
        return self._reads

    def now(self) -> datetime:
        with self._lock:
            value = self.start + self.step * self._reads
            self._reads += 1
        return value

    def __repr__(self) -> str:
        return f"StepClock(start={self.start.isoformat()}, step={self.step}, reads={self._reads})"


def parse_datetime(value: str | datetime, *, what: str = "a datetime") -> datetime:
    """Parse an ISO 8601 instant; a naive one is taken as UTC."""
    if isinstance(value, datetime):
        parsed = value
    else:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"{what}: {value!r} is not an ISO 8601 date and time; expected something "
                "like '2025-01-01T00:00:00Z'."
            ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class ClockSettings(NamedTuple):
    """The plugin's clock options: where the clocks start, the step, frozen_clock's ignore.

    A named tuple, not a dataclass: the plugin reads it at start-up, and a dataclass costs
    every pytest run the compiling of its generated methods."""

    start: datetime
    step: timedelta
    ignore: tuple[str, ...]

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
