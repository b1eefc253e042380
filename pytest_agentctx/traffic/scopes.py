"""Which active interceptors a request is offered: those of the context that makes it.

An interceptor belongs to the context it was started in (:mod:`contextvars`): a request is
offered the interceptors started in its own context or in the contexts it was copied from,
newest first. An asyncio task copies the context it is created in, so two agent runs awaited
together (``asyncio.gather``), each with its own cassette or fake model started inside it,
each get their own answers; the cassette the plugin starts for the test, in the context the
runs were created from, stays behind both.

Each context keeps a tuple of the interceptors started in it (and inherited), and this
module keeps the set of those active in the process: the interceptors offered are the
context's that are still active, so one stopped in another context (a fixture torn down in
another task) is stopped everywhere.

A thread does not inherit the context of the code that starts it (``threading.Thread``,
``ThreadPoolExecutor.submit`` and ``loop.run_in_executor`` all start the function in an
empty context; ``asyncio.to_thread`` copies the caller's). A request from a context with no
active interceptor of its own is offered the one chain of interceptors active in the process
when they form one (each started inside the one before it): what a thread of a single run
sees. When several concurrent scopes are active, such a request has no owner: :func:`offered`
gives ``None``, and the transport refuses it (:class:`~.errors.UnscopedRequest`).

A scope ends with its interceptor: work it left running (a test's task, still pending on a
session-wide event loop or a loop in a background thread, or a thread it started) must not
send its requests to the scope that runs next. A request of a context whose interceptors
have all stopped, or of a thread started inside an outermost scope that has ended (the
threads of a ``ThreadPoolExecutor``, which serve whoever submits work next, excepted), is
late: :func:`offered` gives an :class:`Ended` and the transport refuses it with
:func:`late_refusal`, which keeps it for :func:`take_late` (the test runner reports it on
the test that started the work, or when the session ends). While such a thread runs, the
transport stays patched (:func:`pending`), so its requests are refused even between tests.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pytest_agentctx.traffic.errors import UnscopedRequest

if TYPE_CHECKING:
    from pytest_agentctx.traffic.transport.wire import Handler, WireRequest


class Member(Protocol):
    """What the scopes keep of an interceptor (hashed by identity)."""

    @property
    def handler(self) -> Handler: ...

    @property
    def witness(self) -> bool: ...

    @property
    def refused(self) -> list[UnscopedRequest]: ...

    def __hash__(self) -> int: ...


#: The interceptors started in this context and the contexts it was copied from, oldest
#: first; some may have been stopped since (in another context).
_scope: contextvars.ContextVar[tuple[Member, ...]] = contextvars.ContextVar(
    "agentctx_interceptors", default=()
)

#: Each active interceptor with its chain (the context's interceptors when it started, then
#: itself), in the order they started. Changed under the transport's lock only.
_active: dict[Member, tuple[Member, ...]] = {}


class _State:
    """What a request reads, replaced whole when an interceptor starts or stops (a request
    never takes the lock): the active interceptors, and what a request of a context with
    none of its own is offered (the one chain, newest first; ``None`` when several
    concurrent scopes are active)."""

    __slots__ = ("fallback", "live")

    def __init__(self, live: frozenset[Member], fallback: tuple[Member, ...] | None) -> None:
        self.live = live
        self.fallback = fallback


_state = _State(frozenset(), ())

#: The threads alive when each active outermost interceptor started (see :func:`leave`).
_threads_before: dict[Member, weakref.WeakSet[threading.Thread]] = {}
#: The threads started in an outermost scope that ended while they still ran, each with
#: that scope's interceptor: their requests are late.
_orphans: weakref.WeakKeyDictionary[threading.Thread, Member] = weakref.WeakKeyDictionary()
#: The late requests refused and not yet taken (:func:`take_late`), oldest first.
_late: list[Late] = []
_late_lock = threading.Lock()
#: The threads marked as serving every scope (:func:`serving`).
_serving: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@dataclass(frozen=True)
class Ended:
    """What :func:`offered` gives for a late request: the interceptor whose scope the work
    that made it belongs to, stopped since."""

    owner: Member


@dataclass(frozen=True)
class Late:
    """A late request refused: the test (or interceptor) whose work sent it, and the
    error raised into that work."""

    owner: str
    test_id: str
    error: UnscopedRequest


def enter(member: Member) -> bool:
    """Start ``member`` in the current context; returns whether it is the first active one.
    Call it under the transport's lock."""
    first = not _active
    # The context's stopped interceptors are dropped here: a long-lived context (the main
    # thread's, where every test's cassette starts) does not keep them all.
    chain = (*(m for m in _scope.get() if m in _active), member)
    _active[member] = chain
    _scope.set(chain)
    if len(chain) == 1:  # an outermost scope: the threads it starts are its own
        _threads_before[member] = weakref.WeakSet(threading.enumerate())
    _refresh()
    return first


def leave(member: Member) -> bool:
    """Stop ``member``, from any context; returns whether none is active any more. Call it
    under the transport's lock."""
    _active.pop(member, None)
    own = _scope.get()
    if member in own:  # stopped in its own context (or one copied from it): drop it there
        _scope.set(tuple(m for m in own if m is not member))
    before = _threads_before.pop(member, None)
    if before is not None:
        _adopt_orphans(member, before)
    _refresh()
    return not _active


def _adopt_orphans(member: Member, before: weakref.WeakSet[threading.Thread]) -> None:
    """The threads started while ``member`` (an outermost scope) was active and still
    running now it stopped are its orphans. Threads that serve whoever asks are not: a
    pool's workers (they run whatever is submitted next, and a submission carries no
    context) and a threading server's request threads (they answer a connection)."""
    me = threading.current_thread()
    for thread in threading.enumerate():
        if thread in before or thread is me or thread in _orphans or _serves(thread):
            continue
        _orphans[thread] = member


def serving(thread: threading.Thread) -> threading.Thread:
    """Mark ``thread`` (not started yet) as one that serves every scope, never the work of
    one: a server of the package (the child guard's listener, a loopback provider). Its
    requests are never late, and it keeps no transport patched. Returns ``thread``."""
    _serving.add(thread)
    return thread


def _serves(thread: threading.Thread) -> bool:
    """Whether ``thread`` serves whoever asks: marked so (:func:`serving`), a
    ``ThreadPoolExecutor`` worker or a request thread of a ``socketserver.ThreadingMixIn``
    server."""
    import concurrent.futures.thread as pool
    import socketserver

    if thread in _serving:
        return True
    target = getattr(thread, "_target", None)
    if target is getattr(pool, "_worker", None):
        return True
    return getattr(target, "__func__", None) is socketserver.ThreadingMixIn.process_request_thread


def pending() -> bool:
    """Whether the transport stays patched when its last interceptor stops, to refuse the
    requests of work an ended scope left: while the patches are held (:func:`hold`) or a
    thread an ended scope left running is still alive."""
    return _held or any(thread.is_alive() for thread in list(_orphans))


#: Whether the transport keeps its patches when its last interceptor stops (:func:`hold`).
_held = False


def hold() -> None:
    """Keep the transport patched when its last interceptor stops, until
    :func:`forget_orphans`: a task an ended scope left pending (on a session-wide event
    loop) then has its requests refused as late while a test that intercepts nothing
    runs, where unpatched they would be sent. A pytest session holds from its first test
    that intercepts requests to its end; a request of no scope passes through as it would
    unpatched."""
    global _held
    _held = True


def forget_orphans() -> None:
    """Forget the threads ended scopes left running, and stop holding the patches
    (:func:`hold`): the session that could report their requests ended (a test run inside
    another keeps none of its threads in the outer)."""
    global _held
    _held = False
    _orphans.clear()


def _refresh() -> None:
    global _state
    if not _active:
        _state = _State(frozenset(), ())
        return
    # They form one chain when the newest one's chain holds every active interceptor (the
    # newest is the innermost: one started inside another starts after it).
    newest = _active[next(reversed(_active))]
    chain = tuple(m for m in newest if m in _active)
    fallback = tuple(reversed(chain)) if len(chain) == len(_active) else None
    _state = _State(frozenset(_active), fallback)


def offered() -> tuple[Member, ...] | Ended | None:
    """The active interceptors a request made now is offered, newest first: the current
    context's, else the one chain active in the process (see the module docstring);
    ``None`` when the context has none and several concurrent scopes are active; an
    :class:`Ended` when the request is late (its context's interceptors all stopped, or
    its thread outlived the scope it was started in)."""
    state = _state
    own = _scope.get()
    if own:
        live = state.live
        mine = tuple(m for m in reversed(own) if m in live)
        if mine:
            return mine
        return Ended(own[-1])
    if _orphans:
        owner = _orphans.get(threading.current_thread())
        if owner is not None:
            return Ended(owner)
    return state.fallback


def scopes() -> list[tuple[Member, ...]]:
    """The concurrent scopes active now: for each active interceptor no other was started
    inside of, its chain of active interceptors, oldest first."""
    live = _state.live
    chains = [tuple(m for m in chain if m in live) for chain in list(_active.values())]
    return [c for c in chains if not any(c != o and o[: len(c)] == c for o in chains)]


def refusal(request: WireRequest) -> UnscopedRequest:
    """The error refusing ``request``, made in a context that no active interceptor belongs
    to while several concurrent scopes are active: which should answer it cannot be told,
    and it must not reach the network. Every active interceptor keeps it (``refused``), so
    the test fails even if the client swallows the error."""
    from pytest_agentctx.redaction.active import active

    chains = scopes()
    runs = "; ".join(" > ".join(_label(m) for m in chain) for chain in chains)
    message = (
        f"pytest-agentctx did not send {request.method} {request.url}: it was made in a "
        "context where no interceptor was started (a thread started without the context "
        f"of a run), while {len(chains)} concurrent runs each have their own ({runs}). "
        "Which of them should answer it cannot be told, and it must not reach the network. "
        "threading.Thread, ThreadPoolExecutor.submit and loop.run_in_executor start a "
        "function without the caller's context; asyncio.to_thread carries it. Run the work "
        "inside its run's scope: await asyncio.to_thread(fn), "
        "executor.submit(contextvars.copy_context().run, fn), or start the run's cassette "
        "or fake model in the thread (see 'Concurrent runs' in docs/cassettes.md)."
    )
    redactor = active()
    error = UnscopedRequest(redactor.text(message) if redactor is not None else message)
    for member in {m: None for chain in chains for m in chain}:
        member.refused.append(error)
    return error


def late_refusal(request: WireRequest, ended: Ended) -> UnscopedRequest:
    """The error refusing ``request``, made by work (a task, a thread) of the scope of
    ``ended.owner`` after that scope ended: it must not reach the network, nor be recorded
    into (or answered from) the scope running now. It is kept for :func:`take_late`."""
    from pytest_agentctx.redaction.active import active

    owner = getattr(ended.owner.handler, "__self__", None)
    test_id = str(getattr(owner, "test_id", "") or "")
    label = _label(ended.owner)
    started = f"test {test_id} ({label})" if test_id else label
    message = (
        f"pytest-agentctx did not send {request.method} {request.url}: it was made by work "
        f"that {started} started (an asyncio task or a thread) after that test's scope "
        "ended. A test's scope ends with the test: a request made later must not reach "
        "the network, nor land in the cassette of the test running then. Await or cancel "
        "the tasks a test starts and join its threads before it returns (a fixture's "
        f"teardown can), then run the tests again: pytest '{test_id or '<the test>'}'."
    )
    redactor = active()
    error = UnscopedRequest(redactor.text(message) if redactor is not None else message)
    with _late_lock:
        _late.append(Late(label, test_id, error))
    return error


def take_late(test_id: str | None = None) -> list[Late]:
    """The late requests refused since last asked, oldest first, removed from the list:
    all of them, or those of the test ``test_id``."""
    with _late_lock:
        taken = [late for late in _late if test_id is None or late.test_id == test_id]
        _late[:] = [late for late in _late if all(late is not t for t in taken)]
    return taken


def _label(member: Member) -> str:
    """A short name of what an interceptor answers for: ``Cassette /path/run.json``,
    ``FakeLLM``, else its handler."""
    owner = getattr(member.handler, "__self__", None)
    if owner is None:
        return str(getattr(member.handler, "__qualname__", member.handler))
    path = getattr(owner, "path", None)
    return f"{type(owner).__name__} {path}" if path is not None else type(owner).__name__
