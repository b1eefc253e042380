"""The integration-last scheduler's worker wrapper: a steal sent to a worker that has
crashed, before xdist has heard of it, does not end the session."""

from __future__ import annotations

from typing import Any

from pytest_agentctx.plugin.suites._scheduling import _Worker


class GoneNode:
    """An xdist node whose pipe is closed: every command fails as execnet's does."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def send_steal(self, indices: list[int]) -> None:
        self.asked.append(indices)
        raise OSError("cannot send (already closed?)")


def test_a_steal_from_a_crashed_worker_is_dropped_not_raised():
    node = GoneNode()
    worker = _Worker(owner=None, node=node)  # type: ignore[arg-type]
    worker.collect([7, 9, 11])

    worker.send_steal([1, 2])

    assert node.asked == [[9, 11]]


def test_a_steal_is_sent_with_the_real_indices():
    sent: list[Any] = []

    class Node:
        def send_steal(self, indices: list[int]) -> None:
            sent.append(indices)

    worker = _Worker(owner=None, node=Node())  # type: ignore[arg-type]
    worker.collect([3, 4])

    worker.send_steal([0])

    assert sent == [[3]]
