"""Recording and replaying the HTTP traffic of agent tests (``pytest --agent-record``).

:class:`Cassette` answers a test's requests from a recorded file, or records them; the
file format, matching, redaction and network blocking live in the sibling modules.
"""

from __future__ import annotations

from .matcher import DEFAULT_IGNORED_FIELDS, RequestKey, json_diff
from .network import NetworkGuard
from .redact import DEFAULT_SECRET_ENV, DEFAULT_SECRET_HEADERS, REDACTED, Redactor
from .session import Cassette, Miss, RecordMode
from .store import Interaction, dump_cassette, load_cassette, write_cassette

__all__ = [
    "DEFAULT_IGNORED_FIELDS",
    "DEFAULT_SECRET_ENV",
    "DEFAULT_SECRET_HEADERS",
    "REDACTED",
    "Cassette",
    "Interaction",
    "Miss",
    "NetworkGuard",
    "RecordMode",
    "Redactor",
    "RequestKey",
    "dump_cassette",
    "json_diff",
    "load_cassette",
    "write_cassette",
]
