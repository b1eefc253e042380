"""Which recorded interactions a test replays, in which order, for which request.

A test's own cassette: every interaction, in the order of the file. A cassette shared by
several tests (the rules are in :mod:`.session`): the test's own interactions first, then
those of no known test; and when the test has none of its own and only replays, the other
tests' interactions too, but for the requests that several tests recorded with different
answers (:attr:`Replays.ambiguous`).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable

from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import RequestKey


class Replays:
    """The recordings of ``loaded`` (whose request keys are ``keys``) that the test
    ``test_id`` may replay in ``mode``, queued by request key."""

    def __init__(
        self,
        loaded: list[Interaction],
        keys: list[RequestKey],
        *,
        test_id: str,
        shared: bool,
        mode: RecordMode,
    ) -> None:
        self.loaded = loaded
        self.keys = keys
        self.test_id = test_id
        self.shared = shared
        self.mode = mode
        #: Requests that only other tests recorded, with different answers (shared cassette,
        #: test with no interaction of its own): the test ids, for the miss message.
        self.ambiguous: dict[RequestKey, list[str]] = {}
        #: Positions in ``loaded`` this test may replay, in the order it prefers them.
        self.order = self._order()
        self.index: dict[RequestKey, deque[int]] = {}
        for position in self.order:
            self.index.setdefault(self.keys[position], deque()).append(position)
        #: Positions :meth:`take_first` gave (vcrpy's matching, ``match_on``).
        self.taken: set[int] = set()

    def take(self, key: RequestKey) -> int | None:
        """The position of the next unused recording of ``key``, now used; ``None`` when
        there is none left (the caller holds the cassette's lock)."""
        queue = self.index.get(key)
        return queue.popleft() if queue else None

    def take_first(self, accepts: Callable[[int], bool]) -> int | None:
        """The position of the first recording, in the order the test prefers them, not
        given yet that ``accepts`` (vcrpy's matching), now given; ``None`` when there is
        none (the caller holds the cassette's lock)."""
        for position in self.order:
            if position not in self.taken and accepts(position):
                self.taken.add(position)
                return position
        return None

    def _order(self) -> list[int]:
        """The positions of ``loaded`` this test replays, preferred first."""
        if not self.shared:
            return list(range(len(self.loaded)))
        mine = self.test_id
        own = [p for p, i in enumerate(self.loaded) if mine and i.test_id == mine]
        anyones = [p for p, i in enumerate(self.loaded) if not i.test_id]
        if own or self.mode is not RecordMode.NONE:
            # Recording modes never stand in another test's recording for this one's: what
            # it does not have, it records, so that it replays on its own afterwards.
            return own + anyones
        others = [p for p, i in enumerate(self.loaded) if i.test_id and i.test_id != mine]
        return anyones + self._unambiguous(others)

    def _unambiguous(self, positions: list[int]) -> list[int]:
        """``positions`` but for the requests that several tests recorded with different
        answers (noted in ``ambiguous``)."""
        by_key: dict[RequestKey, list[int]] = {}
        for position in positions:
            by_key.setdefault(self.keys[position], []).append(position)
        dropped: set[int] = set()
        for key, group in by_key.items():
            tests = sorted({self.loaded[p].test_id for p in group})
            answers = {_answer_of(self.loaded[p]) for p in group}
            if len(tests) > 1 and len(answers) > 1:
                self.ambiguous[key] = tests
                dropped.update(group)
        return [p for p in positions if p not in dropped]


def _answer_of(interaction: Interaction) -> tuple[int, str]:
    """A recorded response, comparable and hashable: its status and its body's JSON."""
    return interaction.status, json.dumps(interaction.response_body, sort_keys=True)
