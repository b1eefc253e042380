"""The redactor every file the plugin writes passes: secrets replaced by ``REDACTED``.

:class:`Redactor` knows the secret values (the values of the secret environment variables,
values given to it, and values it learned from requests) and replaces each wherever it
shows:

* in text, as it is or percent-encoded;
* in header pairs (secret headers whole, other values for the known secret values) and
  header names; in URLs: credentials, key-like query parameters, and the known values
  anywhere (path included);
* in JSON values: every string, object keys included, at any depth;
* in bytes (images, audio): the secret's bytes, and its base64 forms, overwritten in
  place by as many bytes of ``REDACTED`` (lengths and offsets of the format stay valid).

Cassettes use it through their own redactor, which adds the bodies and response headers a
cassette stores (:mod:`pytest_agentctx.traffic.cassettes.redact`); snapshots, reports and
failure text use it through the active redactor (:mod:`pytest_agentctx.redaction.active`).
Imports nothing of the package.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_SECRET_ENV",
    "DEFAULT_SECRET_HEADERS",
    "MIN_SECRET",
    "REDACTED",
    "Redactor",
    "json_text",
]

REDACTED = "REDACTED"

#: Header names whose values are always replaced (compared case-insensitively).
DEFAULT_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "cookie",
        "set-cookie",
        "x-goog-api-key",
    }
)

#: Environment variables whose values are scrubbed wherever they appear.
DEFAULT_SECRET_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)

_KEYLIKE_PARAM = re.compile(
    r"(^|[_-])(key|api[_-]?key|apikey|token|access[_-]?token|secret|sig|signature|password)$",
    re.IGNORECASE,
)
#: Values shorter than this are never treated as secrets (they would redact plain words).
MIN_SECRET = 8
#: Characters no JSON encoder escapes: a secret made of them shows in JSON text as it is.
_PLAIN = re.compile(r"[A-Za-z0-9._~-]+")

#: The compact JSON text of a value, as :meth:`Redactor.json` probes it.
json_text = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)  # the values learned grow one by one: each computed once
def _forms(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """How ``value`` may show in text (as it is, percent-encoded) and in JSON text."""
    needles = tuple(dict.fromkeys((value, quote(value, safe=""), quote_plus(value))))
    return needles, tuple(dict.fromkeys(json_text(needle)[1:-1] for needle in needles))


def _environment_reader(names: Iterable[str]) -> tuple[Any, Any]:
    """What :meth:`Redactor.refresh` compares, read cheaply: the stored (encoded) values of
    ``names`` in ``os.environ``'s own mapping, and the way to read them again.

    ``os.environ`` keeps its values encoded in ``_data`` (bytes on POSIX): a lookup there
    is a plain dict lookup, where ``os.environ.get`` encodes the name and decodes the
    value (13 names: about 13 µs a request, against under 1 µs). Where ``os.environ`` is
    not CPython's ``_Environ`` (replaced by a test, another interpreter), the plain
    mapping is read instead.
    """
    environ = os.environ
    data = getattr(environ, "_data", None)
    encodekey = getattr(environ, "encodekey", None)
    if isinstance(data, dict) and callable(encodekey):
        keys = tuple(encodekey(name) for name in names)
        return environ, lambda: tuple(map(data.get, keys))
    return environ, lambda: tuple(environ.get(name) for name in names)


@functools.lru_cache(maxsize=256)  # a test's URLs repeat: parse each once
def _url_parts(url: str) -> tuple[SplitResult, tuple[tuple[str, str], ...]]:
    """``url`` split, with user:password replaced, and its query's pairs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=f"{REDACTED}@{host}")
    pairs = tuple(parse_qsl(parts.query, keep_blank_values=True)) if parts.query else ()
    return parts, pairs


@dataclass
class Redactor:
    """Replaces secrets with ``REDACTED`` in text, header pairs, URLs, JSON values and
    bytes.

    The secret values are those of the environment variables in ``env`` (read again by
    :meth:`refresh`, so a key set after the cassette started is still scrubbed), the
    ``extra_values``, and the values :meth:`learn` saw in requests' secret headers,
    cookies and key-like query parameters: a server that echoes a key back in its
    response cannot put it into a cassette.
    """

    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    env: Iterable[str] = DEFAULT_SECRET_ENV
    extra_values: Iterable[str] = ()
    _values: tuple[str, ...] = field(init=False, default=())
    #: The values and their percent-encoded forms, as they may appear in text.
    _needles: tuple[str, ...] = field(init=False, default=())
    #: The needles as they appear in JSON text (escaped), for :meth:`json`'s probe.
    _probes: tuple[str, ...] = field(init=False, default=())
    #: The needles as UTF-8, for a look at the raw text a body was read from.
    _raw_needles: tuple[bytes, ...] = field(init=False, default=())
    #: Whether every needle is plain (see :meth:`_clean`).
    _plain: bool = field(init=False, default=True)
    #: Whether a needle holds a bracket, and so could straddle two events of a stream.
    _straddles: bool = field(init=False, default=False)
    _learned: set[str] = field(init=False, default_factory=set)
    _env_values: tuple[str, ...] = field(init=False, default=())
    #: ``os.environ`` as it was read, the raw values of ``env`` there, and their reader.
    _environ: Any = field(init=False, default=None, repr=False)
    _env_raw: tuple[Any, ...] = field(init=False, default=(), repr=False)
    _read_env: Any = field(init=False, default=None, repr=False)
    #: The last request :meth:`learn` saw, as its caller's ``signature``: the same headers
    #: and URL again teach nothing new (what is learned is never forgotten).
    _learned_from: Any = field(init=False, default=None, repr=False)
    #: :meth:`url` of the URLs seen since the secrets last changed.
    _urls: dict[str, str] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.headers = frozenset(h.lower() for h in self.headers)
        self.env = tuple(self.env)
        self.extra_values = tuple(self.extra_values)
        self._env_values = tuple(os.environ.get(name, "") for name in self.env)
        self._environ, self._read_env = _environment_reader(self.env)
        self._env_raw = self._read_env()
        self._rebuild()

    def refresh(self) -> None:
        """Read the secret environment variables again."""
        if os.environ is not self._environ:  # replaced: read it the plain way from now on
            self._environ, self._read_env = _environment_reader(self.env)
        env_raw = self._read_env()
        if env_raw == self._env_raw:
            return
        self._env_raw = env_raw
        env_values = tuple(os.environ.get(name, "") for name in self.env)
        if env_values != self._env_values:
            self._env_values = env_values
            self._rebuild()

    def learn(
        self, headers: Iterable[tuple[str, str]], url: str = "", *, signature: Any = None
    ) -> None:
        """Remember the secret values a request carries (secret headers, cookies, key-like
        query parameters, URL credentials), to scrub them wherever they appear.

        ``signature``, when given, stands for ``headers`` and ``url`` (for instance their
        raw bytes): a request with the signature of the one before is not read again.
        """
        if signature is not None:
            if signature == self._learned_from:
                return
            self._learned_from = signature
        found: set[str] = set()
        for name, value in headers:
            lowered = name.lower()
            if lowered in ("cookie", "set-cookie"):
                found.update(part.partition("=")[2].strip() for part in value.split(";"))
            if lowered in self.headers:
                found.add(value.strip())
                scheme, _, token = value.strip().partition(" ")
                if token and scheme.isalpha():
                    found.add(token.strip())
        if url:
            parts = urlsplit(url)
            pairs = parse_qsl(parts.query, keep_blank_values=True)
            found.update(value for name, value in pairs if _KEYLIKE_PARAM.search(name))
            if parts.password:
                found.add(parts.password)
        found = {value for value in found if len(value) >= MIN_SECRET and value != REDACTED}
        if not found <= self._learned:
            self._learned |= found
            self._rebuild()

    def _rebuild(self) -> None:
        values = [*self._env_values, *self.extra_values, *self._learned]
        # Longest first, so a key that contains another is replaced whole; short values
        # (under 8 characters) would redact ordinary words, so they are left alone.
        self._values = tuple(
            sorted(
                {v for v in values if len(v) >= MIN_SECRET and v != REDACTED},
                key=lambda v: (-len(v), v),
            )
        )
        forms = [_forms(value) for value in self._values]
        self._needles = tuple(
            sorted({n for needles, _ in forms for n in needles}, key=lambda v: (-len(v), v))
        )
        self._probes = tuple({p: None for _, probes in forms for p in probes})
        # To tell whether a text holds a secret, the needles that hold no other suffice
        # ("Bearer sk-..." holds "sk-..."): they are the ones that must be plain.
        least = [n for n in self._needles if not any(o != n and o in n for o in self._needles)]
        self._raw_needles = tuple(n.encode() for n in least)
        self._plain = all(_PLAIN.fullmatch(n) for n in least)
        self._straddles = any(c in n for n in self._needles for c in "{}[]")
        self._urls = {}

    @property
    def secret_values(self) -> tuple[str, ...]:
        """The literal secret values scrubbed everywhere."""
        return self._values

    # -- text, headers, URLs ---------------------------------------------------------

    def text(self, value: str) -> str:
        """``value`` with every known secret value (or its percent-encoded form) replaced."""
        for secret in self._needles:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def _found_in(self, text: str) -> bool:
        return any(secret in text for secret in self._needles)

    def header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Header pairs with secret headers and secret values (in names too) redacted."""
        return [
            (self.text(name), REDACTED if name.lower() in self.headers else self.text(value))
            for name, value in items
        ]

    def url(self, url: str) -> str:
        """``url`` with credentials, key-like query parameters and secret values (in the
        path too, as they are or percent-encoded) redacted."""
        known = self._urls.get(url)
        if known is None:
            if len(self._urls) >= 256:  # a test's URLs repeat: keep the last few only
                self._urls.clear()
            known = self._urls[url] = self._url(url)
        return known

    def _url(self, url: str) -> str:
        parts, pairs = _url_parts(url)
        if parts.query:
            redacted = [
                (k, REDACTED if _KEYLIKE_PARAM.search(k) else self.text(v)) for k, v in pairs
            ]
            parts = parts._replace(query=urlencode(redacted, safe=":/,"))
        return self.text(urlunsplit(parts))

    # -- JSON values and bytes -------------------------------------------------------

    def json(self, value: Any, *, raw: bytes | None = None) -> Any:
        """A JSON value with every string, object keys included, scrubbed of secret values;
        ``value`` itself when it holds none.

        ``raw``, the JSON text ``value`` was read from when it is at hand, lets a value with
        no secret go without a look at its parts (see :meth:`_clean`).
        """
        if not self._values or self._clean(raw):
            return value
        try:
            probe = json_text(value)
        except (TypeError, ValueError):  # not plain JSON: look at every part
            return self._json(value)
        return self._json(value) if self._probed(probe) else value

    def _clean(self, raw: bytes | None) -> bool:
        """Whether ``raw``, the text a value was read from, shows it holds no secret whole.

        Only when every secret is plain (letters, digits, ``-_.~``, which no JSON encoder
        escapes): then a secret in any string of the value is in ``raw`` as it is.
        """
        return raw is not None and self._plain and not any(n in raw for n in self._raw_needles)

    def _json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self._json(item) for item in value]
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                name = self.text(key) if isinstance(key, str) else key
                while name in out:  # two keys that redact alike: both kept
                    name = f"{name}~"
                out[name] = self._json(item)
            return out
        return value

    def _probed(self, json_text: str) -> bool:
        """Whether a secret shows in the JSON text of a value."""
        return any(secret in json_text for secret in self._probes)

    def binary(self, raw: bytes) -> bytes:
        """``raw`` with each secret's bytes, and its base64 forms, overwritten in place by
        as many bytes of ``REDACTED``: lengths and offsets in a binary format stay valid."""
        for needle in self._byte_needles():
            start = raw.find(needle)
            while start != -1:
                mask = (REDACTED.encode() * (len(needle) // len(REDACTED) + 1))[: len(needle)]
                raw = raw[:start] + mask + raw[start + len(needle) :]
                start = raw.find(needle, start + len(needle))
        return raw

    def _byte_needles(self) -> list[bytes]:
        needles = {needle.encode() for needle in self._needles}
        for value in self._values:
            needles |= _base64_cores(value.encode())
        return sorted(needles, key=lambda n: (-len(n), n))

    def _base64(self, text: str) -> str:
        raw = base64.b64decode(text)
        scrubbed = self.binary(raw)
        return text if scrubbed == raw else base64.b64encode(scrubbed).decode("ascii")


def _base64_cores(secret: bytes) -> set[bytes]:
    """The base64 characters that only ``secret``'s bits decide, at each of the three
    alignments it can have in a longer encoded text (standard and URL-safe alphabets)."""
    cores: set[bytes] = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret)
        core = encoded[-(-pad * 8 // 6) : (pad + len(secret)) * 8 // 6]
        if len(core) >= MIN_SECRET:
            cores |= {core, core.translate(bytes.maketrans(b"+/", b"-_"))}
    return cores
