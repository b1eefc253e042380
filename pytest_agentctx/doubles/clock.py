"""Time and ids, injected rather than patched.

The runtime never reads the wall clock or a random generator directly: it asks the
:class:`Clock` and the :class:`IdFactory` it was given. Under test both are deterministic:
:class:`~pytest_agentctx.context.clock.StepClock` (in the context layer, since captures of
traffic use it too) advances by a fixed step on every read and :class:`SequentialIds`
counts, so two runs of the same agent produce byte-identical contexts. The plugin's clock
options are read in the context layer
(:class:`~pytest_agentctx.context.clock.ClockSettings`).
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    pass

__all__ = [
    "Clock",
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
