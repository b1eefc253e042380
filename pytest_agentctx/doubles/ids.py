"""Ids, injected rather than random: the :class:`IdFactory` protocol, :class:`SequentialIds`
(deterministic, for tests) and :class:`RandomIds` (as providers make them).

The runtime never calls a random generator for an id: it asks the id factory it was given,
so two runs of the same agent under :class:`SequentialIds` produce byte-identical contexts.
The clocks the runtime is given are in :mod:`pytest_agentctx.context.clock`.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from typing import Protocol, runtime_checkable


@runtime_checkable
class IdFactory(Protocol):
    """Makes a new id with the given prefix, such as ``call`` or ``run``."""

    def __call__(self, prefix: str) -> str: ...


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
