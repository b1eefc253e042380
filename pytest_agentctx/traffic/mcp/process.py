"""The child process the mcp SDK gets from its stdio seam while the package answers for it.

:class:`McpProcess` is an :class:`anyio.abc.Process` as the SDK's ``stdio_client`` uses one:
it writes each client message, one JSON per line, to :attr:`~McpProcess.stdin`, reads the
server's lines from :attr:`~McpProcess.stdout`, closes stdin, waits for the exit, and may
terminate the process. Behind it, a :class:`~pytest_agentctx.traffic.mcp.stdio.StdioSession`
turns each line written into an interaction (replayed, recorded, or answered in-process)
and hands back the server's lines.

While replaying, nothing runs: the process has no ``pid`` (``0``, which the SDK's
termination takes for a process that never started), exits with ``0`` as soon as its stdin
is closed, and its stdout ends once the replayed messages are read. While recording, the
real child (:class:`LiveChild`, spawned as the SDK would, on the first message that goes
live) is behind it: its ``pid``, exit, ``terminate`` and ``kill`` are the child's, its
stdout read line by line into the interaction each line came after.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import httpx2

if TYPE_CHECKING:
    from pytest_agentctx.traffic.mcp.stdio import StdioSession

#: What a closed or ended stream of the child raises.
_CLOSED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class LiveChild:
    """The real server process behind a recorded session: what it writes is read line by
    line, each line kept for the interaction that was the current one when it was read
    (:meth:`interaction`: the client's latest message)."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._current = -1
        self._lines: dict[int, deque[bytes]] = {}
        self._partial = b""
        self.ended = False

    def interaction(self) -> LiveLines:
        """Start the next interaction: what the server writes from now on is its."""
        self._current += 1
        self._lines[self._current] = deque()
        return LiveLines(self, self._current)

    async def write(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None  # spawned with pipes, as the SDK spawns it
        await stdin.send(data)

    async def close_input(self) -> None:
        stdin = self.process.stdin
        if stdin is not None:
            try:
                await stdin.aclose()
            except (*_CLOSED, OSError):
                pass

    async def _read_more(self) -> None:
        stdout = self.process.stdout
        try:
            if stdout is None:
                raise anyio.EndOfStream
            chunk = await stdout.receive()
        except _CLOSED:
            self.ended = True
            if self._partial.strip():
                self._lines[self._current].append(self._partial + b"\n")
            self._partial = b""
            return
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._lines[self._current].extend(line + b"\n" for line in lines if line.strip())

    async def lines_of(self, index: int) -> AsyncIterator[bytes]:
        """The lines of interaction ``index``, as they are read; they end when the client
        sent its next message (and a line came after it), or the server's stdout ended."""
        kept = self._lines[index]
        while True:
            if kept:
                yield kept.popleft()
            elif index < self._current or self.ended:
                self._lines.pop(index, None)
                return
            else:
                await self._read_more()


class LiveLines(httpx2.AsyncByteStream):
    """The body of a live stdio interaction: the server's lines after the client's
    message (see :meth:`LiveChild.lines_of`)."""

    def __init__(self, child: LiveChild, index: int) -> None:
        self._child = child
        self._index = index

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for line in self._child.lines_of(self._index):
            yield line

    async def aclose(self) -> None:
        pass


class _Stdin(anyio.abc.ByteSendStream):
    """The process's stdin: each line the SDK writes goes to the session."""

    def __init__(self, session: StdioSession, on_close: Callable[[], Awaitable[None]]) -> None:
        self._session = session
        self._on_close = on_close
        self._partial = b""
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        *lines, self._partial = (self._partial + bytes(item)).split(b"\n")
        for line in lines:
            if line.strip():
                await self._session.client_message(line)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._on_close()


class _Stdout(anyio.abc.ByteReceiveStream):
    """The process's stdout: the server's lines the session hands back."""

    def __init__(self, session: StdioSession) -> None:
        self._session = session
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        return await self._session.server_output()

    async def aclose(self) -> None:
        self._closed = True


class McpProcess(anyio.abc.Process):
    """The process the SDK's stdio seam returns while the package answers for the server
    (see the module's documentation)."""

    def __init__(self, session: StdioSession) -> None:
        self._session = session
        self._stdin = _Stdin(session, self._input_closed)
        self._stdout = _Stdout(session)
        self._returncode: int | None = None
        self._exited: anyio.Event | None = None

    def _event(self) -> anyio.Event:
        if self._exited is None:
            self._exited = anyio.Event()
        return self._exited

    def _exit(self, code: int) -> None:
        if self._returncode is None:
            self._returncode = code
        self._event().set()

    async def _input_closed(self) -> None:
        await self._session.close_input()
        if self._session.child is None:  # nothing runs: it exits as its input ends
            self._exit(0)

    async def wait(self) -> int:
        child = self._session.child
        if child is not None:
            code = await child.process.wait()
            self._exit(code)
            return code
        await self._event().wait()
        assert self._returncode is not None
        return self._returncode

    def _signal(self, code: int, send: Callable[[anyio.abc.Process], None]) -> None:
        child = self._session.child
        if child is not None:
            send(child.process)
            return
        self._session.end_output()
        self._exit(code)

    def terminate(self) -> None:
        self._signal(-signal.SIGTERM, lambda process: process.terminate())

    def kill(self) -> None:
        self._signal(-signal.SIGKILL, lambda process: process.kill())

    def send_signal(self, sig: signal.Signals) -> None:
        self._signal(-int(sig), lambda process: process.send_signal(sig))

    @property
    def pid(self) -> int:
        child = self._session.child
        return child.process.pid if child is not None else 0

    @property
    def returncode(self) -> int | None:
        child = self._session.child
        return child.process.returncode if child is not None else self._returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        child = self._session.child
        return child.process.stderr if child is not None else None

    async def aclose(self) -> None:
        await self._stdin.aclose()
        await self._stdout.aclose()
        child = self._session.child
        if child is not None:
            if child.process.returncode is None:
                child.process.kill()
            await child.process.aclose()
        self._exit(0)
        self._session.raise_errors()
