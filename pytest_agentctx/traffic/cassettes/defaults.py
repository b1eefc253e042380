"""The record modes (:class:`RecordMode`) and the body fields every match ignores
(:data:`DEFAULT_IGNORED_FIELDS`)."""

from __future__ import annotations

from enum import StrEnum

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
    #: Only the calls made under ``model_role("judge")`` are recorded again (the judge's
    #: recordings dropped, its calls sent on); the agent's are replayed, a miss as in
    #: ``none``, and left in the file as they were.
    JUDGE = "judge"
