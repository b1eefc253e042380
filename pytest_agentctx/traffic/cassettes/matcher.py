"""LLM-aware request matching: method, host, path, query and the normalised JSON body.

A request's key is built once; the cassette keeps an index from key to the recorded
interactions with that key, in order, so replay costs the same whatever the cassette size
and identical requests replay their recorded answers in order. Bodies are compared as
canonical JSON (sorted keys, no whitespace) with volatile fields removed: a default list
plus the user's own, given as dotted paths (``metadata.user_id``; ``*`` matches any key
or list index). Query parameters are compared in sorted order, without those in
:data:`IGNORED_QUERY`. An MCP request (a JSON-RPC 2.0 body) is compared without its JSON-RPC
``id``, its progress token and the legacy SSE transport's ``session_id`` query parameter
(:data:`~pytest_agentctx.traffic.mcp.jsonrpc.VOLATILE`; headers, ``Mcp-Session-Id`` among
them, are never compared).

Bodies are read and made canonical by orjson where it gives what :mod:`json` would: a
request is keyed several times faster, which is most of what replaying it costs beyond
the SDK's own work. :mod:`json` takes over wherever orjson would differ: integers past 64
bits (which orjson reads as floats), ``NaN`` and infinities (which orjson writes as
``null``), lone surrogates, keys that are not strings, subclasses of the JSON types, and
every body a body hook returned. Either way two bodies get the same key exactly when
:mod:`json`'s canonical texts of them are equal.

A multipart body (an upload) is matched part by part, whatever its boundary
(:func:`~.multipart.multipart_key`). Another body that is not JSON is matched byte for
byte (its key holds a digest of them). A body hook that takes a body's kind
(:class:`BodyHooks`) comes first: a form, multipart, text or binary body is then given to
the hook as :func:`~.bodykinds.hook_value` reads it, and what the hook returns is matched as
canonical JSON (``bytes`` in it as their base64).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

import orjson

from pytest_agentctx.traffic.cassettes.body import orjson_reads
from pytest_agentctx.traffic.cassettes.bodykinds import body_kind, hook_value
from pytest_agentctx.traffic.cassettes.defaults import (
    DEFAULT_IGNORED_FIELDS as DEFAULT_IGNORED_FIELDS,
)
from pytest_agentctx.traffic.cassettes.mediatypes import media_type
from pytest_agentctx.traffic.cassettes.multipart import (
    described,
    may_be_multipart,
    multipart_key,
    ordered,
    split_parts,
)
from pytest_agentctx.traffic.mcp.jsonrpc import VOLATILE, is_jsonrpc_value, normalised

#: Query parameters that do not change what a request asks. Older ``anthropic`` SDKs (and
#: cassettes recorded with them, e.g. pydantic-ai's) add ``?beta=true`` to the beta
#: endpoints; current ones do not (the ``anthropic-beta`` header names the beta), so both
#: must match each other.
IGNORED_QUERY: frozenset[tuple[str, str]] = frozenset({("beta", "true")})

_DEFAULT_PORTS = {"http": 80, "https": 443}

BodyHook = Callable[[Any], object]

#: What :func:`parse_json` returns for a body that is not JSON.
NO_JSON: Final = object()


@dataclass(frozen=True)
class RequestKey:
    """What two requests must share to match."""

    method: str
    host: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: str
    #: The role of the request (:mod:`pytest_agentctx.traffic.roles`): a request matches
    #: only recordings made under its own role.
    role: str = "agent"

    def __init__(
        self,
        method: str,
        host: str,
        path: str,
        query: tuple[tuple[str, str], ...],
        body: str,
        role: str = "agent",
    ) -> None:
        # The fields set at once: one key is made per request, and a frozen dataclass's own
        # __init__ sets each field through object.__setattr__.
        self.__dict__.update(method=method, host=host, path=path, query=query, body=body, role=role)

    def describe(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.query)
        return f"{self.method} {self.host}{self.path}{'?' + query if query else ''}"


@functools.lru_cache(maxsize=256)
def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)  # a cassette's URLs repeat: parse each once
def _host(url: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    # A test's own loopback server gets a new port on every run: the port of a loopback
    # host is not part of the match.
    if parts.port and parts.port != _DEFAULT_PORTS.get(parts.scheme) and not _loopback(host):
        host = f"{host}:{parts.port}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = tuple(sorted(pair for pair in pairs if pair not in IGNORED_QUERY))
    return host, parts.path or "/", query


def strip_fields(value: object, paths: Iterable[Sequence[str]]) -> object:
    """``value`` without the fields at the given split dotted paths (``value`` itself is
    never changed; it is returned as it is when none of the fields is there)."""
    result = value
    for path in paths:
        if type(result) is dict and path and path[0] != "*" and path[0] not in result:
            continue  # the usual case, decided without a call (as _strip decides it)
        result = _strip(result, list(path))
    return result


def _strip(value: object, path: list[str]) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if head != "*" and head not in value:
            return value
        if not rest:
            if head == "*":
                return {}
            return {k: v for k, v in value.items() if k != head}
        return {k: (_strip(v, rest) if head in ("*", k) else v) for k, v in value.items()}
    if isinstance(value, list):
        if head == "*":
            return [_strip(item, rest) for item in value] if rest else []
        if head.isdigit() and int(head) < len(value):
            index = int(head)
            if not rest:
                return value[:index] + value[index + 1 :]
            return [*value[:index], _strip(value[index], rest), *value[index + 1 :]]
    return value


class BodyHooks:
    """The body hooks of a test, from its ``body_hook``: a function is given JSON bodies
    only (the parsed value, as it always was); a mapping picks a hook per body by the
    first of its keys that applies: the body's media type (``text/csv``), its major type
    (``text/*``), its kind (one of :data:`~.bodykinds.BODY_KINDS`), then ``*/*``. Each hook is
    given the body as its kind reads (:func:`~.bodykinds.hook_value`; the JSON value, ignored
    fields removed, for ``json``) and returns what is matched."""

    __slots__ = ("given", "table")

    def __init__(self, given: BodyHook | Mapping[str, BodyHook]) -> None:
        self.given = given
        self.table: dict[str, BodyHook] = (
            {str(name).strip().lower(): hook for name, hook in given.items()}
            if isinstance(given, Mapping)
            else {"json": given}
        )

    def pick(self, kind: str, content_type: str | None) -> BodyHook | None:
        """The hook of a body of ``kind`` and ``content_type``, or ``None``."""
        table = self.table
        if len(table) == 1 and "json" in table:  # a function: JSON bodies only
            return table["json"] if kind == "json" else None
        media = media_type(content_type)
        for name in (media, media.partition("/")[0] + "/*", kind, "*/*"):
            hook = table.get(name)
            if hook is not None:
                return hook
        return None


def as_hooks(hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None) -> BodyHooks | None:
    """``hook`` as :class:`BodyHooks` (``None`` stays ``None``)."""
    if hook is None or isinstance(hook, BodyHooks):
        return hook
    return BodyHooks(hook)


@dataclass(frozen=True)
class Compared:
    """What of a request body is matched, for a miss message: its ``kind`` (one of
    :data:`~.bodykinds.BODY_KINDS`, or ``empty``), the ``value`` compared (the JSON value
    without its ignored fields, a form's fields, a multipart body's parts, the text or
    the bytes; through the body hook when one takes it: ``hooked``), its ``raw`` bytes
    (``b""`` for a JSON body) and its content type."""

    kind: str
    value: object
    raw: bytes = b""
    content_type: str = ""
    hooked: bool = False


def compared(
    body_json: object,
    raw: bytes,
    content_type: str,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None,
) -> Compared:
    """What of a body (its JSON value, or :data:`NO_JSON` and its ``raw`` bytes) is
    matched, as :func:`make_key` matches it."""
    hooks = as_hooks(hook)
    if body_json is not NO_JSON:
        chosen = hooks.pick("json", content_type) if hooks is not None else None
        value = comparable(body_json, ignored, chosen)
        return Compared("json", value, b"", content_type, chosen is not None)
    if not raw:
        return Compared("empty", None, b"", content_type)
    kind = body_kind(raw, content_type, is_json=False)
    chosen = hooks.pick(kind, content_type) if hooks is not None else None
    if chosen is None and kind == "multipart":
        parts = split_parts(raw, content_type)
        if parts is not None:  # what the key holds, readable (see .multipart)
            return Compared(kind, described(ordered(parts, content_type)), raw, content_type)
    value = hook_value(kind, raw, content_type)
    if chosen is not None:
        value = chosen(value)
    return Compared(kind, value, raw, content_type, chosen is not None)


def matched_bytes(
    body_json: object,
    raw: bytes,
    content_type: str,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None,
) -> bytes:
    """A body as vcrpy's matchers are given it (``match_on``): as the package matches it
    (:func:`compared`), in bytes: a JSON body as the cassette writes it, what a body hook
    returned as it is (bytes, text) or as canonical JSON, other bodies as they are."""
    found = compared(body_json, raw, content_type, ignored, hook)
    value = found.value
    if not found.hooked:
        if found.kind == "json":
            return json.dumps(value, ensure_ascii=False).encode()
        return raw
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    return _hooked_canonical(value).encode()


def canonical_body(
    body_json: object,
    raw: bytes | None,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None,
    *,
    finite: bool = False,
    content_type: str = "",
) -> str:
    """The body part of a key: canonical JSON, or a digest of non-JSON bytes (what a
    body hook that takes their kind returned, as canonical JSON, see :class:`BodyHooks`).

    ``finite``: ``body_json`` is known to hold no ``NaN`` or infinity (it was read by
    :func:`read_json` with orjson), so its canonical text needs no look for them."""
    if body_json is NO_JSON:
        if not raw:
            return ""
        hooks = as_hooks(hook)
        if hooks is not None:
            kind = body_kind(raw, content_type, is_json=False)
            chosen = hooks.pick(kind, content_type)
            if chosen is not None:
                value = chosen(hook_value(kind, raw, content_type))
                return f"{kind}:" + hooked_canonical(value, chosen, kind)
        parts = multipart_key(raw, content_type) if may_be_multipart(raw, content_type) else None
        if parts is not None:  # part by part, whatever the boundary (see .multipart)
            return "multipart:" + _hooked_canonical(parts)
        return "sha256:" + hashlib.sha256(raw).hexdigest()
    if hook is None:
        return canonical_json(strip_fields(body_json, ignored), finite=finite)
    chosen = as_hooks(hook).pick("json", content_type)  # type: ignore[union-attr]
    if chosen is None:
        return canonical_json(strip_fields(body_json, ignored), finite=finite)
    return hooked_canonical(comparable(body_json, ignored, chosen), chosen, "json")


def comparable(
    body_json: object,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None,
    content_type: str = "",
) -> object:
    """What of a JSON body is matched: without the ``ignored`` fields, through the hook
    that takes it (``body_json`` itself is never changed); a JSON-RPC message (MCP) without
    its volatile fields (:func:`~pytest_agentctx.traffic.mcp.jsonrpc.normalised`)."""
    value = strip_fields(normalised(body_json), ignored)
    if isinstance(hook, BodyHooks | Mapping):
        hook = as_hooks(hook).pick("json", content_type)  # type: ignore[union-attr]
    if hook is not None:
        if value is body_json and isinstance(value, dict):
            value = dict(value)  # the hook gets its own top-level copy, as it always did
        value = hook(value)
    return value


def _bytes_as_text(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: Canonical JSON of what a body hook returned: ``bytes`` in it as their base64.
_hooked_canonical = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_bytes_as_text
).encode


def hooked_canonical(value: object, hook: BodyHook, kind: str) -> str:
    """What ``hook`` returned for a ``kind`` body, as canonical JSON; an error naming the
    hook when it cannot be (a set, an object of its own)."""
    from pytest_agentctx.traffic.errors import CassetteConfigError

    if isinstance(value, bytes | bytearray):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    try:
        return _hooked_canonical(value)
    except (TypeError, ValueError) as exc:
        name = getattr(hook, "__qualname__", None) or repr(hook)
        raise CassetteConfigError(
            f"agent_cassette_config body_hook {name} returned {type(value).__name__} for a "
            f"{kind} body, which cannot be compared ({exc}); expected JSON values (dict, "
            "list, str, numbers, None), str or bytes. Fix the hook's return."
        ) from None


#: Canonical JSON: sorted keys, no whitespace (one encoder, built once).
_json_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
#: The same check for values that may hold ``NaN`` or an infinity: it refuses them.
_json_finite = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
#: orjson writing the JSON types only: values of other types (subclasses, dates,
#: dataclasses) are refused, as :mod:`json` refuses them, instead of converted.
ORJSON_PLAIN = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
#: orjson's canonical JSON: the same, with sorted keys.
_ORJSON_CANONICAL = orjson.OPT_SORT_KEYS | ORJSON_PLAIN


def canonical_json(value: object, *, finite: bool = False) -> str:
    """``value`` as canonical JSON text: sorted keys, no whitespace, text as it is.

    Two values get equal texts exactly when :mod:`json`'s texts of them
    (``sort_keys=True``, compact, ``ensure_ascii=False``) are equal; orjson writes them
    when it can, :mod:`json` otherwise (see the module docstring). ``finite``: ``value`` is
    known to hold no ``NaN`` or infinity."""
    try:
        text = orjson.dumps(value, option=_ORJSON_CANONICAL)
    except TypeError:  # orjson.JSONEncodeError is one: a value orjson does not write
        return _json_canonical(value)
    if not finite and b"null" in text:
        # orjson writes NaN and infinities as null: a value that holds one is json's.
        try:
            _json_finite(value)
        except ValueError:
            return _json_canonical(value)
    return text.decode()


def read_json(raw: bytes | str) -> tuple[object, bool]:
    """The JSON value of ``raw`` (:data:`NO_JSON` when it is not JSON) and whether it is
    known to hold no ``NaN`` or infinity.

    orjson reads it where it reads what :mod:`json` reads: not past 64-bit integers, nor
    ``NaN``, infinities, lone surrogates or other encodings than UTF-8, which orjson
    refuses and :mod:`json` then reads."""
    if not raw:
        return NO_JSON, False
    encoded = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if orjson_reads(encoded):
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(raw), False
    except (json.JSONDecodeError, UnicodeDecodeError):
        return NO_JSON, False


def parse_json(raw: bytes | None) -> object:
    """The JSON value of ``raw``, or a marker when it is not JSON."""
    return read_json(raw or b"")[0]


def make_key(
    method: str,
    url: str,
    body_json: object,
    raw: bytes | None,
    *,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | Mapping[str, BodyHook] | BodyHooks | None = None,
    finite: bool = False,
    content_type: str = "",
) -> RequestKey:
    """The match key of one request (pass ``body_json=parse_json(raw)`` when unknown;
    ``finite`` as :func:`read_json` tells it; ``content_type``: the request's, which
    picks its body hook, see :class:`BodyHooks`)."""
    host, path, query = _host(url)
    if is_jsonrpc_value(body_json):  # MCP: see jsonrpc.VOLATILE
        body_json = normalised(body_json)
        query = tuple(pair for pair in query if pair[0] not in VOLATILE.query)
    body = canonical_body(body_json, raw, ignored, hook, finite=finite, content_type=content_type)
    return RequestKey(method.upper(), host, path, query, body)


def json_diff(expected: object, actual: object, path: str = "", limit: int = 20) -> list[str]:
    """Field-level differences, one ``path: expected != actual`` line each."""
    out: list[str] = []
    _diff(expected, actual, path, out, limit)
    return out


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _diff(expected: object, actual: object, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{sub}: recorded {_short(expected[key])}, now missing")
            elif key not in expected:
                out.append(f"{sub}: not recorded, now {_short(actual[key])}")
            else:
                _diff(expected[key], actual[key], sub, out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for index in range(max(len(expected), len(actual))):
            sub = f"{path}[{index}]"
            if index >= len(actual):
                out.append(f"{sub}: recorded {_short(expected[index])}, now missing")
            elif index >= len(expected):
                out.append(f"{sub}: not recorded, now {_short(actual[index])}")
            else:
                _diff(expected[index], actual[index], sub, out, limit)
            if len(out) >= limit:
                return
        return
    if expected != actual or type(expected) is not type(actual):
        out.append(f"{path or '(body)'}: recorded {_short(expected)} != now {_short(actual)}")
