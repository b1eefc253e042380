"""Recording and replaying the HTTP traffic of agent tests (``pytest --agent-record``).

:class:`Cassette` answers a test's requests from a recorded file, or records them; the
file format, matching, redaction and network blocking live in the sibling modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentctx._lazy import lazy_getattr

if TYPE_CHECKING:
    # For type checkers, which do not run ``__getattr__``: the same names as ``_PUBLIC``,
    # each re-exported explicitly (``X as X``). tests/unit/test_public_names.py checks
    # that the two agree.
    from .defaults import RecordMode as RecordMode
    from .fileformat import Interaction as Interaction
    from .matcher import (
        DEFAULT_IGNORED_FIELDS as DEFAULT_IGNORED_FIELDS,
        RequestKey as RequestKey,
        json_diff as json_diff,
    )
    from .misses import Miss as Miss
    from .network import NetworkGuard as NetworkGuard
    from .redact import (
        DEFAULT_SECRET_ENV as DEFAULT_SECRET_ENV,
        DEFAULT_SECRET_HEADERS as DEFAULT_SECRET_HEADERS,
        REDACTED as REDACTED,
        Redactor as Redactor,
    )
    from .session import Cassette as Cassette
    from .store import (
        dump_cassette as dump_cassette,
        load_cassette as load_cassette,
        write_cassette as write_cassette,
    )

#: Every public name, with the module that defines it: the source of ``__all__`` and of
#: the loader below. A name is imported on first use (PEP 562): the plugin reads cassette
#: options at start-up without loading the cassette machinery and httpx2.
_PUBLIC: dict[str, str] = {
    "DEFAULT_IGNORED_FIELDS": "matcher",
    "DEFAULT_SECRET_ENV": "redact",
    "DEFAULT_SECRET_HEADERS": "redact",
    "REDACTED": "redact",
    "Cassette": "session",
    "Interaction": "fileformat",
    "Miss": "misses",
    "NetworkGuard": "network",
    "RecordMode": "defaults",
    "Redactor": "redact",
    "RequestKey": "matcher",
    "dump_cassette": "store",
    "json_diff": "matcher",
    "load_cassette": "store",
    "write_cassette": "store",
}

__all__ = [*_PUBLIC]

__getattr__ = lazy_getattr(__name__, _PUBLIC)
