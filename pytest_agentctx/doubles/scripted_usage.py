"""The ``usage=`` of a scripted reply (``fake_llm.reply("...", usage={...})``), read into a
:class:`~pytest_agentctx.traffic.codecs.base.Usage`.

The keys are those of an iteration's ``metadata["usage"]``: ``input_tokens`` counts every
input token, the cached ones included, as it does there; ``uncached_input_tokens`` may be
given instead (or as well, if the two agree). Each wire format answers with the figures its
provider has fields for (see docs/context.md, "Token usage").
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_agentctx.doubles.errors import FakeLLMError
from pytest_agentctx.traffic.codecs.base import Usage

#: The token counts a scripted usage may give.
COUNT_KEYS = (
    "input_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "reasoning_tokens",
)
#: Every key a scripted usage may give.
USAGE_KEYS = (*COUNT_KEYS, "service_tier")

_EXAMPLE = '{"input_tokens": 1000, "cache_read_tokens": 900, "output_tokens": 20}'


def _fail(owner: str, problem: str) -> FakeLLMError:
    return FakeLLMError(
        f"{owner}.reply(usage=...): {problem} Example: {owner}.reply('Done.', usage={_EXAMPLE})."
    )


def _counts(usage: Mapping[str, object], owner: str) -> dict[str, int]:
    unknown = sorted(set(usage) - set(USAGE_KEYS))
    if unknown:
        raise _fail(owner, f"unknown key(s) {unknown}; the keys it takes are {list(USAGE_KEYS)}.")
    counts: dict[str, int] = {}
    for key in COUNT_KEYS:
        value = usage.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _fail(owner, f"{key} is {value!r}; expected a token count (an int >= 0).")
        counts[key] = value
    return counts


def _input_tokens(counts: Mapping[str, int], owner: str) -> int:
    """All the input tokens: ``input_tokens``, else the uncached ones plus the cached ones."""
    cached = counts.get("cache_read_tokens", 0) + counts.get("cache_write_tokens", 0)
    uncached = counts.get("uncached_input_tokens")
    total = counts.get("input_tokens")
    if total is None:
        return (uncached or 0) + cached
    if uncached is not None and uncached + cached != total:
        raise _fail(
            owner,
            f"uncached_input_tokens={uncached} plus the cache figures ({cached}) is not "
            f"input_tokens={total}; give one of the two.",
        )
    if total < cached:
        raise _fail(
            owner,
            f"input_tokens={total} is less than the cache figures ({cached}): input_tokens "
            "counts every input token, the cached ones included (as metadata['usage'] does). "
            f"Give uncached_input_tokens={total} instead, or input_tokens={total + cached}.",
        )
    return total


def scripted_usage(usage: Mapping[str, object], owner: str = "fake_llm") -> Usage:
    """``usage`` (keys of :data:`USAGE_KEYS`) as a :class:`Usage`; a :class:`FakeLLMError`
    for an unknown key, a value that is no count, or figures that do not add up."""
    counts = _counts(usage, owner)
    tier = usage.get("service_tier")
    if tier is not None and not isinstance(tier, str):
        raise _fail(owner, f"service_tier is {tier!r}; expected a string such as 'priority'.")
    result = Usage(
        input_tokens=_input_tokens(counts, owner),
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=counts.get("cache_read_tokens", 0),
        cache_write_tokens=counts.get("cache_write_tokens", 0),
        cache_write_1h_tokens=counts.get("cache_write_1h_tokens", 0),
        reasoning_tokens=counts.get("reasoning_tokens", 0),
        service_tier=tier or None,
    )
    if result.cache_write_1h_tokens > result.cache_write_tokens:
        raise _fail(
            owner,
            f"cache_write_1h_tokens={result.cache_write_1h_tokens} is more than "
            f"cache_write_tokens={result.cache_write_tokens}: the one-hour writes are part of "
            "the cache writes.",
        )
    if result.reasoning_tokens > result.output_tokens:
        raise _fail(
            owner,
            f"reasoning_tokens={result.reasoning_tokens} is more than "
            f"output_tokens={result.output_tokens}: output_tokens counts the reasoning too.",
        )
    total = counts.get("total_tokens")
    if total is not None and total != result.total_tokens:
        raise _fail(
            owner,
            f"total_tokens={total} is not input_tokens + output_tokens "
            f"({result.total_tokens}); leave it out.",
        )
    return result
