"""Cassettes written in vcrpy's format (``agent_cassette_format = vcr``).

A team that replays some tests with vcrpy or pytest-recording, or moves between the two
tools, keeps one kind of file: vcrpy's YAML (version 1), which this package reads as well
(:func:`~pytest_agentctx.traffic.cassettes.store.load_cassette`). Each interaction is
written as vcrpy writes one:

- ``request``: ``method``, ``uri``, ``body`` (the bytes sent, as text; ``null`` when
  empty) and ``headers`` (each a list of values);
- ``response``: ``status`` (``code`` and ``message``), ``headers`` and ``body.string``,
  the body as the client read it.

The bodies are those this package stores: secrets redacted, the ``content-encoding``
undone (so the ``content-encoding``, ``content-length`` and ``transfer-encoding`` headers
are left out, as for the package's own format), a stream as its events' bytes. Binary bodies
are written as YAML ``!!binary``, which vcrpy reads as bytes. What vcrpy has no place for
goes in keys of the interaction it does not read: ``test_id`` (who recorded it, in a shared
cassette), ``partial`` (a stream recorded in part) and ``mcp_stream`` (when an MCP
server's streamed events came, see :class:`~.fileformat.McpStream`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentctx._untrusted import LimitExceeded
from pytest_agentctx.traffic.cassettes.body import (
    Body,
    BodyTooLarge,
    body_bytes,
    decompress,
    encode_body,
    kept_whole,
)
from pytest_agentctx.traffic.cassettes.fileformat import (
    Interaction,
    check_encoded,
    field_of,
    optional_field,
    read_headers,
    read_mcp_stream,
    read_partial,
    read_recorded_on,
    read_role,
    read_status,
    read_test_id,
)
from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.roles import DEFAULT_ROLE

#: Response headers that describe the wire encoding of a body stored decoded.
_ENCODING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})

#: The version of vcrpy's cassette format written.
VCR_VERSION = 1


def _vcr_body(body: Body) -> str | bytes | None:
    """A stored body as vcrpy keeps it: text, bytes for a binary body, None when empty."""
    if body is None:
        return None
    if "base64" in body:
        return base64.b64decode(body["base64"])
    if "eventstream" in body:  # AWS's binary event stream, as vcrpy keeps it
        return body_bytes(body)
    raw = body_bytes(body)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # an upload with a binary part
        return raw


def _reason(status: int) -> str:
    from http import HTTPStatus  # written only: reading a cassette needs no http

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


if TYPE_CHECKING:  # the shapes written, for type checkers only: reading imports no typing
    from typing import NotRequired, TypedDict

    from pytest_agentctx.redaction.redactor import Redactor as BaseRedactor
    from pytest_agentctx.traffic.cassettes.fileformat import McpStream

    class VcrRequest(TypedDict):
        """A request as vcrpy writes it."""

        body: str | bytes | None
        headers: dict[str, list[str]]
        method: str
        uri: str

    class VcrStatus(TypedDict):
        code: int
        message: str

    class VcrResponse(TypedDict):
        """A response as vcrpy writes it."""

        body: dict[str, str | bytes]
        headers: dict[str, list[str]]
        status: VcrStatus

    class VcrInteraction(TypedDict):
        """An interaction as vcrpy writes it, with this package's keys vcrpy ignores."""

        request: VcrRequest
        response: VcrResponse
        test_id: NotRequired[str]
        partial: NotRequired[bool]
        mcp_stream: NotRequired[McpStream]
        role: NotRequired[str]
        recorded_on: NotRequired[str]


def vcr_interaction(interaction: Interaction) -> VcrInteraction:
    """One :class:`~pytest_agentctx.traffic.cassettes.fileformat.Interaction` as vcrpy writes it."""
    data: VcrInteraction = {
        "request": {
            "body": _vcr_body(interaction.request_body),
            "headers": {name: [value] for name, value in interaction.request_headers.items()},
            "method": interaction.method,
            "uri": interaction.url,
        },
        "response": {
            "body": {"string": _vcr_body(interaction.response_body) or ""},
            "headers": {name: [value] for name, value in interaction.response_headers.items()},
            "status": {"code": interaction.status, "message": _reason(interaction.status)},
        },
    }
    if interaction.test_id:
        data["test_id"] = interaction.test_id
    if interaction.partial:
        data["partial"] = True
    if interaction.mcp_stream is not None:
        data["mcp_stream"] = interaction.mcp_stream
    if interaction.role != DEFAULT_ROLE:
        data["role"] = interaction.role
    if interaction.recorded_on:
        data["recorded_on"] = interaction.recorded_on
    return data


def dump_vcr(interactions: list[Interaction]) -> str:
    """The text of a cassette in vcrpy's YAML format."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    data = {
        "interactions": [vcr_interaction(interaction) for interaction in interactions],
        "version": VCR_VERSION,
    }
    text: str = yaml.dump(
        data, Dumper=dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
    )
    return text


# -- reading ----------------------------------------------------------------------


def _as_bytes(value: object) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _read_body(
    container: object, headers: dict[str, str], is_response: bool, url: str = ""
) -> tuple[Body, bool]:
    """The stored form of a vcrpy body, and whether its ``content-encoding`` was undone
    (a response's ``url`` says whether it is kept as its text, see :func:`kept_whole`)."""
    if not isinstance(container, Mapping):
        raise TypeError(f"'{type(container).__name__}' object has no attribute 'get'")
    if "parsed_body" in container:  # pydantic-ai's serializer
        return {"json": container["parsed_body"]}, True
    raw_body = container.get("body")
    if is_response and isinstance(raw_body, Mapping):
        raw_body = raw_body.get("string")
    raw = _as_bytes(raw_body)
    decoded, ok = decompress(raw, headers.get("content-encoding"))
    if not ok:
        return {"base64": base64.b64encode(raw).decode("ascii")}, False
    return kept_whole(url, encode_body(decoded, headers.get("content-type")), decoded), True


def from_vcr(data: Mapping[str, object], where: str) -> list[Interaction]:
    """The interactions of a document in vcrpy's format (``where``: its file, for
    messages); :class:`CassetteFormatError` for a malformed one."""
    items = data.get("interactions") or []
    if not isinstance(items, list):
        raise CassetteFormatError(f"{where}: 'interactions' is not a list")
    out = []
    for index, item in enumerate(items):
        try:
            request, response = field_of(item, "request"), field_of(item, "response")
            request_headers = read_headers(optional_field(request, "headers"))
            response_headers = read_headers(optional_field(response, "headers"))
            status = field_of(response, "status")
            code = read_status(status["code"] if isinstance(status, Mapping) else status)
            url = str(field_of(request, "uri"))
            response_body, decoded = _read_body(response, response_headers, True, url)
            # A body that could not be decoded is kept as it was sent, with its encoding.
            keep = set() if decoded else {"content-encoding"}
            interaction = Interaction(
                method=str(field_of(request, "method")).upper(),
                url=url,
                request_headers={
                    k: v for k, v in request_headers.items() if k not in _ENCODING_HEADERS
                },
                request_body=_read_body(request, request_headers, False)[0],
                status=code,
                response_headers={
                    k: v
                    for k, v in response_headers.items()
                    if k not in _ENCODING_HEADERS or k in keep
                },
                response_body=response_body,
                origin=f"{where}#{index}",
                # written by this package in vcrpy's format (vcrpy ignores these keys)
                test_id=read_test_id(optional_field(item, "test_id")),
                partial=read_partial(optional_field(item, "partial")),
                mcp_stream=read_mcp_stream(optional_field(item, "mcp_stream")),
                role=read_role(optional_field(item, "role")),
                recorded_on=read_recorded_on(optional_field(item, "recorded_on")),
            )
        except BodyTooLarge as exc:
            raise CassetteFormatError(
                str(LimitExceeded(f"{where}#{index}", f"a body with a {exc}", "body_bytes"))
            ) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CassetteFormatError(
                f"{where}: vcrpy interaction #{index} is malformed ({type(exc).__name__}: "
                f"{exc}); expected request.method/uri and response.status.code."
            ) from None
        check_encoded(interaction)
        out.append(interaction)
    return out


# -- converting -------------------------------------------------------------------


#: Why :func:`vcr_json` left a cassette as it is: it is JSON already, or JSON cannot
#: say one of its values as YAML reads it back.
ALREADY_JSON = "written in JSON already"
HOLDS_BYTES = (
    "it holds bytes JSON cannot hold (a !!binary body that is not UTF-8 text, once its "
    "content-encoding is undone)"
)
NOT_IN_JSON = (
    "it holds a value JSON cannot say as YAML reads it back (a date, NaN or an infinity, "
    "a character YAML does not keep, or nesting past agent_max_depth)"
)


def vcr_json(path: Path, redactor: BaseRedactor | None = None) -> tuple[str | None, str]:
    """The vcrpy cassette at ``path`` written in JSON (see :func:`convert_vcr_yaml`), or
    ``None`` and why not (:data:`ALREADY_JSON`, :data:`HOLDS_BYTES`, :data:`NOT_IN_JSON`,
    ``""`` for a file that is no vcrpy cassette). Writes nothing; raises what reading
    the file raises (:class:`OSError`, :class:`UnicodeDecodeError`, a YAML error,
    :class:`~pytest_agentctx._untrusted.LimitExceeded`).

    A response body vcrpy wrote as bytes (``!!binary``) is written as this package's vcr
    writer writes one: as text, its ``content-encoding`` undone, with no
    ``content-encoding``, ``content-length`` nor ``transfer-encoding`` header, so that
    vcrpy hands the client the same body, decoded (:func:`_text_bodies`). With a
    ``redactor``, what is written passes it (:func:`_redact_document`): secret headers,
    key-like query parameters and known secret values are written ``REDACTED``, as in a
    cassette this package records."""
    from pytest_agentctx._untrusted import read_untrusted
    from pytest_agentctx.traffic.cassettes import yamlread

    text = read_untrusted(path).decode("utf-8")
    if text.startswith("{") and yamlread.json_document(text) is not None:
        return None, ALREADY_JSON
    document = yamlread.load(text, str(path))
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        return None, ""
    _text_bodies(document["interactions"])
    if redactor is not None:
        _redact_document(document["interactions"], redactor)
    converted = yamlread.dump_json(document)
    if converted is None or yamlread.safe_load(converted) != document:
        return None, HOLDS_BYTES if _holds_bytes(document) else NOT_IN_JSON
    return converted, ""


def _redact_document(interactions: list[object], redactor: BaseRedactor) -> None:
    """Pass, in place, what each vcrpy interaction writes through ``redactor``: the URI,
    every header (a secret header's value becomes ``REDACTED``) and every text body."""
    for item in interactions:
        if not isinstance(item, dict):
            continue
        for side in ("request", "response"):
            part = item.get(side)
            if isinstance(part, dict):
                _redact_part(part, redactor)


def _redact_part(part: dict[object, object], redactor: BaseRedactor) -> None:
    if isinstance(part.get("uri"), str):
        part["uri"] = redactor.url(str(part["uri"]))
    headers = part.get("headers")
    if isinstance(headers, dict):
        part["headers"] = {
            name: [_header_value(redactor, str(name), value) for value in values]
            if isinstance(values, list)
            else _header_value(redactor, str(name), values)
            for name, values in headers.items()
        }
    body = part.get("body")
    if isinstance(body, str):
        part["body"] = redactor.text(body)
    elif isinstance(body, dict) and isinstance(body.get("string"), str):
        body["string"] = redactor.text(str(body["string"]))


def _header_value(redactor: BaseRedactor, name: str, value: object) -> object:
    from pytest_agentctx.redaction.redactor import REDACTED

    if not isinstance(value, str):
        return value
    return REDACTED if redactor.is_secret_header(name, value) else redactor.text(value)


def _text_bodies(interactions: list[object]) -> None:
    """Put, in place, each response body held as bytes that is UTF-8 text once its
    ``content-encoding`` is undone (as :func:`from_vcr` undoes it) as that text, and
    drop the headers that describe its encoding when it had one. vcrpy encodes a text
    body in UTF-8: the client gets the bytes it got from the encoded body once decoded,
    and this package reads the same interaction. Any other body is left as it is."""
    for item in interactions:
        response = item.get("response") if isinstance(item, dict) else None
        if isinstance(response, dict):
            _text_body(response)


def _text_body(response: dict[object, object]) -> None:
    body, headers = response.get("body"), response.get("headers")
    if not isinstance(body, dict) or not isinstance(body.get("string"), bytes):
        return
    try:
        encoding = read_headers(headers).get("content-encoding")
    except (TypeError, ValueError):
        return
    if encoding is not None and not isinstance(headers, dict):
        return  # headers of a shape vcrpy does not write: left as they are
    try:
        decoded, ok = decompress(body["string"], encoding)
        body["string"] = decoded.decode("utf-8") if ok else body["string"]
    except (BodyTooLarge, UnicodeDecodeError):
        return
    if ok and encoding is not None and isinstance(headers, dict):
        response["headers"] = {
            name: value
            for name, value in headers.items()
            if str(name).lower() not in _ENCODING_HEADERS
        }


def _holds_bytes(value: object) -> bool:
    if isinstance(value, bytes):
        return True
    if isinstance(value, dict):
        return any(_holds_bytes(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_bytes(item) for item in value)
    return False


def convert_vcr_yaml(path: Path) -> bool:
    """Rewrite the vcrpy cassette at ``path`` as the same document written in JSON, the
    subset of YAML that vcrpy, pytest-recording and PyYAML read as they read the YAML,
    and that this package reads at JSON's speed; whether it was rewritten. A cassette
    JSON cannot say as YAML reads it back (a ``!!binary`` body that is no text, a date,
    ``NaN``), one already converted, or a file that is no vcrpy cassette is
    left as it is (:func:`vcr_json` says why); a ``!!binary`` response body that is UTF-8
    text once decoded is written decoded, as this package's vcr writer writes one. The
    file keeps its name, so every tool still finds it."""
    from pytest_agentctx._files import atomic_write_bytes

    converted, _ = vcr_json(path)
    if converted is None:
        return False
    atomic_write_bytes(path, converted.encode("utf-8"))
    return True
