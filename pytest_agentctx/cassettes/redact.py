"""Secrets never reach a cassette: headers, query parameters and known key values redacted.

Everything is redacted *before* it is written, and live requests get the same treatment
before they are matched, so a redacted cassette still matches.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_SECRET_ENV",
    "DEFAULT_SECRET_HEADERS",
    "REDACTED",
    "Redactor",
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
_MIN_SECRET = 8


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
    """Replaces secrets with ``REDACTED`` in headers, URLs and (JSON or text) bodies.

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
    _learned: set[str] = field(init=False, default_factory=set)
    _env_values: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.headers = frozenset(h.lower() for h in self.headers)
        self.env = tuple(self.env)
        self.extra_values = tuple(self.extra_values)
        self._env_values = tuple(os.environ.get(name, "") for name in self.env)
        self._rebuild()

    def refresh(self) -> None:
        """Read the secret environment variables again."""
        env_values = tuple(os.environ.get(name, "") for name in self.env)
        if env_values != self._env_values:
            self._env_values = env_values
            self._rebuild()

    def learn(self, headers: Iterable[tuple[str, str]], url: str = "") -> None:
        """Remember the secret values a request carries (secret headers, cookies, key-like
        query parameters, URL credentials), to scrub them wherever they appear."""
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
        found = {value for value in found if len(value) >= _MIN_SECRET and value != REDACTED}
        if not found <= self._learned:
            self._learned |= found
            self._rebuild()

    def _rebuild(self) -> None:
        values = [*self._env_values, *self.extra_values, *self._learned]
        # Longest first, so a key that contains another is replaced whole; short values
        # (under 8 characters) would redact ordinary words, so they are left alone.
        self._values = tuple(
            sorted({v for v in values if len(v) >= _MIN_SECRET}, key=len, reverse=True)
        )

    @property
    def secret_values(self) -> tuple[str, ...]:
        """The literal secret values scrubbed everywhere."""
        return self._values

    def text(self, value: str) -> str:
        """``value`` with every known secret value replaced."""
        for secret in self._values:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Header pairs with secret headers and secret values redacted."""
        return [
            (name, REDACTED if name.lower() in self.headers else self.text(value))
            for name, value in items
        ]

    def url(self, url: str) -> str:
        """``url`` with key-like query parameters and secret values redacted."""
        parts, pairs = _url_parts(url)
        if parts.query:
            redacted = [
                (k, REDACTED if _KEYLIKE_PARAM.search(k) else self.text(v)) for k, v in pairs
            ]
            parts = parts._replace(query=urlencode(redacted, safe=":/,"))
        return self.text(urlunsplit(parts))

    def json(self, value: Any) -> Any:
        """A JSON value with every string scrubbed of secret values."""
        if not self._values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, Mapping):
            return {key: self.json(item) for key, item in value.items()}
        return value

    def body(self, body: dict[str, Any] | None) -> dict[str, Any] | None:
        """A stored body with secret values scrubbed."""
        if body is None or not self._values:
            return body
        if "json" in body:
            return {"json": self.json(body["json"])}
        if "sse" in body:
            return {"sse": [self.json(event) for event in body["sse"]]}
        if "text" in body:
            return {"text": self.text(body["text"])}
        return body
