"""The package's cassette file format: :class:`Interaction`, its stored document, its version.

A cassette is a JSON (default) or YAML document::

    {"cassette": "pytest-agentctx", "version": 1, "interactions": [
        {"request": {"method": "POST", "url": "...", "headers": {...}, "body": {"json": {...}}},
         "response": {"status": 200, "headers": {...}, "body": {"sse": [...]}},
         "test_id": "tests/test_weather.py::test_paris"}]}

Each interaction is built once (:class:`Interaction`, from a recording or by
:func:`from_native` from a document) and written once (:meth:`Interaction.to_dict`,
:func:`native_document`). Bodies are stored decoded and readable (see :mod:`.body`); keys
are sorted; secrets were redacted before anything was written. ``test_id``, the node id of
the test that recorded the interaction, is written in cassettes that several tests share
(``@pytest.mark.agent(cassette=...)``), so that each test replays, and re-records, its own
interactions; it is absent from a test's own cassette and from cassettes written before it
existed, which read as before (version 1 either way). ``"partial": true`` marks a streamed
response recorded in part: the agent stopped reading it without closing it, and the rest
could not be read when the test ended (see :class:`~.session.Cassette`). ``mcp_stream``
gives the order of an MCP server's streamed events over HTTP (see :class:`McpStream`).
``role`` is the role the request was made under (``"judge"``, ``"user_sim"``, see
:mod:`pytest_agentctx.traffic.roles`); absent for the agent's own calls, and so in
cassettes written before roles, which read as the agent's. ``recorded_on`` is the UTC day
(``YYYY-MM-DD``) the interaction was recorded, which prices its model call at that day's
prices; absent in cassettes written before it and by other tools. A re-recorded
interaction whose request and response did not change keeps its day, so a file re-recorded
to the same traffic stays the same.

The field readers here (:func:`read_headers`, :func:`read_test_id`, :func:`read_partial`,
:func:`read_role`, :func:`check_encoded`) serve vcrpy's format too (:mod:`.vcr`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import NotRequired, TypedDict

from pytest_agentctx._untrusted import LimitExceeded
from pytest_agentctx.traffic.cassettes.body import (
    Body,
    BodyTooLarge,
    UndecodableBody,
    body_bytes,
    body_chunks,
    decode_content,
    not_json,
)
from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.roles import DEFAULT_ROLE, ROLES

FORMAT_NAME = "pytest-agentctx"
FORMAT_VERSION = 1


class StoredRequest(TypedDict):
    """A request as the file holds it."""

    method: str
    url: str
    headers: dict[str, str]
    body: Body


class StoredResponse(TypedDict):
    """A response as the file holds it."""

    status: int
    headers: dict[str, str]
    body: Body


class McpStream(TypedDict):
    """When each event of an MCP server's recorded stream (streamable HTTP's answers and
    ``GET`` stream, the legacy SSE transport's ``GET /sse``) came, so that replay hands
    the client each event no sooner than it came (:mod:`pytest_agentctx.traffic.mcp.http`).

    ``after[i]``: how many messages the client had sent to the same server (and MCP
    session) since the stream's own request when event ``i`` arrived; replay releases
    event ``i`` once the client has sent as many again. An event that answers one of the
    client's requests (its response, a progress notification about it) counts instead the
    client's messages other than requests (answers to the server's requests,
    notifications) sent after that request: replay releases it once that request was
    replayed and as many followed it, whatever the order the client sends its requests in.
    ``open``: the stream was still open when the client closed it (a ``GET`` stream that
    lives as long as its session): replay keeps it open after its last event until the
    session ends (its ``DELETE``, the client closing it, or the test's end), where a stream
    without it ends after its last event.
    """

    after: list[int]
    open: NotRequired[bool]


class StoredInteraction(TypedDict):
    """An interaction as the file holds it (:meth:`Interaction.to_dict`)."""

    request: StoredRequest
    response: StoredResponse
    test_id: NotRequired[str]
    partial: NotRequired[bool]
    mcp_stream: NotRequired[McpStream]
    role: NotRequired[str]
    recorded_on: NotRequired[str]


class NativeDocument(TypedDict):
    """A whole cassette in the package's format (:func:`native_document`)."""

    cassette: str
    version: int
    interactions: list[StoredInteraction]


@dataclass
class Interaction:
    """One recorded request and its response, in stored form."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: Body
    status: int
    response_headers: dict[str, str]
    response_body: Body
    #: Where it came from (``path#index``), for messages.
    origin: str = ""
    #: The node id of the test that recorded it, in a shared cassette; ``""`` when no test
    #: is known (a test's own cassette, or one written before test ids or by another tool).
    test_id: str = ""
    #: Whether the response is a stream recorded in part (the agent stopped reading it and
    #: it could not be read to its end when the test ended): replayed up to where it stops.
    partial: bool = False
    #: When each event of an MCP server's streamed response came (see :class:`McpStream`);
    #: ``None`` for any other response, and for one recorded before it was kept.
    mcp_stream: McpStream | None = None
    #: The role the request was made under (:data:`~pytest_agentctx.traffic.roles.ROLES`):
    #: ``"agent"`` unless made inside ``model_role("judge")`` or ``model_role("user_sim")``.
    role: str = DEFAULT_ROLE
    #: The UTC day it was recorded (``YYYY-MM-DD``); ``""`` when not known (a cassette
    #: written before the day was kept, or by another tool).
    recorded_on: str = ""

    def to_dict(self) -> StoredInteraction:
        data: StoredInteraction = {
            "request": {
                "method": self.method,
                "url": self.url,
                "headers": self.request_headers,
                "body": self.request_body,
            },
            "response": {
                "status": self.status,
                "headers": self.response_headers,
                "body": self.response_body,
            },
        }
        if self.test_id:
            data["test_id"] = self.test_id
        if self.partial:
            data["partial"] = True
        if self.mcp_stream is not None:
            data["mcp_stream"] = self.mcp_stream
        if self.role != DEFAULT_ROLE:
            data["role"] = self.role
        if self.recorded_on:
            data["recorded_on"] = self.recorded_on
        return data

    #: The wire chunks of :attr:`response_body`, with the body they were made of (see
    #: :meth:`response_chunks`).
    _chunks: tuple[Body, list[bytes]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def is_stream(self) -> bool:
        body = self.response_body
        return bool(body and ("sse" in body or "eventstream" in body))

    def response_chunks(self) -> list[bytes]:
        """The wire bytes of :attr:`response_body`, one chunk per event
        (:func:`~.body.body_chunks`), kept for the next replay of this interaction while
        its body is the same object: a cassette replayed again in the process (shared by
        tests, repeated) frames an event stream's messages, CRCs included, once."""
        body, cached = self.response_body, self._chunks
        if cached is None or cached[0] is not body:
            cached = self._chunks = (body, body_chunks(body))
        return list(cached[1])

    #: Why the client cannot read the response, with the body, headers and status it was
    #: found of (see :meth:`unreadable`).
    _unreadable: tuple[Body, dict[str, str], int, str | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def unreadable(self) -> str | None:
        """Why a client cannot read the response (a successful one that is not the JSON it
        says it is, see :func:`~.body.not_json`), else ``None``; found once while its
        body, headers and status stay the same (a cassette replayed again in the process)."""
        body, headers, status = self.response_body, self.response_headers, self.status
        known = self._unreadable
        if known is None or known[0] is not body or known[1] is not headers or known[2] != status:
            kind = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
            found = not_json(body, kind) if 200 <= status < 300 else None
            known = self._unreadable = (body, headers, status, found)
        return known[3]


def native_document(interactions: list[Interaction]) -> NativeDocument:
    """The document of a cassette in the package's format, before it is written as text."""
    return {
        "cassette": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "interactions": [interaction.to_dict() for interaction in interactions],
    }


# -- reading -------------------------------------------------------------------------


def read_headers(raw: object) -> dict[str, str]:
    """Headers of any stored shape as a dict of lower-case names to strings."""
    if not raw:
        return {}
    if isinstance(raw, Mapping):
        items: Iterable[tuple[object, object]] = raw.items()
    elif isinstance(raw, Iterable):
        items = raw
    else:
        raise TypeError(f"'{type(raw).__name__}' object is not iterable")
    return {
        str(name).lower(): value if isinstance(value, str) else _header_text(value)
        for name, value in items
    }


def _header_text(value: object) -> str:
    if isinstance(value, list):
        if len(value) == 1 and type(value[0]) is str:  # vcrpy's usual one value
            return value[0]
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


_BODY_KINDS = ("json", "sse", "text", "base64", "multipart", "eventstream")


def read_body(body: object) -> Body:
    """A stored body, checked: ``None`` or a mapping with exactly one known kind."""
    if body is None:
        return None
    if not isinstance(body, Mapping) or len(body) != 1 or next(iter(body)) not in _BODY_KINDS:
        shown = sorted(body) if isinstance(body, Mapping) else type(body).__name__
        raise ValueError(f"a body is {shown}; expected null or one of {', '.join(_BODY_KINDS)}")
    kind, value = next(iter(body.items()))
    if kind == "json":
        return {"json": value}
    if kind in ("sse", "eventstream"):
        if not isinstance(value, list):
            raise ValueError(f"an {kind} body is {type(value).__name__}; expected a list of events")
        return {kind: value}
    if kind == "multipart":  # a request's upload, part by part
        from pytest_agentctx.traffic.cassettes.multipart import check_stored

        return {"multipart": check_stored(value)}
    if not isinstance(value, str):
        raise ValueError(f"a {kind} body is {type(value).__name__}; expected a string")
    return {"text": value} if kind == "text" else {"base64": value}


def read_test_id(value: object) -> str:
    """A stored ``test_id``: a node id, or ``""`` when absent."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"test_id is {type(value).__name__}; expected a test's node id")
    return value


def read_role(value: object) -> str:
    """A stored ``role``: one of the roles but ``"agent"``, or ``"agent"`` when absent."""
    if value is None:
        return DEFAULT_ROLE
    if not isinstance(value, str) or value not in ROLES:
        raise ValueError(f"role is {value!r}; expected one of {', '.join(ROLES[1:])} or none")
    return value


def read_recorded_on(value: object) -> str:
    """A stored ``recorded_on``: a UTC day ``YYYY-MM-DD``, or ``""`` when absent."""
    if value is None:
        return ""
    if isinstance(value, date) and not isinstance(value, datetime):  # a YAML date
        return value.isoformat()
    try:
        if not isinstance(value, str) or len(value) != 10:
            raise ValueError
        date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"recorded_on is {value!r}; expected a day YYYY-MM-DD") from None
    return value


def read_partial(value: object) -> bool:
    """A stored ``partial`` flag: ``true``, or absent for a whole response."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"partial is {type(value).__name__}; expected true or false")
    return value


def read_mcp_stream(value: object) -> McpStream | None:
    """A stored ``mcp_stream`` (:class:`McpStream`), or ``None`` when absent."""
    if value is None:
        return None
    after = value.get("after") if isinstance(value, Mapping) else None
    if (
        not isinstance(value, Mapping)
        or not isinstance(after, list)
        or not all(type(n) is int and n >= 0 for n in after)
    ):
        raise ValueError(
            f"mcp_stream is {value!r}; expected {{'after': [counts of messages, >= 0]}}"
        )
    stream: McpStream = {"after": list(after)}
    opened = value.get("open")
    if opened is not None:
        if not isinstance(opened, bool):
            raise ValueError(f"mcp_stream.open is {type(opened).__name__}; expected true or false")
        stream["open"] = opened
    return stream


def read_status(value: object) -> int:
    """A stored status code, as ``int()`` reads it."""
    if isinstance(value, int | float | str | bytes | bytearray):
        return int(value)
    raise TypeError(
        "int() argument must be a string, a bytes-like object or a real number, not "
        f"'{type(value).__name__}'"
    )


def field_of(value: object, key: str) -> object:
    """``value[key]`` of a mapping read from a file (:class:`KeyError` when it has none,
    :class:`TypeError` when it is no mapping)."""
    if isinstance(value, Mapping):
        return value[key]
    raise TypeError(f"{type(value).__name__} indices must be integers or slices, not str")


def optional_field(value: object, key: str) -> object:
    """``value.get(key)`` of a mapping read from a file (:class:`TypeError` when it is no
    mapping)."""
    if isinstance(value, Mapping):
        return value.get(key)
    raise TypeError(f"'{type(value).__name__}' object has no attribute 'get'")


def check_encoded(interaction: Interaction) -> None:
    """A response kept with its ``content-encoding`` (a body this package could not decode
    when it was recorded) is served as it is, for the client to decode: refused
    (:class:`CassetteFormatError`) when it decodes past the ``body_bytes`` limit, so that
    no client inflates a bomb. Only such responses are decoded here."""
    encoding = interaction.response_headers.get("content-encoding")
    if not encoding or not interaction.response_body:
        return
    try:
        decode_content(body_bytes(interaction.response_body), encoding)
    except BodyTooLarge as exc:
        what = f"a response body with a {exc}"
        raise CassetteFormatError(
            str(LimitExceeded(interaction.origin, what, "body_bytes"))
        ) from None
    except (UndecodableBody, ValueError):
        pass  # the client finds it undecodable, as it would the server's bytes


def from_native(data: Mapping[str, object], where: str) -> list[Interaction]:
    """The interactions of a document in the package's format (``where``: its file, for
    messages); :class:`CassetteFormatError` for another version or a malformed one."""
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise CassetteFormatError(
            f"{where}: cassette format version {version!r}; this pytest-agentctx reads version "
            f"{FORMAT_VERSION}. Re-record it: pytest --agent-record, or upgrade pytest-agentctx."
        )
    items = data.get("interactions") or []
    if not isinstance(items, list):
        raise CassetteFormatError(f"{where}: 'interactions' is not a list")
    out = []
    for index, item in enumerate(items):
        try:
            request, response = field_of(item, "request"), field_of(item, "response")
            out.append(
                Interaction(
                    method=str(field_of(request, "method")).upper(),
                    url=str(field_of(request, "url")),
                    request_headers=read_headers(optional_field(request, "headers")),
                    request_body=read_body(optional_field(request, "body")),
                    status=read_status(field_of(response, "status")),
                    response_headers=read_headers(optional_field(response, "headers")),
                    response_body=read_body(optional_field(response, "body")),
                    origin=f"{where}#{index}",
                    test_id=read_test_id(optional_field(item, "test_id")),
                    partial=read_partial(optional_field(item, "partial")),
                    mcp_stream=read_mcp_stream(optional_field(item, "mcp_stream")),
                    role=read_role(optional_field(item, "role")),
                    recorded_on=read_recorded_on(optional_field(item, "recorded_on")),
                )
            )
            check_encoded(out[-1])
        except (KeyError, TypeError, ValueError) as exc:
            raise CassetteFormatError(
                f"{where}: interaction #{index} is malformed ({type(exc).__name__}: {exc}); "
                "each needs request.method, request.url and response.status, bodies of "
                "the form {'json': ...}, {'sse': [...]}, {'text': ...}, {'base64': ...} or "
                "{'multipart': {'boundary': ..., 'parts': [...]}}, "
                "and, if it has one, a test_id that is a test's node id (a string), a "
                "partial flag that is true or false, an mcp_stream of the form "
                "{'after': [counts], 'open': true}, a role that is judge or user_sim and a "
                "recorded_on day YYYY-MM-DD. "
                "Fix the file or re-record it with pytest --agent-record."
            ) from None
    return out
