"""What child processes started under a :class:`~.network.NetworkGuard` get, and the
listener that refuses their proxied requests and hears their guards' refusals.

A child process cannot be patched from the test process. While at least one guard is
active, the children the test starts get instead:

* :data:`GUARD_VAR` (JSON: the active guards' allowed hosts and messages, and the port of
  the listener below) and the folder of this package's ``sitecustomize`` first on
  ``PYTHONPATH``. A Python child runs that ``sitecustomize`` at start-up: it installs the
  same guards in the child (:func:`._child_guard.install`), whose refusals are also
  reported to the test process, so the test fails even when the child caught the error or
  exited with 0;
* ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` (and their lowercase twins) pointing at
  the listener, and ``NO_PROXY`` listing loopback and the allowed hosts: a program that
  honours proxy variables (curl, wget, Go, Python's HTTP libraries) sends its requests to
  the listener, which answers ``403`` and reports them to the guards.

``GUARD_VAR`` and ``PYTHONPATH`` are set in ``os.environ`` while a guard is active (children
started any way inherit them: ``subprocess``, ``os.system``, ``multiprocessing``) and put
back exactly as they were when the last guard stops. The proxy variables go only to children
given an environment of their own: through :class:`subprocess.Popen` (``subprocess.run``,
asyncio's and anyio's subprocesses, MCP stdio clients), ``os.posix_spawn``,
``os.posix_spawnp`` and ``os.execve`` (which ``os.exec*e`` and ``os.spawn*e`` call): that
environment gets every variable above, an explicit ``env={}`` included. In ``os.environ`` the
proxy variables would also send the test process's own HTTP clients to the listener.

Two kinds of children start without reading their environment:

* a forked child (``os.fork``, multiprocessing's ``fork`` start method) runs the guards of
  the test process it was copied from; after the fork they also report their refusals to the
  listener, so the test fails even when the child caught the error;
* a child of multiprocessing's ``forkserver`` is forked from the server, which keeps the
  environment (and the guards, or none) of the moment it started, often long before the
  test. Every child multiprocessing starts is sent, with its preparation data, the
  environment above as it is now: unpickling it in the child installs those guards, or
  removes the server's when none is active now (:func:`._child_guard.adopt`).

The listener is one loopback TCP server per process, started with the first guard and
serving on a daemon thread until the process ends.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pytest_agentctx.traffic.cassettes.guards import CONNECTION, active_guards
from pytest_agentctx.traffic.scopes import serving

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard

#: The variable that carries the active guards to child processes (JSON).
GUARD_VAR = "PYTEST_AGENTCTX_NETWORK_GUARD"
#: The folder put first on children's PYTHONPATH: it holds only a ``sitecustomize``.
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_site")
#: The folder that holds the ``pytest_agentctx`` package, for children of other environments.
_PACKAGE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_NO_PROXY_VARS = ("NO_PROXY", "no_proxy")
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "127.0.0.0/8")
#: First line of a child guard's report to the listener: the action, a tab, the target.
_REPORT = "AGENTCTX-BLOCKED "
_TIMEOUT = 10.0
_MAX_HEAD = 65536
#: Where ``env`` sits among ``Popen``'s positional arguments (after ``self``).
_ENV_INDEX = subprocess.Popen.__init__.__code__.co_varnames.index("env") - 1

_listener: _Listener | None = None
#: What every child started now gets in its environment (beside PYTHONPATH).
_inject: dict[str, str] = {}
#: In a child process: what it was given, and gives its own children.
_inherited: dict[str, str] = {}
#: os.environ's values before the first guard changed them (None: absent).
_saved_environ: dict[str, str | None] | None = None
_popen_before: Callable[..., None] | None = None
#: The ``os`` functions that start a program with an environment of their own, and where
#: that environment sits among their positional arguments.
_OS_LAUNCHERS = tuple(
    (name, 2) for name in ("posix_spawn", "posix_spawnp", "execve") if hasattr(os, name)
)
#: The ``os`` functions replaced while children get a guard: name -> the original.
_os_before: dict[str, Callable[..., object]] = {}
#: The key of multiprocessing's preparation data that carries the guards to its children.
_PREPARATION_KEY = "pytest_agentctx_network_guard"
#: The module that installs the guards in a child process (:class:`_Adopt` imports it there).
_CHILD_GUARD = "pytest_agentctx.traffic.cassettes._child_guard"


# -- the test process ----------------------------------------------------------------


def follow(guards: Sequence[NetworkGuard]) -> None:
    """Give the children started from now on ``guards`` (the network module calls this,
    under its lock, whenever the active guards change); none: undo everything."""
    global _inject, _saved_environ
    if not guards:
        if _saved_environ is not None:
            for name, value in _saved_environ.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            _saved_environ = None
            _inject = dict(_inherited)
            if not _inherited:
                _unpatch_launchers()
        return
    _inject = _environment(guards, _get_listener().port)
    if _saved_environ is None:
        _saved_environ = {name: os.environ.get(name) for name in (GUARD_VAR, "PYTHONPATH")}
        _patch_launchers()
        _patch_preparation()
    os.environ[GUARD_VAR] = _inject[GUARD_VAR]
    os.environ["PYTHONPATH"] = with_site_dir(_saved_environ["PYTHONPATH"])


def _environment(guards: Sequence[NetworkGuard], port: int) -> dict[str, str]:
    spec = {
        "port": port,
        "root": _PACKAGE_ROOT,
        "guards": [
            {
                "allowed": list(guard.allowed),
                "reason": guard.reason,
                "summary": guard.summary,
                "advice": guard.advice,
            }
            for guard in guards
        ],
    }
    # Hosts every guard allows go around the proxy, in the forms clients understand.
    allowed = [host for host in guards[0].allowed if all(host in g.allowed for g in guards)]
    bypass = [*_LOOPBACK, *(entry for entry in map(_no_proxy_entry, allowed) if entry)]
    proxy = f"http://127.0.0.1:{port}"
    return {
        **dict.fromkeys(_PROXY_VARS, proxy),
        **dict.fromkeys(_NO_PROXY_VARS, ",".join(bypass)),
        GUARD_VAR: json.dumps(spec, sort_keys=True),
    }


def _no_proxy_entry(pattern: str) -> str | None:
    """``pattern`` of ``allowed_hosts`` as a NO_PROXY entry: names and addresses as they
    are, ``*.example.com`` as ``.example.com``; other wildcards cannot be written there."""
    if not any(char in pattern for char in "*?["):
        return pattern
    rest = pattern[2:]
    if pattern.startswith("*.") and rest and not any(char in rest for char in "*?["):
        return pattern[1:]
    return None


def with_site_dir(pythonpath: str | None) -> str:
    if not pythonpath:
        return SITE_DIR
    if pythonpath.split(os.pathsep, 1)[0] == SITE_DIR:
        return pythonpath
    return SITE_DIR + os.pathsep + pythonpath


def _env_for_child(env: object) -> object:
    """The environment ``env`` given to a child (``None``: this process's), with the
    guards' variables; ``env`` as it is when no guard is active, or when it is no mapping
    (the launcher refuses it)."""
    inject = _inject
    base = os.environ if env is None else env
    if not inject or not isinstance(base, Mapping):
        return env  # not inject: the last guard stopped while this child was being started
    child = {os.fsdecode(name): os.fsdecode(value) for name, value in base.items()}
    child.update(inject)
    child["PYTHONPATH"] = with_site_dir(child.get("PYTHONPATH"))
    return child


def _popen_init(self: object, *args: object, **kwargs: object) -> None:
    if len(args) > _ENV_INDEX:
        args = (*args[:_ENV_INDEX], _env_for_child(args[_ENV_INDEX]), *args[_ENV_INDEX + 1 :])
    else:
        kwargs["env"] = _env_for_child(kwargs.get("env"))
    assert _popen_before is not None  # patched only while it holds the original
    _popen_before(self, *args, **kwargs)


def _os_launcher(name: str, index: int, original: Callable[..., object]) -> Callable[..., object]:
    """``original`` (``os.posix_spawn``...), giving the program it starts the variables."""

    @functools.wraps(original)
    def launch(*args: object, **kwargs: object) -> object:
        if len(args) > index and args[index] is not None:
            args = (*args[:index], _env_for_child(args[index]), *args[index + 1 :])
        elif kwargs.get("env") is not None:
            kwargs["env"] = _env_for_child(kwargs["env"])
        return original(*args, **kwargs)

    return launch


def _patch_launchers() -> None:
    global _popen_before
    if _popen_before is None:
        _popen_before = vars(subprocess.Popen)["__init__"]
        subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    for name, index in _OS_LAUNCHERS:
        if name not in _os_before:
            _os_before[name] = getattr(os, name)
            setattr(os, name, _os_launcher(name, index, _os_before[name]))


def _unpatch_launchers() -> None:
    global _popen_before
    if _popen_before is not None:
        subprocess.Popen.__init__ = _popen_before  # type: ignore[method-assign]
        _popen_before = None
    for name, original in _os_before.items():
        setattr(os, name, original)
    _os_before.clear()


# -- multiprocessing: forked children and the forkserver's ----------------------------


def report_refusal(port: int, target: str, action: str) -> None:
    """Tell the test process (its listener on ``port``) that ``target`` was refused here."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT) as conn:
            conn.sendall(f"{_REPORT}{action}\t{target}\n".encode())
            conn.recv(16)  # the test process has noted it
    except OSError:
        pass  # the test process has gone: refusing is all that is left to do


def _after_fork_in_child() -> None:
    """A forked child runs copies of the guards of the process it was forked from: they
    report their refusals to that process, where the test that started the child runs."""
    if _listener is None:
        return  # a child process whose guards (if any) report already
    for guard in active_guards():
        if guard.report is None:
            guard.report = functools.partial(report_refusal, _listener.port)


class _Adopt:
    """Unpickled in a child of multiprocessing (first thing, with its preparation data): it
    gives the child the guards that ``environment`` holds (none: no guard), whatever the
    forkserver it was forked from had."""

    # Without guards to give, only a child that has some (its forkserver started under a
    # guard) imports this module, to remove them.
    _CODE = (
        "import sys\n"
        "if environment or __name__ in sys.modules:\n"
        "    added = root not in sys.path\n"
        "    if added:\n"
        "        sys.path.insert(0, root)\n"
        "    try:\n"
        "        from pytest_agentctx.traffic.cassettes._child_guard import adopt\n"
        "    finally:\n"
        "        if added:\n"
        "            sys.path.remove(root)\n"
        "    adopt(environment)\n"
    )

    def __init__(self, environment: Mapping[str, str]) -> None:
        self.environment = dict(environment)

    def __reduce__(self) -> tuple[Callable[..., object], tuple[str, dict[str, object]]]:
        # exec, not this class: the child may not find the package where this process did.
        names: dict[str, object] = {
            "root": _PACKAGE_ROOT,
            "environment": self.environment,
            "__name__": _CHILD_GUARD,
        }
        return exec, (self._CODE, names)


def _preparation_data(
    original: Callable[..., dict[str, object]], *args: object, **kwargs: object
) -> dict[str, object]:
    data = original(*args, **kwargs)
    data[_PREPARATION_KEY] = _Adopt(_inject)
    return data


def _patch_preparation() -> None:
    """From now on, every child of multiprocessing (but forked ones, which need none) is
    sent the guards active when it starts (:class:`_Adopt`). Left in place when the guards
    stop: a forkserver started under a guard must hear that it is gone."""
    try:
        from multiprocessing import spawn
    except ImportError:  # an interpreter built without multiprocessing
        return
    current = spawn.get_preparation_data
    if getattr(current, "func", None) is not _preparation_data:
        spawn.get_preparation_data = functools.partial(_preparation_data, current)


# -- the listener: refuses children's proxied requests, hears their guards' refusals ----


class _Listener:
    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        serving(
            threading.Thread(target=self._serve, name="pytest-agentctx child guard", daemon=True)
        ).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            serving(threading.Thread(target=_answer, args=(connection,), daemon=True)).start()


def _get_listener() -> _Listener:
    global _listener
    if _listener is None:
        _listener = _Listener()
        if hasattr(os, "register_at_fork"):  # not on Windows
            os.register_at_fork(after_in_child=_after_fork_in_child)
    return _listener


def _answer(connection: socket.socket) -> None:
    with connection:
        try:
            connection.settimeout(_TIMEOUT)
            connection.sendall(_reply(_read_head(connection)))
        except OSError:
            pass  # the child gave up: its own error tells it


def _read_head(connection: socket.socket) -> bytes:
    head = b""
    while len(head) < _MAX_HEAD and b"\r\n\r\n" not in head:
        if head.startswith(_REPORT.encode()) and b"\n" in head:
            break
        chunk = connection.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


def _reply(head: bytes) -> bytes:
    first = head.split(b"\n", 1)[0].decode("latin-1").strip()
    if first.startswith(_REPORT):
        action, _, target = first[len(_REPORT) :].partition("\t")
        for guard in active_guards():
            guard.note(f"{target} (from a child process)", action)
        return b"OK\n"
    host, port = _proxy_target(first, head)
    body = _refuse_proxied(host, port).encode()
    return (
        b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )


def _proxy_target(first: str, head: bytes) -> tuple[str, int]:
    """Host and port of a proxy request: ``CONNECT host:443`` or ``GET http://host/...``."""
    method, _, rest = first.partition(" ")
    uri = rest.split(" ", 1)[0]
    if method.upper() == "CONNECT":
        host, _, port = uri.rpartition(":")
        return host.strip("[]"), int(port) if port.isdigit() else 443
    parts = urlsplit(uri)
    if parts.hostname:
        return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    for line in head.decode("latin-1").splitlines()[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "host":
            host, _, port = value.strip().rpartition(":")
            return (host, int(port)) if port.isdigit() else (value.strip(), 80)
    return "an unknown host", 0


def _refuse_proxied(host: str, port: int) -> str:
    """Note a child's proxied request on the guards that refuse it; what to answer."""
    guards = active_guards()
    if not guards:
        return (
            f"pytest-agentctx refused a request to {host}:{port}: the program was started "
            "by a test that ran offline, which has ended, and got this proxy from it. Start "
            "it outside that test, or give it its own HTTP_PROXY/NO_PROXY."
        )
    target = f"{host}:{port} (from a child process, through its proxy)"
    refusing = [guard for guard in guards if not guard.allows(host)]
    if not refusing:
        # Allowed, but the pattern that allows it cannot be written in NO_PROXY.
        target = (
            f"{host}:{port} (allowed, but a child process sent it to the proxy it gets: only "
            "names, addresses and *.domain patterns of allowed_hosts reach its NO_PROXY)"
        )
        refusing = guards
    for guard in refusing:
        guard.note(target, CONNECTION)
    return refusing[0].message(target)


# -- a child process: what it was given, it gives its own children --------------------


def inherit(environment: Mapping[str, str] | None = None) -> None:
    """In a child process that installed the guards it was given: give its own children
    ``environment``, by default the guard's variables of its own environment."""
    global _inject, _inherited
    if environment is None:
        names = (*_PROXY_VARS, *_NO_PROXY_VARS, GUARD_VAR)
        environment = {name: os.environ[name] for name in names if name in os.environ}
    _inherited = dict(environment)
    _inject = dict(environment)
    _patch_launchers()
    _patch_preparation()


def disinherit() -> None:
    """In a child process whose guards were removed: its children get nothing more."""
    global _inject, _inherited
    _inherited = {}
    _inject = {}
    _unpatch_launchers()
