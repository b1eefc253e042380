"""Recording and replaying the HTTP traffic of agent tests (``pytest --agent-record``).

:class:`Cassette` answers a test's requests from a recorded file, or records them; the
file format, matching, redaction and network blocking live in the sibling modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .defaults import RecordMode
    from .matcher import DEFAULT_IGNORED_FIELDS, RequestKey, json_diff
    from .network import NetworkGuard
    from .redact import DEFAULT_SECRET_ENV, DEFAULT_SECRET_HEADERS, REDACTED, Redactor
    from .session import Cassette, Miss
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

#: Where each name lives, imported on first use (the plugin reads cassette options at
#: start-up without loading the cassette machinery and httpx2).
_LAZY = {
    "DEFAULT_IGNORED_FIELDS": "matcher",
    "RequestKey": "matcher",
    "json_diff": "matcher",
    "RecordMode": "defaults",
    "NetworkGuard": "network",
    "DEFAULT_SECRET_ENV": "redact",
    "DEFAULT_SECRET_HEADERS": "redact",
    "REDACTED": "redact",
    "Redactor": "redact",
    "Cassette": "session",
    "Miss": "session",
    "Interaction": "store",
    "dump_cassette": "store",
    "load_cassette": "store",
    "write_cassette": "store",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
