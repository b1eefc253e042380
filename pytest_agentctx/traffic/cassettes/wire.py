"""The body of a live response being recorded, as the cassette finishes it.

The request and the response themselves are the transport's protocols (see
:mod:`pytest_agentctx.traffic.transport.wire`).
"""

from __future__ import annotations

from typing import Protocol


class LiveStream(Protocol):
    """The body of a live response being recorded (a teed stream), which the cassette
    finishes when the agent never closed it."""

    def finish(self, *, seconds: float, max_bytes: int) -> bool: ...
