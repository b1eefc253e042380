"""MCP over stdio in the test's cassette: each message the client writes to the server's
stdin is one interaction, the server's messages that follow it are its answer.

The mcp SDK's ``stdio_client`` starts its server through one module global,
``mcp.client.stdio._create_platform_compatible_process`` (mcp 1.x and 2.x). While an
interceptor is active (:mod:`pytest_agentctx.traffic.clients.mcp_stdio`) or a
:func:`local_server` is entered, it is replaced: a server started in a test whose traffic
the package sees gets a :class:`~.process.McpProcess` instead, behind a
:class:`StdioSession`. Each line the client writes becomes a ``POST mcp+stdio://<server>/``
request (:func:`~.wire.stdio_url`, :func:`server_label`) dispatched to the handlers like any
HTTP request, so a cassette replays it, records it or reports a miss, with everything that
comes with it (redaction, per-test cassettes, both file formats, miss messages).

A session is replayed or recorded whole:

- its first message answered from the cassette makes it a replayed session: no process is
  ever started, the recorded command line never runs; the recorded server messages are
  written to the client, their JSON-RPC ids (and progress tokens) made the live ones
  where the client's differ from the recording's. A later message the cassette cannot
  answer fails the test with the cassette's miss message (the client gets it as a
  JSON-RPC error);
- its first message sent on (recording, or no cassette answering) starts the real server,
  as the SDK would have, and every message goes to it; the server's output is read line by
  line into the interaction of the client's latest message (NDJSON), which the cassette
  stores as it is read.

The server's environment (the values the test gives ``StdioServerParameters.env``) and the
secret-looking parts of its command line are taught to the test's redactor before
anything is stored: they never reach a file, and the informative ``mcp-command`` header is
stored redacted.

Without an active interceptor (a test that uses no cassette or fake), the SDK starts its
server itself: the seam is not replaced.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import PurePath
from typing import Any, TypeAlias

import anyio
import anyio.abc
import httpx2

from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.cassettes.misses import record_command
from pytest_agentctx.traffic.mcp.jsonrpc import describe, is_message, progress_token, with_id
from pytest_agentctx.traffic.mcp.process import LiveChild, McpProcess
from pytest_agentctx.traffic.mcp.wire import (
    COMMAND_HEADER,
    NDJSON,
    RECORDED_EXTENSION,
    RECORDED_SIZE_EXTENSION,
    TRANSPORT_HEADER,
    stdio_url,
)
from pytest_agentctx.traffic.respx_routes import RespxRoute
from pytest_agentctx.traffic.transport.dispatch import dispatch_async
from pytest_agentctx.traffic.transport.wire import (
    WireRequest,
    WireResponse,
    header_encoding,
    prebuilt_request,
    raw_headers,
)

#: How a local server answers: one client message in, the server messages to write out.
Answer: TypeAlias = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]
#: The SDK's seam: ``(command, args, env, errlog, cwd)`` -> its process.
_Create: TypeAlias = Callable[..., Awaitable[Any]]

_lock = threading.RLock()
#: The SDK's own seam while replaced, and how many want it replaced.
_original: _Create | None = None
_users = 0
#: The local servers entered (:func:`local_server`), by command.
_local: dict[str, Answer] = {}
#: The labels given in each test (by its oldest interceptor): label -> command line.
_labels: weakref.WeakKeyDictionary[object, dict[str, str]] = weakref.WeakKeyDictionary()


def _module() -> Any:
    import mcp.client.stdio

    return mcp.client.stdio


def acquire() -> None:
    """Replace the SDK's seam (imported here: call it only once the SDK is imported or
    needed), until as many :func:`release` calls."""
    global _original, _users
    with _lock:
        _users += 1
        if _original is None:
            module = _module()
            _original = module._create_platform_compatible_process
            module._create_platform_compatible_process = _create


def release() -> None:
    """Undo one :func:`acquire`; the SDK's own seam is back after the last."""
    global _original, _users
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0 and _original is not None:
            _module()._create_platform_compatible_process = _original
            _original = None


@contextmanager
def local_server(command: str, answer: Answer) -> Iterator[None]:
    """While entered, a stdio server whose command is ``command`` (the executable, or the
    whole command line) is not started but answered in-process by ``answer``: each client
    message in, the server messages it returns written out. Its traffic is offered to the
    witnesses (the exchange log, the iteration context) as another tool's, never recorded
    nor replayed."""
    with _lock:
        if command in _local:
            raise ValueError(
                f"A local MCP server for {command!r} is entered already; give each local "
                "server its own command."
            )
        _local[command] = answer
    acquire()
    try:
        yield
    finally:
        with _lock:
            _local.pop(command, None)
        release()


def command_line(command: str, args: Sequence[str]) -> str:
    """The server's command line as a shell would read it."""
    return shlex.join([command, *args])


def shown_command(command: str, args: Sequence[str]) -> str:
    """The command line as a cassette shows it (``mcp-command``): each absolute path in
    it relative to the working directory when it lies under it, else by its last part. A
    path of the recording machine (a virtualenv's ``python``, a user's home) means nothing
    on another, and names its user."""
    here = os.getcwd()

    def shown(token: str) -> str:
        if not os.path.isabs(token):
            return token
        inside = os.path.relpath(token, here)
        return PurePath(token).name if inside.startswith("..") else inside

    return shlex.join([shown(token) for token in [command, *args]])


_LABEL_CHARACTERS = re.compile(r"[^a-z0-9._-]+")


def server_label(command: str, args: Sequence[str]) -> str:
    """The server's name in its URL: the stem of the first ``*.py`` argument, else the
    module after ``-m``, else the command's base name (``uvx mcp-server-time`` ->
    ``mcp-server-time``... its command's ``uvx`` when no argument names it better)."""
    name = next((PurePath(arg).stem for arg in args if arg.endswith(".py")), None)
    if name is None and "-m" in args[:-1]:
        name = args[list(args).index("-m") + 1]
    if name is None:
        name = _runner_target(command, args) or PurePath(command).name
    label = _LABEL_CHARACTERS.sub("-", name.lower()).strip("-.")
    return label or "server"


#: Commands that run a package named by their first argument that is not an option.
_RUNNERS = frozenset({"uvx", "npx", "pipx", "bunx", "pnpx"})


def _runner_target(command: str, args: Sequence[str]) -> str | None:
    if PurePath(command).stem not in _RUNNERS:
        return None
    target = next((arg for arg in args if not arg.startswith("-")), None)
    if target is None or target == "run":
        return None
    return target.rpartition("/")[2].partition("@")[0] or None


def _unique_label(owner: object, label: str, line: str) -> str:
    """``label``, or ``label-2``... when another command line has it in this test."""
    with _lock:
        try:
            given = _labels.setdefault(owner, {})
        except TypeError:  # an owner that cannot be weakly referenced: no memory of it
            given = {}
        candidate, number = label, 1
        while given.get(candidate, line) != line:
            number += 1
            candidate = f"{label}-{number}"
        given[candidate] = line
        return candidate


#: The variables the SDK passes every server (its default environment), not the test's.
_INHERITED = frozenset({"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"})
#: A command-line option or assignment whose name says it holds a secret.
_OPTION = re.compile(r"^-{0,2}([A-Za-z0-9_.-]+)=(.+)$", re.DOTALL)


def secrets_of(
    command: str, args: Sequence[str], env: Mapping[str, str] | None
) -> list[tuple[str, str]]:
    """What the redactor learns of a stdio server (as header pairs whose names say they
    hold a secret, see :meth:`~pytest_agentctx.redaction.redactor.Redactor.learn`): every
    value of its environment but those the SDK passes every server unchanged, and the
    values of its command line's options and assignments whose names say they hold a
    secret (``--api-key=...``, ``--token ...``, ``GITHUB_TOKEN=...``)."""
    from pytest_agentctx.redaction.redactor import secret_name

    found = [
        ("x-mcp-env-secret", value)
        for name, value in (env or {}).items()
        if not (name in _INHERITED and os.environ.get(name) == value)
    ]
    for position, arg in enumerate(args):
        matched = _OPTION.match(arg)
        if matched is not None and secret_name(matched.group(1)):
            found.append(("x-mcp-arg-secret", matched.group(2)))
        elif arg.startswith("-") and secret_name(arg) and position + 1 < len(args):
            found.append(("x-mcp-arg-secret", args[position + 1]))
    return found


def _learn(pairs: list[tuple[str, str]]) -> None:
    from pytest_agentctx.redaction.active import active

    redactor = active()
    if redactor is not None and pairs:
        redactor.learn(pairs)


def _intercepted() -> object | None:
    """The oldest interceptor of the current context's chain, or ``None`` when no
    interceptor answers for it (the server is then started as without the package)."""
    offered = scopes.offered()
    return offered[-1] if isinstance(offered, tuple) and offered else None


def _local_answer(command: str, args: Sequence[str]) -> Answer | None:
    with _lock:
        return _local.get(command) or _local.get(command_line(command, args))


async def _create(
    command: str,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    errlog: Any = None,
    cwd: Any = None,
    **more: Any,
) -> Any:
    """The SDK's seam while replaced (see the module's documentation)."""
    original = _original or _module()._create_platform_compatible_process
    if errlog is None:
        errlog = sys.stderr
    args = list(args)
    answer = _local_answer(command, args)
    owner = _intercepted()
    if answer is None and owner is None:
        return await original(command, args, env=env, errlog=errlog, cwd=cwd, **more)

    async def spawn() -> anyio.abc.Process:
        process: anyio.abc.Process = await original(
            command, args, env=env, errlog=errlog, cwd=cwd, **more
        )
        return process

    line = command_line(command, args)
    _learn(secrets_of(command, args, env))
    label = server_label(command, args)
    if owner is not None:
        label = _unique_label(owner, label, line)
    session = StdioSession(label, shown_command(command, args), spawn=spawn, answer=answer)
    return McpProcess(session)


class StdioSession:
    """One stdio MCP session: the client's messages dispatched as interactions, the
    server's messages handed back (see the module's documentation)."""

    def __init__(
        self,
        server: str,
        line: str,
        *,
        spawn: Callable[[], Awaitable[anyio.abc.Process]],
        answer: Answer | None = None,
    ) -> None:
        self.server = server
        self.url = stdio_url(server)
        # Each client line's request is built from these, parsed once: the URL and the
        # headers httpx2 would give it (its Host first), but for its Content-Length.
        self._wire_url = httpx2.URL(self.url)
        self._headers = [
            (b"Host", self._wire_url.netloc),
            *raw_headers(
                [
                    ("content-type", "application/json"),
                    (TRANSPORT_HEADER, "stdio"),
                    (COMMAND_HEADER, line),
                ],
                "utf-8",
            ),
        ]
        self._encoding = header_encoding(self._headers)
        self._spawn = spawn
        self._answer = answer
        #: ``"replay"`` or ``"live"`` once its first message was answered.
        self.mode: str | None = None
        self.child: LiveChild | None = None
        #: Recorded id -> live id of the client's requests, and the same of progress tokens.
        self._ids: dict[object, object] = {}
        self._tokens: dict[object, object] = {}
        #: What the client reads next: server lines, or responses whose body are lines.
        self._queue: deque[bytes | WireResponse] = deque()
        self._wake: anyio.Event | None = None
        self._input_closed = False
        self._output_ended = False
        #: The response being read, and the lines of it ready; of a replayed one, how many
        #: of its bytes are still to read (see RECORDED_SIZE_EXTENSION).
        self._reading: tuple[WireResponse, Any] | None = None
        self._left: int | None = None
        self._partial = b""
        self._ready: deque[bytes] = deque()
        #: Errors the test fails with when the process is closed.
        self.errors: list[BaseException] = []

    # -- the client's side -----------------------------------------------------------

    async def client_message(self, line: bytes) -> None:
        """One line the client wrote: dispatched, its answer queued for the client."""
        try:
            message: object = json.loads(line)
        except ValueError:
            message = None
        request = self._request(line)
        sent = False

        async def send(_: WireRequest) -> WireResponse:
            nonlocal sent
            if self.mode == "replay":
                raise self._unreplayed(message)
            sent = True
            self.mode = "live"
            return await self._live(line, message)

        try:
            if _intercepted() is None:
                response = await send(request)
            else:
                # a local server answers as another tool would: witnesses only
                route = RespxRoute(None, None, None) if self._answer is not None else None
                response = await dispatch_async(request, send, route=route)
            if not sent and self.mode == "live":  # a session that runs: it answers all
                await _close(response)
                response = await self._live(line, message)
            elif not sent:
                self.mode = "replay"
                if response.status_code != 200:
                    self._queue_error(message, await _miss_text(response))
                    return
                self._map_ids(response, message)
        except Exception as error:  # the client is told, the test fails
            self.errors.append(error)
            self._queue_error(message, str(error))
            return
        self._put(response)

    def _request(self, line: bytes) -> httpx2.Request:
        """The request of one client line, as ``httpx2.Request("POST", url, content=line)``
        makes it, without parsing the URL and the headers again for every line."""
        length = (b"Content-Length", str(len(line)).encode("ascii"))
        return prebuilt_request(
            "POST", self._wire_url, [*self._headers, length], line, encoding=self._encoding
        )

    def _unreplayed(self, message: object) -> BaseException:
        from pytest_agentctx.traffic.errors import CassetteMiss

        return CassetteMiss(
            f"MCP request {describe(message)} to server {self.server} has no recording, in "
            "a session replayed from the cassette up to it: a stdio session is replayed or "
            "recorded whole, and this one's server was never started. If the agent's "
            f"requests changed on purpose, re-record this test: {_record_command()}"
        )

    async def _live(self, line: bytes, message: object) -> WireResponse:
        headers = [("content-type", NDJSON)]
        if self._answer is not None:
            if not isinstance(message, dict):
                return httpx2.Response(200, headers=headers, content=b"")
            answered = await self._answer(message)
            content = b"".join(_line(item) for item in answered)
            return httpx2.Response(200, headers=headers, content=content)
        if self.child is None:
            self.child = LiveChild(await self._spawn())
        lines = self.child.interaction()
        await self.child.write(line + b"\n")
        return httpx2.Response(200, headers=headers, stream=lines)

    def _map_ids(self, response: WireResponse, message: object) -> None:
        """Note the recorded id and progress token of a replayed request where the live
        ones differ, to rewrite what the server answers."""
        recorded = response.extensions.get(RECORDED_EXTENSION)
        if not (is_message(recorded) and is_message(message)):
            return
        assert isinstance(recorded, Mapping)
        assert isinstance(message, Mapping)
        if "method" not in message or "id" not in message or "id" not in recorded:
            return
        if _key(recorded["id"]) != _key(message["id"]):
            self._ids[_key(recorded["id"])] = message["id"]
        then, now = progress_token(recorded), progress_token(message)
        if then is not None and now is not None and _key(then) != _key(now):
            self._tokens[_key(then)] = now

    def _queue_error(self, message: object, text: str) -> None:
        """Answer a request the session could not with a JSON-RPC error saying why."""
        request = isinstance(message, Mapping) and is_message(message) and "method" in message
        if request and isinstance(message, Mapping) and "id" in message:
            error = {"code": -32603, "message": text}
            self._put(_line({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    def _put(self, item: bytes | WireResponse) -> None:
        self._queue.append(item)
        self._notify()

    def _notify(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def close_input(self) -> None:
        """The client closed the server's stdin."""
        self._input_closed = True
        self._notify()
        if self.child is not None:
            await self.child.close_input()

    def end_output(self) -> None:
        """The process was ended: the client reads nothing more."""
        self._output_ended = True
        self._notify()

    async def close_responses(self) -> None:
        """Close the interaction being read and those queued (the process is closed): a
        live one is then recorded with what was read of it."""
        pending = [item for item in self._queue if not isinstance(item, bytes)]
        if self._reading is not None:
            pending.insert(0, self._reading[0])
        self._reading = None
        self._queue.clear()
        for response in pending:
            await _close(response)

    def raise_errors(self) -> None:
        """Raise the first error the session kept (the test fails with it)."""
        if self.errors:
            error, self.errors = self.errors[0], []
            raise error

    # -- the server's side -----------------------------------------------------------

    async def server_output(self) -> bytes:
        """The next server lines for the client; :class:`anyio.EndOfStream` at the end."""
        while True:
            if self._ready:
                return self._ready.popleft()
            if self._reading is not None:
                await self._read_on()
                continue
            if self._queue:
                item = self._queue.popleft()
                if isinstance(item, bytes):
                    return item
                self._reading = (item, _chunks(item))
                size = item.extensions.get(RECORDED_SIZE_EXTENSION)
                self._left = size if isinstance(size, int) else None
                continue
            if self._input_closed or self._output_ended:
                raise anyio.EndOfStream
            self._wake = anyio.Event()
            await self._wake.wait()

    async def _read_on(self) -> None:
        assert self._reading is not None
        response, chunks = self._reading
        try:
            if self._left is not None and self._left <= 0:  # all it recorded: never past it
                raise StopAsyncIteration
            chunk = await chunks.__anext__()
            if self._left is not None:
                self._left -= len(chunk)
        except StopAsyncIteration:
            self._reading = None
            tail, self._partial = self._partial, b""
            if tail.strip():
                self._ready.append(self._rewritten(tail))
            await _close(response)
            return
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._ready.extend(self._rewritten(line) for line in lines if line.strip())

    def _rewritten(self, line: bytes) -> bytes:
        """A server line with the ids and progress tokens of the recording made the live
        ones (see :meth:`_map_ids`)."""
        if not (self._ids or self._tokens):
            return line + b"\n"
        try:
            message = json.loads(line)
        except ValueError:
            return line + b"\n"
        changed = _rewrite(message, self._ids, self._tokens)
        return line + b"\n" if changed is message else _line(changed)


def _record_command() -> str:
    """The command that re-records the running test."""
    return record_command(os.environ.get("PYTEST_CURRENT_TEST", "").rpartition(" (")[0] or None)


def _rewrite(
    message: object, ids: Mapping[object, object], tokens: Mapping[object, object]
) -> object:
    """``message`` (a server's) with the recorded ids of the client's requests made the
    live ones: a response's ``id``, a cancellation's ``requestId``, a progress
    notification's ``progressToken``."""
    if not isinstance(message, dict) or not is_message(message):
        return message
    if "method" not in message and "id" in message and _key(message["id"]) in ids:
        return with_id(message, ids[_key(message["id"])])
    params = message.get("params")
    if not isinstance(params, dict):
        return message
    for field, table in (("progressToken", tokens), ("requestId", ids)):
        if field in params and _key(params[field]) in table:
            return {**message, "params": {**params, field: table[_key(params[field])]}}
    return message


def _key(value: object) -> object:
    """A JSON-RPC id as a key: ``1`` and ``"1"`` are different ids."""
    return (type(value).__name__, value) if isinstance(value, int | str) else repr(value)


def _line(message: object) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _chunks(response: WireResponse) -> Any:
    stream = response.stream
    if hasattr(stream, "__aiter__"):
        return stream.__aiter__()

    async def from_sync() -> Any:
        for chunk in stream:
            yield chunk

    return from_sync()


async def _close(response: WireResponse) -> None:
    aclose = getattr(response, "aclose", None)
    if aclose is not None:
        await aclose()


async def _miss_text(response: WireResponse) -> str:
    """What a cassette's error response (a miss) says."""
    body = b"".join([chunk async for chunk in _chunks(response)])
    await _close(response)
    try:
        error = json.loads(body).get("error") or {}
        return str(error.get("message") or body.decode("utf-8", "replace"))
    except (ValueError, AttributeError):
        return body.decode("utf-8", "replace") or f"answered {response.status_code}"
