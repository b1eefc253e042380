"""The xdist scheduler wrapper that starts the integration tests once every unit test has
ended (:class:`IntegrationLast`), and the lists of integration tests its workers write.

xdist's load schedulers hand the collection out in chunks, so a worker that ran out of unit
tests takes an integration test while another worker still runs unit tests, whatever order
the collection has. :class:`IntegrationLast` wraps the scheduler xdist made for the session
(``load`` or ``worksteal``, :data:`WRAPPED`):

* the scheduler it wraps sees the unit tests only (every test but the sorted integration
  tests), through :class:`_Worker` stand-ins that translate test indices;
* the integration tests are held. An xdist worker runs a test only once it knows the next
  one (or is told to stop), so the first worker the scheduler would stop is kept instead
  (the *spare*): it waits on its last unit test. When every other unit test has ended, the
  held tests go to the spare, in collection order, then it is told to stop, and so is every
  other worker: the spare's last unit test ends before its first integration test starts;
* a worker that crashes gives its unfinished integration tests back to the held ones, and
  they go to the worker that replaces it. A session that stops (``-x``, ``--maxfail``)
  stops its workers as xdist does: the held tests do not run.

The controller does not collect: each worker writes the indices of its integration tests
to a file of the run (:func:`write_integration`) before it reports its collection, and
the scheduler reads it (:func:`read_integration`) when that report comes in.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pytest

#: The ``--dist`` modes whose scheduler is wrapped. Not ``each`` (every test on every
#: worker), nor the scope modes (``loadscope``, ``loadfile``, ``loadgroup``): when a worker
#: crashes, their schedulers send the test that crashed it again, to the next worker, until
#: xdist's restarts run out, and holding tests meanwhile can leave no worker to end on.
WRAPPED = ("load", "worksteal")
#: xdist's schedulers of those modes, by class name: another plugin's scheduler is kept as is.
_WRAPPED_CLASSES = {"LoadScheduling", "WorkStealingScheduling"}


class WorkerNode(Protocol):
    """An xdist worker as ``pytest_configure_node`` gets it: what the plugin tells it."""

    workerinput: dict[str, object]
    config: pytest.Config


class _Gateway(Protocol):
    @property
    def id(self) -> str: ...


class Node(Protocol):
    """An xdist worker as its scheduler uses it (xdist's ``WorkerController``)."""

    @property
    def gateway(self) -> _Gateway: ...

    @property
    def shutting_down(self) -> bool: ...

    def send_runtest_some(self, indices: Sequence[int]) -> None: ...

    def send_steal(self, indices: Sequence[int]) -> None: ...

    def shutdown(self) -> None: ...


class Scheduling(Protocol):
    """xdist's ``Scheduling`` protocol: what the controller asks of its scheduler."""

    @property
    def nodes(self) -> Sequence[Node]: ...

    @property
    def collection_is_completed(self) -> bool: ...

    @property
    def tests_finished(self) -> bool: ...

    @property
    def has_pending(self) -> bool: ...

    def add_node(self, node: Node) -> None: ...

    def add_node_collection(self, node: Node, collection: Sequence[str]) -> None: ...

    def mark_test_complete(self, node: Node, item_index: int, duration: float = 0) -> None: ...

    def mark_test_pending(self, item: str) -> None: ...

    def remove_pending_tests_from_node(self, node: Node, indices: Sequence[int]) -> None: ...

    def remove_node(self, node: Node) -> str | None: ...

    def schedule(self) -> None: ...


def integration_file(run_id: str, worker_id: str, *, writer: bool = False) -> Path:
    """The file where worker ``worker_id`` of the xdist run ``run_id`` lists its integration
    tests (in the run's folder of the temp dir, removed when the session ends)."""
    from pytest_agentctx.traffic.cassettes.runs import run_file

    return run_file(run_id, f"integration-{worker_id}.json", writer=writer)


def write_integration(path: Path, nodeids: Sequence[str], integration: Sequence[int]) -> None:
    """Write which of the collected tests ``nodeids`` are integration tests (their indices)."""
    from pytest_agentctx._files import atomic_write_text

    document = {"nodeids": list(nodeids), "integration": list(integration)}
    atomic_write_text(path, json.dumps(document))


def read_integration(path: Path, collection: Sequence[str], worker_id: str) -> frozenset[int]:
    """The indices of the integration tests in the ``collection`` worker ``worker_id``
    reported, from the file it wrote (:func:`write_integration`). A missing file, or one
    written for another collection, is an error that says what to do."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeError(
            f"pytest-agentctx: the xdist worker {worker_id} did not list its integration tests "
            f"in {path} ({exc}); expected the file it writes once it has collected. Run pytest "
            "again; if it happens again, run with -p no:xdist (one process) and report it."
        ) from None
    if document.get("nodeids") != list(collection):
        raise RuntimeError(
            f"pytest-agentctx: {path} lists {len(document.get('nodeids', []))} tests, the xdist "
            f"worker {worker_id} reported {len(collection)} other ones; expected the same "
            "collection. Run pytest again, or with -p no:xdist (one process)."
        )
    return frozenset(int(index) for index in document["integration"])


class _Worker:
    """A worker as the wrapped scheduler sees it: the unit tests only, numbered anew; its
    requests to stop go to :meth:`IntegrationLast._stop_asked`."""

    def __init__(self, owner: IntegrationLast, node: Node) -> None:
        self._owner = owner
        self.node = node
        #: the real index of each of the scheduler's (the unit tests of the collection)
        self.real: list[int] = []
        self.inner: dict[int, int] = {}
        self.collected = False

    def collect(self, unit: list[int]) -> None:
        self.collected = True
        self.real = unit
        self.inner = {real: index for index, real in enumerate(unit)}

    def __getattr__(self, name: str) -> object:  # workerinfo, ...: the worker's
        return getattr(self.node, name)

    @property
    def gateway(self) -> _Gateway:
        return self.node.gateway

    def __repr__(self) -> str:
        return repr(self.node)

    @property
    def shutting_down(self) -> bool:
        return bool(self.node.shutting_down)

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        self._owner._send(self.node, [self.real[i] for i in indices])

    def send_steal(self, indices: Sequence[int]) -> None:
        # A worker that is gone (it crashed, its pipe is closed) before xdist has heard of
        # it: its tests go back to the others when xdist does (the scheduler's
        # remove_node), as without a steal. xdist's worksteal would end the session with an
        # internal error here instead.
        with contextlib.suppress(OSError):
            self.node.send_steal([self.real[i] for i in indices])

    def shutdown(self) -> None:
        self._owner._stop_asked(self.node)


class IntegrationLast:
    """xdist's scheduler ``inner``, with the integration tests held until every unit test
    has ended (see the module's docstring). It implements xdist's ``Scheduling`` protocol."""

    def __init__(self, inner: Scheduling, run_id: str) -> None:
        self.inner = inner
        self.run_id = run_id
        self.workers: dict[Node, _Worker] = {}
        #: real indices sent to each worker that has not ended them, in the order sent
        self.pending: dict[Node, list[int]] = {}
        self.collection: list[str] | None = None
        self.integration: frozenset[int] = frozenset()
        self.held: list[int] = []
        #: the unit tests not ended yet (a test that crashed its worker has ended)
        self.outstanding: set[int] = set()
        self.spare: Node | None = None
        self.started = self.released = False

    # -- the Scheduling protocol ----------------------------------------------------

    @property
    def nodes(self) -> list[Node]:
        return list(self.pending)

    @property
    def collection_is_completed(self) -> bool:
        return bool(self.inner.collection_is_completed)

    @property
    def tests_finished(self) -> bool:
        if self.held or (self.integration and not self.released):
            return False
        return bool(self.inner.tests_finished)

    @property
    def has_pending(self) -> bool:
        return bool(self.held) or any(self.pending.values()) or bool(self.inner.has_pending)

    def add_node(self, node: Node) -> None:
        # The wrapped scheduler gets the worker with its collection (add_node_collection):
        # xdist's scope schedulers would hand work to a worker that has not collected yet.
        self.workers[node] = _Worker(self, node)
        self.pending[node] = []

    def add_node_collection(self, node: Node, collection: Sequence[str]) -> None:
        integration = read_integration(
            integration_file(self.run_id, node.gateway.id), collection, node.gateway.id
        )
        if self.collection is not None and integration != self.integration:
            raise RuntimeError(
                f"pytest-agentctx: the xdist worker {node.gateway.id} found "
                f"{len(integration)} integration tests, the first worker "
                f"{len(self.integration)}; expected the same tests on every worker. Run "
                "pytest again, or with -p no:xdist (one process)."
            )
        unit = [index for index in range(len(collection)) if index not in integration]
        worker = self.workers[node]
        worker.collect(unit)
        if self.collection is None:
            self.collection, self.integration = list(collection), integration
        if getattr(self.inner, "collection", None) == []:
            return  # no unit test: xdist's schedulers take no later worker then
        self.inner.add_node(worker)
        self.inner.add_node_collection(worker, [collection[index] for index in unit])

    def schedule(self) -> None:
        if not self.started and self.collection is not None:
            self.started = True
            self.held = sorted(self.integration)
            self.outstanding = set(range(len(self.collection))) - self.integration
        self.inner.schedule()
        self._release_when_done()

    def mark_test_complete(self, node: Node, item_index: int, duration: float = 0) -> None:
        self.pending[node].remove(item_index)
        if item_index not in self.integration:
            self.outstanding.discard(item_index)
            worker = self.workers[node]
            self.inner.mark_test_complete(worker, worker.inner[item_index], duration)
        self._release_when_done()

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        index = self.collection.index(item)
        if index in self.integration:
            self.held.insert(0, index)
        else:
            self.outstanding.add(index)
            self.inner.mark_test_pending(item)
        self._release_when_done()

    def remove_pending_tests_from_node(self, node: Node, indices: Sequence[int]) -> None:
        worker = self.workers[node]
        for index in indices:
            self.pending[node].remove(index)
        self.inner.remove_pending_tests_from_node(worker, [worker.inner[i] for i in indices])
        self._release_when_done()

    def remove_node(self, node: Node) -> str | None:
        pending = self.pending.pop(node)
        worker = self.workers.pop(node)
        if self.spare is node:
            self.spare = None
        crashed = pending[0] if pending else None
        if crashed is not None:
            self.outstanding.discard(crashed)  # xdist reports it failed: it has ended
        # the integration tests it had not started are held again, in their order
        self.held[:0] = [index for index in pending[1:] if index in self.integration]
        if worker in self.inner.nodes:
            self.inner.remove_node(worker)
        self._release_when_done()
        return None if crashed is None or self.collection is None else self.collection[crashed]

    # -- holding and releasing ------------------------------------------------------

    def _send(self, node: Node, indices: list[int]) -> None:
        if indices:
            self.pending[node].extend(indices)
            node.send_runtest_some(indices)

    def _stop_asked(self, node: Node) -> None:
        """The wrapped scheduler has no more unit tests for ``node``: the first such worker
        is kept while integration tests are held (the spare), the others stop."""
        if self.held and self.spare in (None, node):
            self.spare = node
        else:
            node.shutdown()

    def _release_when_done(self) -> None:
        """Send the held integration tests once every unit test has ended but the last one
        of the worker they go to, which waits for its next test to start."""
        if not self.held or self.collection is None:
            return
        target = self._target()
        if target is None:
            return
        held, self.held = self.held, []
        self._send(target, held)
        self.released, self.spare = True, None
        for node in self.pending:
            if not node.shutting_down:
                node.shutdown()

    def _target(self) -> Node | None:
        """The worker to run the held tests: the spare, or else a worker that has collected
        and is not stopping, if the unit tests not ended are (at most) its last one."""
        if len(self.outstanding) > 1:
            return None
        candidates = [self.spare] if self.spare is not None else []
        candidates += [node for node in self.pending if node is not self.spare]
        for node in candidates:
            usable = self.workers[node].collected and not node.shutting_down
            if usable and self.outstanding <= set(self.pending[node]):
                return node
        return None


_classes: dict[str, type[IntegrationLast]] = {}


def wrap_scheduler(inner: Scheduling, run_id: str) -> Scheduling:
    """``inner`` held by :class:`IntegrationLast` when it is one of xdist's load
    schedulers (:data:`WRAPPED`), else ``inner`` itself. The wrapper bears the name of the
    class it wraps, which xdist prints (``scheduling tests via LoadScheduling``)."""
    name = type(inner).__name__
    if name not in _WRAPPED_CLASSES:
        return inner
    cls = _classes.setdefault(name, type(name, (IntegrationLast,), {"__module__": __name__}))
    return cls(inner, run_id)
