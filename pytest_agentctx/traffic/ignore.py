"""The ignored hosts: requests that no cassette, fake model or capture ever sees.

An entry (of the ini option ``agent_ignore_hosts``, of ``@pytest.mark.agent(ignore_hosts=
[...])``, of ``ignore_hosts`` in ``agent_cassette_config``) is a host name
(``huggingface.co``), a wildcard of its sub-domains (``*.example.com``, which
``example.com`` itself does not match), an address (``127.0.0.1``, ``::1`` or ``[::1]``),
or one of these followed by a path prefix (``huggingface.co/api/models``, which matches
``/api/models`` and what lies below it, ``/api/models/gpt2``, not ``/api/modelsx``). Host
names are compared without case; the port and the scheme are never compared.
:func:`entry_problem` says why an entry is wrong, with a right one.

The session's entries apply at all times (:func:`use_session`): a framework's background
thread may send between tests or after the test that started it ended. A test's own apply
while it runs (:func:`during_test`), to every request of the process. The transport
(:mod:`pytest_agentctx.traffic.transport.dispatch`) asks :func:`matching` before offering a
request to any handler; a request that matches is sent through the client's own code when
it may reach the network, else the client gets its connection error and the request is
kept here (:func:`note_not_sent`, :func:`take_not_sent`) to be listed.

Light: the plugin's start-up reads the entries through this module, which imports nothing
of the HTTP libraries.
"""

from __future__ import annotations

import contextlib
import ipaddress
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

#: Where each list of entries comes from, as the messages name it.
SESSION_SOURCE = "agent_ignore_hosts"
TEST_SOURCE = "the test's ignore_hosts"


@dataclass(frozen=True)
class IgnoreRule:
    """One checked entry: a host (lowercase; an address in its compressed form; ``*.``
    and a domain for a wildcard) and a path prefix (``""``: every path)."""

    entry: str
    host: str
    path: str = ""
    source: str = SESSION_SOURCE

    def matches(self, host: str, path: str) -> bool:
        """Whether a request to ``host`` (as a URL gives it, without port) for ``path``
        is ignored by this entry."""
        name = _normal_host(host)
        if self.host.startswith("*."):
            if not name.endswith(self.host[1:]):
                return False
        elif name != self.host:
            return False
        if not self.path:
            return True
        prefix = self.path.rstrip("/")
        return not prefix or path == prefix or path.startswith(prefix + "/")


def _normal_host(host: str) -> str:
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


def _split(entry: str) -> tuple[str, str]:
    """The host and the path (``""``, or from its ``/``) of a stripped entry."""
    if entry.startswith("["):  # [::1] or [::1]/path
        end = entry.find("]")
        if end != -1:
            return entry[: end + 1], entry[end + 1 :]
    host, slash, path = entry.partition("/")
    return host, slash + path


def entry_problem(entry: object) -> str | None:
    """Why ``entry`` cannot be an ignored host, with a right one, or ``None``."""
    if not isinstance(entry, str):
        return f"is {type(entry).__name__} {entry!r}, not a string"
    text = entry.strip()
    if not text:
        return "is empty"
    if any(ch.isspace() for ch in text):
        return "has spaces: give one host per entry"
    if "://" in text:
        rest = text.split("://", 1)[1]
        return f"is a URL: give the host and a path without the scheme, e.g. {rest!r}"
    if "?" in text or "#" in text:
        bare = text.split("?", 1)[0].split("#", 1)[0]
        return f"has a query or a fragment: give a path prefix only, e.g. {bare!r}"
    host, path = _split(text)
    if path and not path.startswith("/"):  # [::1]:8080
        return f"has a port: ports are not compared, give the host alone, e.g. {host!r}"
    if not host:
        return "has no host before its path: start with the host, e.g. 'api.example.com/v1'"
    bare_host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare_host and not _is_address(bare_host):
        name = bare_host.rsplit(":", 1)[0] if bare_host.count(":") == 1 else bare_host
        return f"has a port: ports are not compared, give the host alone, e.g. {name!r}"
    if host.startswith("[") and not _is_address(bare_host):
        return f"has brackets around {bare_host!r}, which is not an IPv6 address"
    if "*" in bare_host and (not bare_host.startswith("*.") or "*" in bare_host[2:]):
        tail = bare_host.replace("*", "").lstrip(".") or "example.com"
        return (
            f"has a wildcard other than a leading '*.': write '*.{tail}' for its sub-domains "
            f"or {tail!r} for the host itself"
        )
    return None


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def parse(entries: Iterable[str], *, source: str = SESSION_SOURCE) -> tuple[IgnoreRule, ...]:
    """The rules of checked ``entries`` (see :func:`entry_problem`); a wrong one raises
    :class:`ValueError` with its problem."""
    rules = []
    for entry in entries:
        problem = entry_problem(entry)
        if problem:
            raise ValueError(f"{entry!r} {problem}")
        host, path = _split(entry.strip())
        rules.append(IgnoreRule(entry.strip(), _normal_host(host), path, source))
    return tuple(rules)


@dataclass
class _Running:
    """A test running, with its own rules."""

    test_id: str
    rules: tuple[IgnoreRule, ...]


@dataclass(frozen=True)
class NotSent:
    """An ignored request the client got a connection error for: the test running then
    (``""``: none) and what to show of it."""

    test_id: str
    text: str


@dataclass
class _State:
    session: tuple[IgnoreRule, ...] = ()
    running: list[_Running] = field(default_factory=list)
    not_sent: list[NotSent] = field(default_factory=list)


_state = _State()
_lock = threading.Lock()


def use_session(entries: Iterable[str]) -> tuple[IgnoreRule, ...]:
    """Ignore ``entries`` (checked) at all times from now; gives the session rules before,
    for :func:`restore_session` (a session run inside another keeps the outer's)."""
    rules = parse(entries)
    with _lock:
        before, _state.session = _state.session, rules
    return before


def restore_session(rules: tuple[IgnoreRule, ...]) -> None:
    """Put back the session rules :func:`use_session` replaced."""
    with _lock:
        _state.session = rules


def active() -> bool:
    """Whether any rule applies now (the transport's fast path)."""
    return bool(_state.session or _state.running)


@contextlib.contextmanager
def during_test(test_id: str, entries: Iterable[str] = ()) -> Iterator[None]:
    """While the block runs, the test ``test_id`` runs: its ``entries`` (checked) are
    ignored too, and the ignored requests not sent are noted as its own."""
    running = _Running(test_id, parse(entries, source=TEST_SOURCE))
    with _lock:
        _state.running.append(running)
    try:
        yield
    finally:
        with _lock:
            _state.running[:] = [r for r in _state.running if r is not running]


def matching(host: str, path: str) -> IgnoreRule | None:
    """The rule that ignores a request to ``host`` for ``path``, or ``None``."""
    state = _state
    for rule in state.session:
        if rule.matches(host, path):
            return rule
    for running in list(state.running):
        for rule in running.rules:
            if rule.matches(host, path):
                return rule
    return None


def note_not_sent(text: str) -> None:
    """Keep ``text``, an ignored request the client got a connection error for, as the
    running test's (the newest one), or the session's between tests."""
    with _lock:
        running = _state.running
        test_id = running[-1].test_id if running else ""
        _state.not_sent.append(NotSent(test_id, text))


def take_not_sent(test_id: str | None = None) -> list[NotSent]:
    """The ignored requests not sent since last asked, oldest first, removed from the
    list: all of them, or the test ``test_id``'s."""
    with _lock:
        taken = [n for n in _state.not_sent if test_id is None or n.test_id == test_id]
        _state.not_sent[:] = [n for n in _state.not_sent if all(n is not t for t in taken)]
    return taken
