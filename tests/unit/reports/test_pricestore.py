"""Unit tests for pytest_agentctx.reports.pricestore: prices kept between sessions, found
again exactly, and never believed when edited, of another release or of another key."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import date
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx.reports import pricestore
from pytest_agentctx.reports.pricestore import PriceKey, PriceStore
from pytest_agentctx.reports.pricing import PriceData, TokenBreakdown, price_call, use_store
from pytest_agentctx.traffic.cassettes.readcache import KEY_ENV

INSTALLED = metadata.version("genai-prices")
DATA = PriceData(INSTALLED, date(2026, 11, 29), pinned=True)
TOKENS = TokenBreakdown(uncached_input=40, cache_read=1_800, output=12)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "a key of this machine's, for the tests")


@pytest.fixture
def in_use(tmp_path: Path) -> Iterator[PriceStore]:
    store = PriceStore(lambda: tmp_path, INSTALLED)
    outer = use_store(store)
    try:
        yield store
    finally:
        use_store(outer)


def _key_of(model: str = "claude-sonnet-4-6", tokens: TokenBreakdown = TOKENS) -> PriceKey:
    return (model, "anthropic", tokens, DATA.day, None)


def _priced_then_reloaded(folder: Path, model: str, tokens: TokenBreakdown) -> object:
    store = PriceStore(lambda: folder, INSTALLED)
    outer = use_store(store)
    try:
        price_call(model, "anthropic", tokens, DATA)
    finally:
        use_store(outer)
    store.save()
    return PriceStore(lambda: folder, INSTALLED).get(_key_of(model, tokens))


def test_a_price_kept_by_a_session_is_found_by_the_next(tmp_path: Path) -> None:
    found = _priced_then_reloaded(tmp_path, "claude-sonnet-4-6", TOKENS)

    assert found == (True, price_call("claude-sonnet-4-6", "anthropic", TOKENS, DATA))


def test_a_model_the_data_does_not_know_is_kept_as_unknown(tmp_path: Path) -> None:
    assert _priced_then_reloaded(tmp_path, "no-such-model-9", TOKENS) == (True, None)


counts = st.integers(min_value=0, max_value=5_000_000)


@settings(max_examples=30, deadline=None)
@given(st.builds(TokenBreakdown, counts, counts, counts, st.just(0), counts, st.just(0)))
def test_a_kept_price_equals_the_price_computed(tokens: TokenBreakdown) -> None:
    with tempfile.TemporaryDirectory() as folder:
        found = _priced_then_reloaded(Path(folder), "claude-sonnet-4-6", tokens)

    assert found == (True, price_call("claude-sonnet-4-6", "anthropic", tokens, DATA))


def test_pricing_with_a_store_keeps_what_it_priced(in_use: PriceStore) -> None:
    price = price_call("claude-sonnet-4-6", "anthropic", TOKENS, DATA)

    assert in_use.get(_key_of()) == (True, price)


def test_a_store_of_another_release_is_not_asked(tmp_path: Path) -> None:
    store = PriceStore(lambda: tmp_path, "0.0.1")
    outer = use_store(store)
    try:
        price_call("claude-sonnet-4-6", "anthropic", TOKENS, DATA)
    finally:
        use_store(outer)

    assert store.get(_key_of()) == (False, None)


def test_a_session_that_added_nothing_writes_nothing(tmp_path: Path) -> None:
    assert PriceStore(lambda: tmp_path, INSTALLED).save() is False
    assert list(tmp_path.iterdir()) == []


def test_an_edited_price_is_not_believed(tmp_path: Path) -> None:
    _priced_then_reloaded(tmp_path, "claude-sonnet-4-6", TOKENS)
    (kept,) = tmp_path.iterdir()
    price = price_call("claude-sonnet-4-6", "anthropic", TOKENS, DATA)
    assert price is not None
    kept.write_bytes(kept.read_bytes().replace(repr(price.total).encode(), b"0.0"))

    assert PriceStore(lambda: tmp_path, INSTALLED).get(_key_of()) == (False, None)


def test_prices_kept_under_another_key_are_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _priced_then_reloaded(tmp_path, "claude-sonnet-4-6", TOKENS)
    monkeypatch.setenv(KEY_ENV, "another machine's key")

    assert PriceStore(lambda: tmp_path, INSTALLED).get(_key_of()) == (False, None)


def test_the_prices_of_one_release_are_not_those_of_another(tmp_path: Path) -> None:
    _priced_then_reloaded(tmp_path, "claude-sonnet-4-6", TOKENS)

    assert PriceStore(lambda: tmp_path, "0.0.1").get(_key_of()) == (False, None)


def test_a_damaged_file_is_read_as_no_prices(tmp_path: Path) -> None:
    _priced_then_reloaded(tmp_path, "claude-sonnet-4-6", TOKENS)
    (kept,) = tmp_path.iterdir()
    kept.write_bytes(kept.read_bytes()[:-20])

    assert PriceStore(lambda: tmp_path, INSTALLED).get(_key_of()) == (False, None)


def test_only_the_prices_added_last_are_kept_past_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pricestore, "MAX_PRICES", 2)
    store = PriceStore(lambda: tmp_path, INSTALLED)
    keys = [_key_of(tokens=TokenBreakdown(uncached_input=n)) for n in (1, 2, 3)]
    for key in keys:
        store.add(key, None)
    store.save()

    again = PriceStore(lambda: tmp_path, INSTALLED)
    assert [again.get(key)[0] for key in keys] == [False, True, True]


def test_a_folder_that_cannot_be_written_keeps_nothing_and_raises_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    store = PriceStore(lambda: blocked / "prices", INSTALLED)
    store.add(_key_of(), None)

    assert store.save() is False
