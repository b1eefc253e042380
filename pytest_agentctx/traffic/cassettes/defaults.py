"""Record modes and default matching options: a module of its own, so that reading the
options at start-up does not import the cassette machinery (and httpx2)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DEFAULT_IGNORED_FIELDS", "RecordMode"]

#: Body fields that change from run to run without changing what the agent asks.
DEFAULT_IGNORED_FIELDS: tuple[str, ...] = (
    "user",
    "metadata.user_id",
    "prompt_cache_key",
    "safety_identifier",
)


class RecordMode(StrEnum):
    """When a cassette talks to the network."""

    NONE = "none"
    REWRITE = "rewrite"
    MISSING = "missing"
    NEW = "new"
