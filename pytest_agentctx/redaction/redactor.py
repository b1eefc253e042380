"""The redactor every file the plugin writes passes: secrets replaced by ``REDACTED``.

:class:`Redactor` knows the secret values (the values of the secret environment variables,
those named in ``env`` and those whose name says they hold a secret (:func:`secret_name`,
:func:`secret_like`), values given to it, and values it learned from requests) and
replaces each wherever it shows:

* in text: as it is, percent-encoded in any way (a form body, ``%2b``, ``%2D``...),
  ``\\u``-escaped (JSON, NDJSON), or base64-encoded (a ``data:`` URL: the characters only
  the secret decides are overwritten by as many characters of ``REDACTED``, so the base64
  text still decodes);
* in header pairs (secret headers whole: the known ones and those named like a secret,
  other values for the known secret values) and header names; in URLs: credentials,
  key-like query parameters, and the known values anywhere (path included);
* in JSON values: every string, object keys included, at any depth;
* in bytes (images, audio): the secret's bytes, and its base64 forms, overwritten in
  place by as many bytes of ``REDACTED`` (lengths and offsets of the format stay valid).

:attr:`Redactor.generation` counts the changes of the secrets: what was redacted before a
secret was learned is redacted again before it is written (see
:class:`pytest_agentctx.traffic.cassettes.saving.Scrubs`).

Cassettes use it through their own redactor, which adds the bodies and response headers a
cassette stores (:mod:`pytest_agentctx.traffic.cassettes.redact`); snapshots, reports and
failure text use it through the active redactor (:mod:`pytest_agentctx.redaction.active`).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import (
    SplitResult,
    parse_qsl,
    quote,
    quote_plus,
    unquote_plus,
    urlencode,
    urlsplit,
    urlunsplit,
)

from pytest_agentctx.redaction import shapes
from pytest_agentctx.redaction.shapes import signed_param as signed

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
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)

_KEYLIKE_PARAM = re.compile(
    r"(^|[_-])(key|api[_-]?key|apikey|token|access[_-]?token|secret|sig|signature|password)$",
    re.IGNORECASE,
)
#: Values shorter than this are never treated as secrets (they would redact plain words).
MIN_SECRET = 8
#: Printable ASCII but ``"`` and ``\\``: what JSON text holds as it is, unless its encoder
#: escaped it (``\\u0041``, ``\\/``: :func:`_escapes_ascii` tells).
_PLAIN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]+")
#: A name (of a header, of an environment variable) that says its value is a secret.
_SECRET_NAME = re.compile(
    r"token|secret|passw(?:or)?d|api.*key|authorization|cookie|credential|access.?key"
    r"|private.?key",
    re.IGNORECASE,
)
#: Values that hold no secret whatever their name: numbers and boolean words.
_NOT_SECRET = re.compile(
    r"[+-]?[0-9][0-9_.,]*(?:[eE][+-]?[0-9]+)?|true|false|yes|no|on|off|none|null|enabled?"
    r"|disabled?",
    re.IGNORECASE,
)
#: An escape of a printable ASCII character in JSON (``\u0073``) or a URL (``%73``): the
#: form a secret made of such characters can take in text it does not show in as it is.
_PERCENT_ASCII = re.compile(rb"%[2-7][0-9A-Fa-f]")
_JSON_ESCAPE = re.compile(r"\\u00([2-7][0-9A-Fa-f])")
#: A run of text between the separators of a form or a query (one encoded value at most)
#: that holds a percent-escape. Only tried where a run starts (the look-behind), so a long
#: run with no escape is read once, not once per character.
_ENCODED_RUN = re.compile(r"(?<![^\s&=;,\"'<>])[^\s&=;,\"'<>]*%[0-9A-Fa-f]{2}[^\s&=;,\"'<>]*")


@functools.lru_cache(maxsize=1024)  # the same few header and variable names, again and again
def secret_name(name: str) -> bool:
    """Whether ``name`` (a header's, an environment variable's) says it holds a secret:
    it contains ``token``, ``secret``, ``password``, ``api...key``, ``authorization``,
    ``cookie``, ``credential``, ``access-key`` or ``private-key`` (any case)."""
    return _SECRET_NAME.search(name) is not None


def secret_like(value: str, *, shortest: int = MIN_SECRET) -> bool:
    """Whether ``value``, held by a variable or header with a :func:`secret_name`, is
    taken for a secret: ``shortest`` characters or more, not a number, not a boolean word
    (``true``, ``off``, ``disabled``...), not a file path."""
    value = value.strip()
    return (
        len(value) >= max(shortest, 1)
        and value != REDACTED
        and _NOT_SECRET.fullmatch(value) is None
        and not value.startswith(("/", "~/", "./", "../"))
        and not (len(value) > 2 and value[1] == ":" and value[2] in "/\\")
    )


def _env_names(explicit: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the environment variables that are secrets by their name (see
    :func:`secret_name`; ``PYTEST_*`` never), apart from the ``explicit`` ones."""
    return tuple(
        name
        for name in os.environ
        if secret_name(name) and not name.startswith("PYTEST_") and name not in explicit
    )


#: The compact JSON text of a value, as :meth:`Redactor.json` probes it.
json_text = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)  # the values learned grow one by one: each computed once
def _forms(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """How ``value`` may show in text (as it is, percent-encoded) and in JSON text."""
    needles = tuple(dict.fromkeys((value, quote(value, safe=""), quote_plus(value))))
    return needles, tuple(dict.fromkeys(json_text(needle)[1:-1] for needle in needles))


def _environment_reader(
    names: Iterable[str],
) -> tuple[Mapping[str, str], Callable[[], tuple[object, ...]]]:
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

    The secret values are those of the environment variables in ``env`` and of those
    whose name says they hold a secret, when their value looks like one (read again by
    :meth:`refresh`, so a key set after the cassette started is still scrubbed), the
    ``extra_values``, and the values :meth:`learn` saw in requests' secret headers (the
    password of ``Authorization: Basic`` too), cookies and key-like query parameters: a
    server that echoes a key back in its response cannot put it into a cassette.
    """

    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    env: Iterable[str] = DEFAULT_SECRET_ENV
    extra_values: Iterable[str] = ()
    #: Whether the variables whose name says they hold a secret are secrets too.
    by_name: bool = True
    _values: tuple[str, ...] = field(init=False, default=())
    #: The values, their percent-encoded forms and their base64 cores (see
    #: :func:`_base64_cores`), as they may appear in text.
    _needles: tuple[str, ...] = field(init=False, default=())
    #: The needles that hold no other: a text holds a needle only if it holds one of them.
    _least: tuple[str, ...] = field(init=False, default=())
    #: What replaces each base64 core: as many characters of ``REDACTED`` (still base64).
    _masks: dict[str, str] = field(init=False, default_factory=dict, repr=False)
    #: The needles as they appear in JSON text (escaped), for :meth:`json`'s probe.
    _probes: tuple[str, ...] = field(init=False, default=())
    #: The needles as UTF-8, for a look at the raw text a body was read from.
    _raw_needles: tuple[bytes, ...] = field(init=False, default=())
    #: Whether every needle is plain (see :meth:`_clean`).
    _plain: bool = field(init=False, default=True)
    #: Whether a needle holds a bracket, and so could straddle two events of a stream.
    _straddles: bool = field(init=False, default=False)
    _learned: set[str] = field(init=False, default_factory=set)
    #: The learned values that only ever came in cookies: a server sets them and the
    #: client sends them back as they are, so they are not looked for in base64.
    _cookies: set[str] = field(init=False, default_factory=set, repr=False)
    _env_values: tuple[str, ...] = field(init=False, default=())
    #: The variables that are secrets by their name (:func:`secret_name`), and how many
    #: variables the environment had when they were looked for.
    _named_env: tuple[str, ...] = field(init=False, default=(), repr=False)
    _env_count: int = field(init=False, default=-1, repr=False)
    #: How many times the secrets changed: what was redacted before may hold a new one.
    generation: int = field(init=False, default=0)
    #: ``os.environ`` as it was read, the raw values of ``env`` there, and their reader.
    _environ: Mapping[str, str] | None = field(init=False, default=None, repr=False)
    _env_raw: tuple[object, ...] = field(init=False, default=(), repr=False)
    _read_env: Callable[[], tuple[object, ...]] = field(init=False, default=tuple, repr=False)
    #: The last request :meth:`learn` saw, as its caller's ``signature``: the same headers
    #: and URL again teach nothing new (what is learned is never forgotten).
    _learned_from: object = field(init=False, default=None, repr=False)
    #: :meth:`url` of the URLs seen since the secrets last changed.
    _urls: dict[str, str] = field(init=False, default_factory=dict, repr=False)
    #: :meth:`text` of the short texts (header names and values...) seen since.
    _texts: dict[str, str] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.headers = frozenset(h.lower() for h in self.headers)
        self.env = tuple(self.env)
        self.extra_values = tuple(self.extra_values)
        self._read_names()
        self._env_values = self._env_now()
        self._env_raw = self._read_env()
        self._rebuild()

    def _read_names(self) -> None:
        """Look for the variables that are secrets by their name, and make the reader of
        every secret variable's value."""
        self._env_count = len(os.environ)
        self._named_env = _env_names(tuple(self.env)) if self.by_name else ()
        self._environ, self._read_env = _environment_reader((*self.env, *self._named_env))

    def _env_now(self) -> tuple[str, ...]:
        """The values of the secret variables: those named in ``env`` as they are, those
        secret by their name when :func:`secret_like` (others count as empty)."""
        named = (os.environ.get(name, "") for name in self._named_env)
        return (
            *(os.environ.get(name, "") for name in self.env),
            *(value if secret_like(value) else "" for value in named),
        )

    def refresh(self) -> None:
        """Read the secret environment variables again (and look for the variables that
        are secrets by their name again when the environment has more or fewer)."""
        if os.environ is not self._environ or len(os.environ) != self._env_count:
            self._read_names()  # replaced, or variables set or removed
        env_raw = self._read_env()
        if env_raw == self._env_raw:
            return
        self._env_raw = env_raw
        env_values = self._env_now()
        if env_values != self._env_values:
            self._env_values = env_values
            self._rebuild()

    def learn(
        self, headers: Iterable[tuple[str, str]], url: str = "", *, signature: object = None
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
        cookies: set[str] = set()
        for name, value in headers:
            lowered = name.lower()
            if lowered in ("cookie", "set-cookie"):
                cookies.add(value.strip())
                cookies.update(part.partition("=")[2].strip() for part in value.split(";"))
                continue
            key_id = shapes.key_id(value) if lowered == "authorization" else None
            if key_id is not None:  # SigV4: signed anew for every call; its key id is secret
                found.add(key_id)
            elif lowered in self.headers or (secret_name(lowered) and secret_like(value)):
                found.add(value.strip())
                scheme, _, token = value.strip().partition(" ")
                if token and scheme.isalpha():
                    found.update(_credentials(scheme, token.strip()))
        if url:
            parts = urlsplit(url)
            pairs = parse_qsl(parts.query, keep_blank_values=True)
            found.update(value for name, value in pairs if _KEYLIKE_PARAM.search(name))
            if parts.password:
                found.add(parts.password)
        found = {value for value in found if len(value) >= MIN_SECRET and value != REDACTED}
        cookies = {v for v in cookies if len(v) >= MIN_SECRET and v != REDACTED} - found
        if not (found | cookies) <= self._learned:
            self._cookies = (self._cookies | (cookies - self._learned)) - found
            self._learned |= found | cookies
            self._rebuild()

    def is_secret_header(self, name: str, value: str) -> bool:
        """Whether a header's value is replaced whole: its name is one of ``headers``, or
        says it holds a secret (:func:`secret_name`) and the value is no number or boolean
        word."""
        lowered = name.lower()
        return lowered in self.headers or (secret_name(lowered) and secret_like(value, shortest=1))

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
        cores = {
            c.decode(): c.decode()
            for v in self._values
            if v not in self._cookies
            for c in _base64_cores(v.encode())
        }
        self._masks = {core: _mask(len(core)) for core in cores}
        self._needles = tuple(
            sorted({*(n for needles, _ in forms for n in needles), *cores}, key=_longest_first)
        )
        self._probes = tuple({**{p: None for _, probes in forms for p in probes}, **cores})
        # To tell whether a text holds a secret, the needles that hold no other suffice
        # ("Bearer sk-..." holds "sk-..."); of each, its longest run of plain characters
        # shows as it is in the JSON text of a value that holds it (see _clean).
        least = [n for n in self._needles if not any(o != n and o in n for o in self._needles)]
        self._least = tuple(least)
        runs = [max(_PLAIN.findall(n), key=len, default="") for n in least]
        self._raw_needles = tuple(run.encode() for run in runs)
        self._plain = all(runs)
        self._straddles = any(c in n for n in self._needles for c in "{}[]")
        self._urls = {}
        self._texts = {}
        self.generation += 1

    @property
    def env_values(self) -> tuple[str, ...]:
        """The values of the secret environment variables (named in ``env``, or secrets by
        their name), as last read."""
        return tuple(value for value in self._env_values if value)

    @property
    def secret_values(self) -> tuple[str, ...]:
        """The literal secret values scrubbed everywhere."""
        return self._values

    # -- text, headers, URLs ---------------------------------------------------------

    def text(self, value: str) -> str:
        """``value`` with every known secret value replaced: as it is, percent-encoded
        (any way: ``%2B``, ``%2b``, ``%2D``...), ``\\u``-escaped, or base64-encoded (a base64
        form is overwritten by as many characters of ``REDACTED``, so it still decodes)."""
        if len(value) > 256:  # a long text is seldom seen twice
            return self._text(value)
        known = self._texts.get(value)
        if known is None:
            if len(self._texts) >= 4096:  # headers repeat: keep the last few only
                self._texts.clear()
            known = self._texts[value] = self._text(value)
        return known

    def _text(self, value: str) -> str:
        value = self._replaced(value)
        if "\\u" in value:
            plain = _JSON_ESCAPE.sub(_unescape, value)
            if plain != value and self._found_in(plain):
                value = self._replaced(plain)
        if "%" in value:
            value = _ENCODED_RUN.sub(self._encoded_run, value)
        return shapes.scrub(value)

    def _replaced(self, value: str) -> str:
        if not self._found_in(value):
            return value
        for secret in self._needles:
            if secret in value:
                value = value.replace(secret, self._masks.get(secret, REDACTED))
        return value

    def _encoded_run(self, match: re.Match[str]) -> str:
        """A percent-encoded run of text, encoded again with its secrets replaced when it
        decodes to text that holds one."""
        run = match[0]
        decoded = unquote_plus(run)
        if not self._found_in(decoded):
            return run
        return quote_plus(self._replaced(decoded), safe="/:")

    def _found_in(self, text: str) -> bool:
        return any(secret in text for secret in self._least)

    def holds(self, text: str) -> bool:
        """Whether ``text`` holds a known secret value, in any form :meth:`text` finds."""
        return self.text(text) != text

    def header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Header pairs with secret headers (:meth:`is_secret_header`) and secret values
        (in names too) redacted."""
        return [
            (self.text(name), REDACTED if self.is_secret_header(name, value) else self.text(value))
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
                (k, REDACTED if _KEYLIKE_PARAM.search(k) or signed(k) else self.text(v))
                for k, v in pairs
            ]
            parts = parts._replace(query=urlencode(redacted, safe=":/,"))
        return self.text(urlunsplit(parts))

    # -- JSON values and bytes -------------------------------------------------------

    def json(self, value: object, *, raw: bytes | None = None) -> object:
        """A JSON value with every string, object keys included, scrubbed of secret values
        and of secrets of a known shape (:mod:`.shapes`); ``value`` itself when it holds
        none.

        ``raw``, the JSON text ``value`` was read from when it is at hand, lets a value with
        no secret go without a look at its parts (see :meth:`_clean`). With no secret value
        known, a value without ``raw`` is a recording's, its shapes scrubbed when written.
        """
        if self._clean(raw):
            return value
        if not self._values:  # only secrets of a known shape, which ``raw`` shows
            return value if raw is None else self._json(value)
        try:
            probe = json_text(value)
        except (TypeError, ValueError):  # not plain JSON: look at every part
            return self._json(value)
        return self._json(value) if self._probed(probe) else value

    def _clean(self, raw: bytes | None) -> bool:
        """Whether ``raw``, the text a value was read from, shows it holds no secret whole.

        A secret in a string of the value shows in ``raw`` as runs of the printable ASCII
        characters JSON needs not escape (:data:`_PLAIN`), as they are, unless the encoder
        escaped such a character (``\\u0073``, ``\\/``) or percent-encoded one: when
        ``raw`` holds no escape of that kind and not the longest run of each secret (and
        each of its forms), no string holds one.
        """
        return (
            raw is not None
            and self._plain
            and not any(n in raw for n in self._raw_needles)
            and not (self._values and _escapes_ascii(raw))
            and not shapes.marked_bytes(raw)
        )

    def _json(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self._json(item) for item in value]
        if isinstance(value, Mapping):
            out: dict[object, object] = {}
            for key, item in value.items():
                name = self.text(key) if isinstance(key, str) else key
                while name in out:  # two keys that redact alike: both kept
                    name = f"{name}~"
                out[name] = self._json(item)
            return out
        return value

    def _probed(self, json_text: str) -> bool:
        """Whether a secret shows in the JSON text of a value (escaped or percent-encoded
        in one of its strings too)."""
        if any(secret in json_text for secret in self._probes) or shapes.marked(json_text):
            return True
        return ("\\u" in json_text or "%" in json_text) and self.holds(json_text)

    def binary(self, raw: bytes) -> bytes:
        """``raw`` with each secret's bytes, and its base64 forms, overwritten in place by
        as many bytes of ``REDACTED``: lengths and offsets in a binary format stay valid."""
        for needle in self._byte_needles():
            start = raw.find(needle)
            while start != -1:
                mask = (REDACTED.encode() * (len(needle) // len(REDACTED) + 1))[: len(needle)]
                raw = raw[:start] + mask + raw[start + len(needle) :]
                start = raw.find(needle, start + len(needle))
        return shapes.scrub_bytes(raw)

    def _byte_needles(self) -> list[bytes]:
        return [needle.encode() for needle in self._needles]

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


def _escapes_ascii(raw: bytes) -> bool:
    """Whether ``raw`` holds an escape of a printable ASCII character: ``\\u0073``,
    ``\\/`` (JSON) or ``%73`` (URLs). ``bytes.find`` is much quicker than a regular
    expression here: JSON made with ``ensure_ascii`` holds many ``\\u00e9`` of no matter."""
    if b"\\/" in raw:
        return True
    if b"%" in raw and _PERCENT_ASCII.search(raw):
        return True
    at = raw.find(b"\\u00")
    while at != -1:
        if raw[at + 4 : at + 5] in (b"2", b"3", b"4", b"5", b"6", b"7"):
            return True
        at = raw.find(b"\\u00", at + 4)
    return False


def _credentials(scheme: str, token: str) -> set[str]:
    """The secrets of an ``Authorization`` header's credentials: the token, and for
    ``Basic`` the decoded ``user:password`` and the password."""
    found = {token}
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(token, validate=True).decode("utf-8")
        except ValueError:  # not base64, or not UTF-8 text: the token alone
            return found
        found |= {decoded, decoded.partition(":")[2]}
    return found


def _mask(length: int) -> str:
    """``length`` characters of ``REDACTED`` repeated."""
    return (REDACTED * (length // len(REDACTED) + 1))[:length]


def _longest_first(value: str) -> tuple[int, str]:
    return -len(value), value


def _unescape(match: re.Match[str]) -> str:
    """The printable ASCII character a ``\\u00XX`` escape stands for (``"`` and ``\\``
    stay escaped, so JSON text stays JSON)."""
    char = chr(int(match[1], 16))
    return match[0] if char in '"\\' else char
