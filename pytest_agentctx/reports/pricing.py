"""A model call's price from genai-prices (:func:`price_call`), the token breakdown it is
priced from (:class:`TokenBreakdown`), and the price data a session uses
(:class:`PriceData`).

An iteration's ``metadata["usage"]`` holds what the provider reported: ``input_tokens``
and ``output_tokens`` as each wire format counts them, and, when the provider reported
them, ``uncached_input_tokens``, ``cache_read_tokens``, ``cache_write_tokens`` (of which
``cache_write_1h_tokens`` were written for an hour) and ``reasoning_tokens``. The
breakdown reads them into one shape, whatever the provider: the input split into what
was read from the prompt cache, written to it and neither, and the output.

Prices come from `genai-prices <https://github.com/pydantic/genai-prices>`_ (the data
pydantic-ai prices its own runs with): cache reads and writes at their own prices, the
service tier's variant, and the prices that applied on a date. The date is the price
data's pinned date (``agent_price_data``, see :meth:`PriceData.parse`) so that a replay
next year gives the dollars of today; without a pin, the day of the session. genai-prices
is imported on the first price asked for: a session that prices nothing never loads it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from pytest_agentctx.exceptions import AgentCtxError

if TYPE_CHECKING:
    from pytest_agentctx.reports.pricestore import PriceStore

#: genai-prices' provider for each of capture's providers (``metadata["provider"]``);
#: a provider not here is found by the model's name alone.
PROVIDER_IDS: Mapping[str, str] = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "bedrock": "aws",
    "cohere": "cohere",
}
_PIN = re.compile(r"^\s*genai-prices\s*==\s*(?P<version>[\w.+-]+)\s+(?P<day>\d{4}-\d{2}-\d{2})\s*$")


def _count(usage: Mapping[str, object], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class TokenBreakdown:
    """A call's tokens by what they cost: ``uncached_input`` (input neither read from
    nor written to the prompt cache), ``cache_read``, ``cache_write`` (of which
    ``cache_write_1h`` for an hour), ``output`` (reasoning included) and, of the output,
    ``reasoning``."""

    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    output: int = 0
    reasoning: int = 0

    @classmethod
    def from_usage(cls, usage: Mapping[str, object]) -> TokenBreakdown:
        """The breakdown of an iteration's ``metadata["usage"]``. Without cache figures
        every input token is uncached; ``uncached_input_tokens``, where the provider's
        ``input_tokens`` counted cache tokens too, says how many were not."""
        cache_read = _count(usage, "cache_read_tokens")
        cache_write = _count(usage, "cache_write_tokens")
        uncached = (
            _count(usage, "uncached_input_tokens")
            if "uncached_input_tokens" in usage
            else _count(usage, "input_tokens")
        )
        return cls(
            uncached_input=uncached,
            cache_read=cache_read,
            cache_write=cache_write,
            cache_write_1h=min(_count(usage, "cache_write_1h_tokens"), cache_write),
            output=_count(usage, "output_tokens"),
            reasoning=_count(usage, "reasoning_tokens"),
        )

    @property
    def input(self) -> int:
        """Every input token: uncached, read from the cache and written to it."""
        return self.uncached_input + self.cache_read + self.cache_write


@dataclass(frozen=True)
class CallPrice:
    """The price of one call in US dollars: ``total``, and its parts: ``uncached_input``,
    ``cache_read``, ``cache_write`` and ``output``, with the model and provider the
    price data matched."""

    total: float
    uncached_input: float
    cache_read: float
    cache_write: float
    output: float
    model: str
    provider: str


@dataclass(frozen=True)
class PriceData:
    """Which price data a session prices with: the installed genai-prices ``version``
    and the ``day`` whose prices apply. ``pinned`` when the project's ``agent_price_data``
    option fixed both."""

    version: str
    day: date
    pinned: bool

    @classmethod
    def installed(cls, today: date | None = None) -> PriceData:
        """The installed genai-prices' data at ``today`` (the session's day): not pinned."""
        return cls(_installed_version(), today or datetime.now(UTC).date(), pinned=False)

    @classmethod
    def parse(cls, text: str) -> PriceData:
        """``genai-prices==0.2.3 2026-11-29``: the data of that release, at that day's
        prices. The installed genai-prices must be that release: other data would price
        the same calls differently."""
        found = _PIN.match(text)
        if found is None:
            raise AgentCtxError(
                f"agent_price_data = {text!r}: expected 'genai-prices==<version> <YYYY-MM-DD>'"
                ", e.g. 'genai-prices==0.2.3 2026-11-29'. Print the line for the installed "
                "data with: pytest-agentctx prices pin"
            )
        try:
            day = date.fromisoformat(found["day"])
        except ValueError:
            raise AgentCtxError(
                f"agent_price_data = {text!r}: {found['day']!r} is not a date; expected "
                "YYYY-MM-DD. Print a right line with: pytest-agentctx prices pin"
            ) from None
        installed = _installed_version()
        if found["version"] != installed:
            raise AgentCtxError(
                f"agent_price_data pins genai-prices {found['version']}, but {installed} is "
                f"installed: its prices may differ. Install the pinned data (pip install "
                f"'genai-prices=={found['version']}'), or price with the installed data by "
                "replacing the line with what `pytest-agentctx prices pin` prints."
            )
        return cls(installed, day, pinned=True)

    def to_dict(self) -> dict[str, object]:
        """What a report says of the price data: ``{"source", "version", "day", "pinned"}``."""
        return {
            "source": "genai-prices",
            "version": self.version,
            "day": self.day.isoformat(),
            "pinned": self.pinned,
        }

    def pin_line(self) -> str:
        """The ``agent_price_data`` value that pins this data."""
        return f"genai-prices=={self.version} {self.day.isoformat()}"


@functools.cache
def _installed_version() -> str:
    """The installed genai-prices' version, read from its metadata once per process (a
    table without price data prices each call with the installed data)."""
    from importlib import metadata as importlib_metadata

    try:
        return importlib_metadata.version("genai-prices")
    except importlib_metadata.PackageNotFoundError:
        raise AgentCtxError(
            "genai-prices is not installed, and pytest-agentctx prices model calls with it. "
            "Install it: pip install genai-prices"
        ) from None


def price_call(
    model: str,
    provider: str | None,
    breakdown: TokenBreakdown,
    data: PriceData,
    service_tier: str | None = None,
) -> CallPrice | None:
    """The price of a call of ``model`` (capture's ``provider``, or ``None``) that used
    ``breakdown``, by ``data``'s prices; ``None`` when genai-prices knows no such model.
    A ``service_tier`` (``flex``, ``priority``) prices the tier's variant. A price kept
    by the session's :class:`~.pricestore.PriceStore` (:func:`use_store`) is not computed
    again."""
    key = (model.lower(), provider, breakdown, data.day, service_tier)
    store = _store
    if store is None or store.release != data.version:
        return _priced(*key)
    known, price = store.get(key)
    if not known:
        price = _priced(*key)
        store.add(key, price)
    return price


#: The prices kept between sessions (:mod:`.pricestore`), or ``None``.
_store: PriceStore | None = None


def use_store(store: PriceStore | None) -> PriceStore | None:
    """Price with ``store``'s kept prices from now on (``None``: compute every price);
    returns the store it replaces."""
    global _store
    previous, _store = _store, store
    return previous


#: Whether genai-prices' data is still to be loaded (by the first price computed).
_DATA_UNLOADED = [True]


@functools.lru_cache(maxsize=8192)
def _priced(
    model: str, provider: str | None, breakdown: TokenBreakdown, day: date, tier: str | None
) -> CallPrice | None:
    """:func:`price_call` computed by genai-prices. The first one loads its data, a module
    that builds tens of thousands of objects that all stay alive: the garbage collector is
    paused meanwhile, as each collection those allocations start would scan the whole
    heap of a long session for nothing (five times the load in a session of 500 tests)."""
    if _DATA_UNLOADED[0]:
        from pytest_agentctx.traffic.cassettes.store import paused_gc

        with paused_gc():
            price = _computed(model, provider, breakdown, day, tier)
        _DATA_UNLOADED[0] = False
        return price
    return _computed(model, provider, breakdown, day, tier)


def _computed(
    model: str, provider: str | None, breakdown: TokenBreakdown, day: date, tier: str | None
) -> CallPrice | None:
    import genai_prices

    at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    context = {"service_tier": tier} if tier else None
    hint = PROVIDER_IDS.get(provider or "")

    def calc(**counts: int) -> Any:
        usage = genai_prices.Usage(**{key: value for key, value in counts.items() if value})
        for provider_id in dict.fromkeys((hint, None)):
            try:
                return genai_prices.calc_price(
                    usage,
                    model,
                    provider_id=provider_id,
                    genai_request_timestamp=at,
                    price_context=context,
                )
            except (LookupError, ValueError):  # no such model, or usage it cannot price
                continue
        return None

    whole = calc(
        input_tokens=breakdown.input,
        cache_read_tokens=breakdown.cache_read,
        cache_write_tokens=breakdown.cache_write,
        cache_write_1h_tokens=breakdown.cache_write_1h,
        output_tokens=breakdown.output,
    )
    if whole is None:
        return None

    def part(**counts: int) -> float:
        priced = calc(**counts) if any(counts.values()) else None
        return 0.0 if priced is None else float(priced.total_price)

    return CallPrice(
        total=float(whole.total_price),
        uncached_input=part(input_tokens=breakdown.uncached_input),
        cache_read=part(input_tokens=breakdown.cache_read, cache_read_tokens=breakdown.cache_read),
        cache_write=part(
            input_tokens=breakdown.cache_write,
            cache_write_tokens=breakdown.cache_write,
            cache_write_1h_tokens=breakdown.cache_write_1h,
        ),
        output=float(whole.output_price),
        model=str(whole.model.id),
        provider=str(whole.provider.id),
    )


def dated_cassettes(tests: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of ``tests`` was priced at the day its cassette's recordings were made."""
    cassettes = (test.get("cassette") for test in tests)
    return any(isinstance(c, Mapping) and c.get("recorded_on") for c in cassettes)


def price_data_words(priced: Mapping[str, object], dated: bool, *, hint: bool = False) -> str:
    """What priced a session, in words (``priced``: its report's ``summary.price_data``;
    ``dated``: some tests were priced at their recording's day; ``hint``: an unpinned one
    says how to pin it): ``genai-prices 0.2.3, prices of 2026-11-29, pinned``."""
    day = f"prices of {priced.get('day')}"
    if dated:
        day = f"prices of the day each cassette was recorded, else of {priced.get('day')}"
    pin = "pinned" if priced.get("pinned") else "not pinned"
    if hint and not priced.get("pinned"):
        pin += ": pytest-agentctx prices pin"
    return f"genai-prices {priced.get('version')}, {day}, {pin}"
