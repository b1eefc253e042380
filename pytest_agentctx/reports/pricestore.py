"""Prices of model calls kept between sessions in pytest's cache folder.

genai-prices' data is one large Python module: loading it costs a session about 30 ms,
more than pricing every call of a hundred short replayed tests. A replay prices the same
calls every run (the same model, usage and day), so the prices a session computed are
kept in ``.pytest_cache/d/agentctx-prices/``, one file per genai-prices release, and a
later session that prices only calls found there never loads genai-prices.

- **Keyed by all that decides a price.** An entry is a call's model, capture's provider,
  its tokens by kind, the day and the service tier, under the release of the data; another
  release is another file. A call the data does not know is kept as unknown too (so a
  session never loads the data to learn that again).
- **Never a different answer.** The file is bound to its contents and release by the
  keyed MAC of the YAML read cache (:func:`~pytest_agentctx.traffic.cassettes.readcache.mac`,
  under a secret never in the cache folder): an entry that is edited, truncated, of
  another release or of another machine's key is ignored, and the prices are computed
  again. Without a key (none can be made), nothing is kept.
- **Bounded, atomic.** At most :data:`MAX_PRICES` prices, the ones added last; the file
  is written atomically at the session's end when the session added prices (each
  ``pytest -n`` worker writes what it knew and added; one may overwrite another's, which
  only means computing those prices again once). ``pytest --cache-clear`` empties it and
  ``-p no:cacheprovider`` turns it off.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import astuple
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentctx.reports.pricing import CallPrice, TokenBreakdown

#: The folder under pytest's cache (``.pytest_cache/d/``) that holds the prices.
FOLDER_NAME = "agentctx-prices"
#: The version of the file's layout: part of every MAC.
LAYOUT = "pytest-agentctx-prices-1"
#: The most prices kept in one file.
MAX_PRICES = 20_000

#: What decides a price: the model (lower case), capture's provider, the tokens by kind,
#: the day, the service tier.
PriceKey = tuple[str, "str | None", "TokenBreakdown", date, "str | None"]


class PriceStore:
    """The prices known for one release of genai-prices' data (``release``), read from and
    written to the folder ``folder()`` gives (called when first needed)."""

    def __init__(self, folder: Callable[[], Path], release: str) -> None:
        self.release = release
        self._folder = folder
        self._prices: dict[PriceKey, CallPrice | None] | None = None
        self._added = False

    def get(self, key: PriceKey) -> tuple[bool, CallPrice | None]:
        """Whether the price of ``key`` is known, and the price (``None``: a model the
        data does not know)."""
        prices = self._loaded()
        if key in prices:
            return True, prices[key]
        return False, None

    def add(self, key: PriceKey, price: CallPrice | None) -> None:
        """Keep the price of ``key``, to be written by :meth:`save`."""
        self._loaded()[key] = price
        self._added = True

    def save(self) -> bool:
        """Write the prices when some were added; whether the file was written (not
        without a MAC key, nor when the folder cannot be written)."""
        if not self._added or self._prices is None:
            return False
        kept = list(self._prices.items())[-MAX_PRICES:]
        payload = json.dumps([_entry(key, price) for key, price in kept]).encode()
        mac = _mac(self.release, payload)
        if mac is None:
            return False
        from pytest_agentctx._files import atomic_write_bytes

        try:
            path = self._path()
            # Not flushed to disk: a torn file (a power cut) fails its MAC and is ignored.
            atomic_write_bytes(path, mac.encode() + b"\n" + payload, durable=False)
        except OSError:
            return False
        self._added = False
        return True

    def _path(self) -> Path:
        import hashlib

        name = hashlib.sha256(self.release.encode()).hexdigest()[:32]
        return self._folder() / f"{name}.json"

    def _loaded(self) -> dict[PriceKey, CallPrice | None]:
        if self._prices is None:
            self._prices = self._read()
        return self._prices

    def _read(self) -> dict[PriceKey, CallPrice | None]:
        """The prices of the file, or none when it is missing, damaged, or not bound to
        this release by this machine's key."""
        from pytest_agentctx._untrusted import LimitExceeded, read_untrusted

        try:
            data = read_untrusted(self._path())
            head, _, payload = data.partition(b"\n")
            mac = _mac(self.release, payload)
            if mac is None or not hmac.compare_digest(head, mac.encode()):
                return {}
            return dict(_read_entry(entry) for entry in json.loads(payload))
        except (OSError, LimitExceeded, ValueError, TypeError, KeyError, IndexError):
            return {}


def _mac(release: str, payload: bytes) -> str | None:
    from pytest_agentctx.traffic.cassettes.readcache import mac

    return mac(f"{LAYOUT} genai-prices=={release}", payload)


def _entry(key: PriceKey, price: CallPrice | None) -> list[object]:
    model, provider, breakdown, day, tier = key
    known = (
        None
        if price is None
        else [
            price.total,
            price.uncached_input,
            price.cache_read,
            price.cache_write,
            price.output,
            price.model,
            price.provider,
        ]
    )
    return [model, provider, list(astuple(breakdown)), day.isoformat(), tier, known]


def _read_entry(entry: object) -> tuple[PriceKey, CallPrice | None]:
    """An entry of the file (a MAC'd one: a malformed one is a ``ValueError`` all the
    same)."""
    from pytest_agentctx.reports.pricing import CallPrice, TokenBreakdown

    if not isinstance(entry, list) or len(entry) != 6:
        raise ValueError("not an entry")
    model, provider, counts, day, tier, known = entry
    if not all(value is None or isinstance(value, str) for value in (provider, tier)):
        raise ValueError("a provider or tier that is not text")
    breakdown = TokenBreakdown(*(int(count) for count in counts))
    key: PriceKey = (str(model), provider, breakdown, date.fromisoformat(day), tier)
    if known is None:
        return key, None
    total, uncached, read, written, output, matched_model, matched_provider = known
    price = CallPrice(
        float(total),
        float(uncached),
        float(read),
        float(written),
        float(output),
        str(matched_model),
        str(matched_provider),
    )
    return key, price
