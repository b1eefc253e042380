"""The parts of a live request and response that a cassette reads.

Every client's request reaches the cassette as the request of one library (httpx2's, or
httpx's for the clients on it) and its response goes back as one: these protocols name the
attributes the cassette uses, so that it types them without naming either library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

__all__ = ["LiveStream", "WireHeaders", "WireRequest", "WireResponse"]


class WireHeaders(Protocol):
    """A request's or response's headers (case-insensitive names)."""

    def get(self, key: str, default: None = None, /) -> str | None: ...

    def items(self) -> Iterable[tuple[str, str]]: ...


class WireRequest(Protocol):
    """A live request, as the cassette reads it."""

    @property
    def method(self) -> str: ...

    @property
    def url(self) -> object: ...  # its text is str(url)

    @property
    def headers(self) -> WireHeaders: ...

    @property
    def content(self) -> bytes: ...

    @property
    def extensions(self) -> Mapping[str, object]: ...


class WireResponse(Protocol):
    """A live response, as the cassette reads it."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> WireHeaders: ...


class LiveStream(Protocol):
    """The body of a live response being recorded (a teed stream), which the cassette
    finishes when the agent never closed it."""

    def finish(self, *, seconds: float, max_bytes: int) -> bool: ...
