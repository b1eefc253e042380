"""Unit tests for pytest_agentctx.context.clock and pytest_agentctx.doubles.ids: the step
clock, clock starts, injected clocks and id factories."""

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pytest_agentctx.context.clock import (
    DEFAULT_START,
    Clock,
    StepClock,
    SystemClock,
    parse_datetime,
)
from pytest_agentctx.doubles.ids import IdFactory, RandomIds, SequentialIds

# -- protocols ---------------------------------------------------------------------------


@pytest.mark.parametrize("clock", [SystemClock(), StepClock()], ids=["system", "step"])
def test_clocks_satisfy_the_clock_protocol(clock: object) -> None:
    assert isinstance(clock, Clock)


@pytest.mark.parametrize("ids", [SequentialIds(), RandomIds()], ids=["sequential", "random"])
def test_id_factories_satisfy_the_id_factory_protocol(ids: object) -> None:
    assert isinstance(ids, IdFactory)


# -- SystemClock -------------------------------------------------------------------------


def test_system_clock_returns_the_current_time_in_utc() -> None:
    before = datetime.now(UTC)
    now = SystemClock().now()
    after = datetime.now(UTC)

    assert (before <= now <= after, now.utcoffset()) == (True, timedelta(0))


def test_system_clock_repr() -> None:
    assert repr(SystemClock()) == "SystemClock()"


# -- StepClock ---------------------------------------------------------------------------


def test_step_clock_starts_at_the_default_start() -> None:
    assert StepClock().now() == DEFAULT_START == datetime(2025, 1, 1, tzinfo=UTC)


def test_step_clock_moves_one_second_per_read_by_default() -> None:
    clock = StepClock()

    assert [clock.now() for _ in range(3)] == [
        DEFAULT_START,
        DEFAULT_START + timedelta(seconds=1),
        DEFAULT_START + timedelta(seconds=2),
    ]


def test_step_clock_uses_the_given_start_and_step() -> None:
    start = datetime(2030, 6, 1, 12, tzinfo=UTC)
    clock = StepClock(start, timedelta(minutes=5))

    assert [clock.now(), clock.now()] == [start, start + timedelta(minutes=5)]


def test_step_clock_with_a_zero_step_always_returns_the_start() -> None:
    clock = StepClock(step=timedelta(0))

    assert {clock.now() for _ in range(3)} == {DEFAULT_START}


def test_step_clock_counts_its_reads() -> None:
    clock = StepClock()
    clock.now()
    clock.now()

    assert clock.reads == 2


def test_step_clock_concurrent_reads_get_distinct_instants() -> None:
    clock = StepClock()

    with ThreadPoolExecutor(max_workers=8) as pool:
        instants = list(pool.map(lambda _: clock.now(), range(200)))

    assert sorted(instants) == [DEFAULT_START + timedelta(seconds=n) for n in range(200)]


def test_step_clock_repr_shows_start_step_and_reads() -> None:
    clock = StepClock()
    clock.now()

    assert repr(clock) == "StepClock(start=2025-01-01T00:00:00+00:00, step=0:00:01, reads=1)"


def test_step_clock_refuses_a_naive_start() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "StepClock(start=datetime.datetime(2025, 1, 1, 0, 0)) needs an aware datetime; "
            "give it a timezone, for example datetime(2025, 1, 1, tzinfo=UTC)."
        ),
    ):
        StepClock(datetime(2025, 1, 1))


def test_step_clock_refuses_a_negative_step() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "StepClock(step=datetime.timedelta(days=-1, seconds=86399)) must not go "
            "backwards; use a step >= 0."
        ),
    ):
        StepClock(step=timedelta(seconds=-1))


# -- ids ---------------------------------------------------------------------------------


def test_sequential_ids_count_per_prefix_from_one() -> None:
    ids = SequentialIds()

    assert [ids("call"), ids("call"), ids("run"), ids("call")] == [
        "call_1",
        "call_2",
        "run_1",
        "call_3",
    ]


def test_sequential_ids_of_separate_factories_do_not_share_counters() -> None:
    first = SequentialIds()
    first("call")

    assert SequentialIds()("call") == "call_1"


def test_sequential_ids_stay_unique_under_concurrent_use() -> None:
    ids = SequentialIds()

    with ThreadPoolExecutor(max_workers=8) as pool:
        made = list(pool.map(lambda _: ids("call"), range(200)))

    assert sorted(made) == sorted(f"call_{n}" for n in range(1, 201))


def test_sequential_ids_repr() -> None:
    assert repr(SequentialIds()) == "SequentialIds()"


def test_random_ids_are_the_prefix_and_24_hex_digits() -> None:
    assert re.fullmatch(r"call_[0-9a-f]{24}", RandomIds()("call"))


def test_random_ids_differ_from_call_to_call() -> None:
    ids = RandomIds()

    assert ids("call") != ids("call")


def test_random_ids_repr() -> None:
    assert repr(RandomIds()) == "RandomIds()"


# -- parse_datetime ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["2025-01-01T00:00:00Z", "2025-01-01T00:00:00z", "2025-01-01T00:00:00+00:00"]
)
def test_parse_datetime_reads_utc_instants(text: str) -> None:
    parsed = parse_datetime(text)

    assert (parsed, parsed.utcoffset()) == (datetime(2025, 1, 1, tzinfo=UTC), timedelta(0))


def test_parse_datetime_keeps_an_explicit_offset() -> None:
    parsed = parse_datetime("2025-01-01T02:00:00+02:00")

    assert (parsed.utcoffset(), parsed) == (timedelta(hours=2), datetime(2025, 1, 1, tzinfo=UTC))


def test_parse_datetime_takes_a_naive_text_as_utc() -> None:
    assert parse_datetime("2025-01-01T08:30:00").tzinfo is UTC


def test_parse_datetime_strips_surrounding_whitespace() -> None:
    assert parse_datetime("  2025-01-01T00:00:00Z\n") == datetime(2025, 1, 1, tzinfo=UTC)


def test_parse_datetime_takes_a_naive_datetime_as_utc() -> None:
    assert parse_datetime(datetime(2025, 1, 1, 8, 30)) == datetime(2025, 1, 1, 8, 30, tzinfo=UTC)


def test_parse_datetime_returns_an_aware_datetime_as_it_is() -> None:
    paris = datetime(2025, 1, 1, 9, tzinfo=timezone(timedelta(hours=1)))

    assert parse_datetime(paris) is paris


@pytest.mark.parametrize("text", ["yesterday", "", "2025-13-01T00:00:00Z"])
def test_parse_datetime_rejects_text_that_is_not_iso_8601(text: str) -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"a datetime: {text!r} is not an ISO 8601 date and time; expected something "
            "like '2025-01-01T00:00:00Z'."
        ),
    ):
        parse_datetime(text)


def test_parse_datetime_error_names_what_was_being_parsed() -> None:
    with pytest.raises(ValueError, match=r"^agent_clock_start: 'soon' is not an ISO 8601"):
        parse_datetime("soon", what="agent_clock_start")


def test_clock_settings_read_the_option_values():
    from pytest_agentctx.context.clock import ClockSettings

    settings = ClockSettings.build(start="2030-06-01T12:00:00Z", step="0.5", ignore=["my_mod"])

    assert settings == ClockSettings(
        datetime(2030, 6, 1, 12, tzinfo=UTC), timedelta(seconds=0.5), ("my_mod",)
    )


def test_clock_settings_refuse_a_negative_step():
    from pytest_agentctx.context.clock import ClockSettings

    with pytest.raises(ValueError, match=r"agent_clock_step = '-1' must not be negative"):
        ClockSettings.build(start="2030-06-01", step="-1", ignore=())
