"""LLM-aware request matching: method, host, path, query and the normalised JSON body.

A request's key is built once; the cassette keeps an index from key to the recorded
interactions with that key, in order, so replay costs the same whatever the cassette size
and identical requests replay their recorded answers in order. Bodies are compared as
canonical JSON (sorted keys, no whitespace) with volatile fields removed: a default list
plus the user's own, given as dotted paths (``metadata.user_id``; ``*`` matches any key
or list index). Query parameters are compared in sorted order, without those in
:data:`IGNORED_QUERY`.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pytest_agentctx.traffic.cassettes.defaults import DEFAULT_IGNORED_FIELDS

__all__ = [
    "DEFAULT_IGNORED_FIELDS",
    "IGNORED_QUERY",
    "NO_JSON",
    "RequestKey",
    "comparable",
    "json_diff",
    "make_key",
    "strip_fields",
]


#: Query parameters that do not change what a request asks. Older ``anthropic`` SDKs (and
#: cassettes recorded with them, e.g. pydantic-ai's) add ``?beta=true`` to the beta
#: endpoints; current ones do not (the ``anthropic-beta`` header names the beta), so both
#: must match each other.
IGNORED_QUERY: frozenset[tuple[str, str]] = frozenset({("beta", "true")})

_DEFAULT_PORTS = {"http": 80, "https": 443}

BodyHook = Callable[[Any], Any]

#: What :func:`parse_json` returns for a body that is not JSON.
NO_JSON: Any = object()


@dataclass(frozen=True)
class RequestKey:
    """What two requests must share to match."""

    method: str
    host: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: str

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


def strip_fields(value: Any, paths: Iterable[Sequence[str]]) -> Any:
    """``value`` without the fields at the given split dotted paths (``value`` itself is
    never changed; it is returned as it is when none of the fields is there)."""
    result = value
    for path in paths:
        result = _strip(result, list(path))
    return result


def _strip(value: Any, path: list[str]) -> Any:
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


def canonical_body(
    body_json: Any, raw: bytes | None, ignored: Sequence[Sequence[str]], hook: BodyHook | None
) -> str:
    """The body part of a key: canonical JSON, or a digest of non-JSON bytes."""
    if body_json is NO_JSON:
        if not raw:
            return ""
        return "sha256:" + hashlib.sha256(raw).hexdigest()
    return _canonical(comparable(body_json, ignored, hook))


def comparable(body_json: Any, ignored: Sequence[Sequence[str]], hook: BodyHook | None) -> Any:
    """What of a JSON body is matched: without the ``ignored`` fields, through ``hook``
    (``body_json`` itself is never changed)."""
    value = strip_fields(body_json, ignored)
    if hook is not None:
        if value is body_json and isinstance(value, dict):
            value = dict(value)  # the hook gets its own top-level copy, as it always did
        value = hook(value)
    return value


#: Canonical JSON: sorted keys, no whitespace (one encoder, built once).
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def parse_json(raw: bytes | None) -> Any:
    """The JSON value of ``raw``, or a marker when it is not JSON."""
    if not raw:
        return NO_JSON
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return NO_JSON


def make_key(
    method: str,
    url: str,
    body_json: Any,
    raw: bytes | None,
    *,
    ignored: Sequence[Sequence[str]],
    hook: BodyHook | None = None,
) -> RequestKey:
    """The match key of one request (pass ``body_json=parse_json(raw)`` when unknown)."""
    host, path, query = _host(url)
    return RequestKey(
        method.upper(), host, path, query, canonical_body(body_json, raw, ignored, hook)
    )


def json_diff(expected: Any, actual: Any, path: str = "", limit: int = 20) -> list[str]:
    """Field-level differences, one ``path: expected != actual`` line each."""
    out: list[str] = []
    _diff(expected, actual, path, out, limit)
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _diff(expected: Any, actual: Any, path: str, out: list[str], limit: int) -> None:
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
