"""Unit tests of pytest_agentctx.doubles.freeze: FrozenClock on freezegun,
with a module-walk skip list.

The clock is frozen in 2001 in most tests: any reading from the real clock is then far
later than the frozen one, so a test tells them apart without sleeping.
"""

from __future__ import annotations

import asyncio
import sys
import time
import types
from datetime import UTC, datetime, timedelta, timezone
from time import time as module_level_time

import pytest

from pytest_agentctx.context.clock import DEFAULT_START, Clock
from pytest_agentctx.doubles.freeze import DEFAULT_SKIP, FrozenClock

START = "2001-02-03T04:05:06Z"
FROZEN = datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)


def _module(name: str, monkeypatch: pytest.MonkeyPatch, source: str) -> types.ModuleType:
    """A module called ``name`` in ``sys.modules`` (for this test only), running ``source``."""
    module = types.ModuleType(name)
    exec(source, module.__dict__)
    monkeypatch.setitem(sys.modules, name, module)
    return module


# -- freezing ------------------------------------------------------------------------


def test_datetime_now_is_frozen_in_test_code():
    with FrozenClock(START):
        assert datetime.now(UTC) == FROZEN


def test_time_time_is_frozen_in_test_code():
    with FrozenClock(START):
        assert time.time() == FROZEN.timestamp()


def test_a_module_level_copy_of_time_time_is_frozen_in_user_modules():
    with FrozenClock(START):
        assert module_level_time() == FROZEN.timestamp()


async def test_asyncio_sleep_does_not_hang_while_frozen():
    with FrozenClock(START) as clock:
        await asyncio.sleep(0.01)

        assert clock.now() == FROZEN


def test_stop_gives_the_real_clock_back():
    clock = FrozenClock(START).start()

    clock.stop()

    assert datetime.now(UTC) > FROZEN + timedelta(days=365)
    assert time.time() > (FROZEN + timedelta(days=365)).timestamp()


def test_leaving_the_with_block_gives_the_real_clock_back_after_an_error():
    with pytest.raises(RuntimeError, match="boom"), FrozenClock(START):
        raise RuntimeError("boom")

    assert datetime.now(UTC) > FROZEN + timedelta(days=365)


# -- now / tick / move_to ------------------------------------------------------------


def test_now_is_the_start_as_an_aware_utc_datetime():
    with FrozenClock(START) as clock:
        now = clock.now()

    assert (now, now.tzinfo) == (FROZEN, UTC)


def test_a_start_in_another_timezone_is_the_same_instant():
    start = datetime(2001, 2, 3, 6, 5, 6, tzinfo=timezone(timedelta(hours=2)))

    with FrozenClock(start) as clock:
        assert clock.now() == FROZEN


def test_a_naive_start_is_taken_as_utc():
    with FrozenClock("2001-02-03T04:05:06") as clock:
        assert clock.now() == FROZEN


def test_the_default_start_is_the_package_default():
    with FrozenClock() as clock:
        assert clock.now() == DEFAULT_START


def test_an_unreadable_start_says_what_is_expected():
    with pytest.raises(
        ValueError,
        match=r"^FrozenClock\(start=\.\.\.\): 'yesterday' is not an ISO 8601 date and time",
    ):
        FrozenClock("yesterday")


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (5, FROZEN + timedelta(seconds=5)),
        (0.5, FROZEN + timedelta(seconds=0.5)),
        (timedelta(minutes=2), FROZEN + timedelta(minutes=2)),
        (0, FROZEN),
    ],
)
def test_tick_moves_the_clock_forward_and_returns_the_new_time(delta, expected):
    with FrozenClock(START) as clock:
        assert clock.tick(delta) == expected


def test_tick_moves_one_second_by_default():
    with FrozenClock(START) as clock:
        assert clock.tick() == FROZEN + timedelta(seconds=1)


def test_tick_moves_the_wall_clock_seen_by_user_code():
    with FrozenClock(START) as clock:
        clock.tick(timedelta(hours=1))

        assert datetime.now(UTC) == FROZEN + timedelta(hours=1)


@pytest.mark.parametrize("delta", [-1, timedelta(seconds=-1)])
def test_tick_cannot_go_backwards(delta):
    with (
        FrozenClock(START) as clock,
        pytest.raises(ValueError, match=r"cannot go backwards; use move_to\(\)\.$"),
    ):
        clock.tick(delta)


@pytest.mark.parametrize(
    "when",
    [
        "2030-06-01T12:00:00Z",
        "2030-06-01T14:00:00+02:00",
        "2030-06-01T12:00:00",
        datetime(2030, 6, 1, 12, tzinfo=UTC),
    ],
)
def test_move_to_jumps_to_an_instant_and_returns_it(when):
    with FrozenClock(START) as clock:
        assert clock.move_to(when) == datetime(2030, 6, 1, 12, tzinfo=UTC)


def test_move_to_can_go_back_in_time_and_user_code_sees_it():
    with FrozenClock(START) as clock:
        clock.move_to("1999-12-31T23:59:59Z")

        assert datetime.now(UTC) == datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_move_to_an_unreadable_time_says_what_is_expected():
    with (
        FrozenClock(START) as clock,
        pytest.raises(
            ValueError, match=r"^FrozenClock\.move_to\(\): 'tomorrow' is not an ISO 8601"
        ),
    ):
        clock.move_to("tomorrow")


# -- state ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "args"), [("now", ()), ("tick", (1,)), ("move_to", ("2030-01-01T00:00:00Z",))]
)
def test_reading_or_moving_a_clock_that_was_never_started_is_an_error(method, args):
    with pytest.raises(
        RuntimeError,
        match=rf"^FrozenClock\.{method}\(\) needs a started clock; call start\(\) or use `with`\.$",
    ):
        getattr(FrozenClock(START), method)(*args)


def test_reading_a_stopped_clock_is_an_error():
    clock = FrozenClock(START).start()
    clock.stop()

    with pytest.raises(RuntimeError, match=r"needs a started clock"):
        clock.now()


def test_active_reflects_start_and_stop():
    clock = FrozenClock(START)

    states = [clock.active]
    clock.start()
    states.append(clock.active)
    clock.stop()
    states.append(clock.active)

    assert states == [False, True, False]


def test_starting_twice_keeps_one_freeze_that_one_stop_ends():
    clock = FrozenClock(START)

    assert clock.start() is clock
    assert clock.start() is clock
    clock.stop()

    assert datetime.now(UTC) > FROZEN + timedelta(days=365)


def test_stop_without_start_changes_nothing():
    FrozenClock(START).stop()

    assert datetime.now(UTC) > FROZEN + timedelta(days=365)


def test_repr_shows_the_frozen_instant_or_stopped():
    clock = FrozenClock(START)
    stopped = repr(clock)

    with clock:
        active = repr(clock)

    assert (stopped, active) == ("FrozenClock(stopped)", "FrozenClock(2001-02-03T04:05:06+00:00)")


def test_a_frozen_clock_is_a_clock_for_the_runtime():
    assert isinstance(FrozenClock(START), Clock)


# -- the module-walk skip list -------------------------------------------------------


@pytest.mark.parametrize("name", ["openai", "anthropic", "httpx2", "pydantic", "pytest_agentctx"])
def test_default_skip_holds_the_sdks_and_libraries(name):
    assert name in DEFAULT_SKIP


@pytest.mark.parametrize("name", ["asyncio", "re", "json", "threading", "_thread"])
def test_default_skip_holds_the_standard_library(name):
    assert name in DEFAULT_SKIP


@pytest.mark.parametrize("name", ["test", "tests", "datetime", "time"])
def test_default_skip_leaves_out_test_packages_datetime_and_time(name):
    assert name not in DEFAULT_SKIP


def test_default_skip_holds_top_level_names_only():
    assert [name for name in DEFAULT_SKIP if "." in name] == []


def test_modules_of_a_skipped_package_keep_their_real_time_copies(monkeypatch):
    before = time.time()
    module = _module("openai.agentctx_probe", monkeypatch, "from time import time as clock")

    with FrozenClock(START):
        assert module.clock() >= before


def test_a_module_whose_name_only_starts_like_a_skipped_one_is_walked(monkeypatch):
    # "re" is skipped; "research_notes" is not the "re" package and must be frozen.
    module = _module("research_notes", monkeypatch, "from time import time as clock")

    with FrozenClock(START):
        assert module.clock() == FROZEN.timestamp()


def test_skip_adds_the_top_level_packages_of_the_names_given():
    clock = FrozenClock(START, skip=["weather_lib.client", "billing"])

    assert clock.skip == DEFAULT_SKIP | {"weather_lib", "billing"}


def test_default_skip_false_skips_only_the_names_given():
    assert FrozenClock(START, skip=["weather_lib"], default_skip=False).skip == {"weather_lib"}


def test_a_module_on_the_skip_list_keeps_its_real_time_copies(monkeypatch):
    before = time.time()
    module = _module("weather_lib", monkeypatch, "from time import time as clock")

    with FrozenClock(START, skip=["weather_lib"]):
        assert module.clock() >= before


# -- freezegun's ignore --------------------------------------------------------------


def test_calls_made_from_an_ignored_module_see_real_time(monkeypatch):
    before = time.time()
    module = _module(
        "retry_helpers", monkeypatch, "import time\ndef read():\n    return time.time()\n"
    )

    with FrozenClock(START, ignore=["retry_helpers"]):
        assert module.read() >= before


def test_ignore_is_empty_by_default_so_no_caller_sees_real_time(monkeypatch):
    module = _module(
        "retry_helpers", monkeypatch, "import time\ndef read():\n    return time.time()\n"
    )

    with FrozenClock(START) as clock:
        assert (clock.ignore, module.read()) == ((), FROZEN.timestamp())


# -- pydantic models made while frozen -------------------------------------------------

FORECAST = """
from datetime import date, datetime
from pydantic import BaseModel

class Forecast(BaseModel):
    at: datetime
    day: date
"""


def test_a_model_with_datetime_fields_defined_while_frozen_validates(monkeypatch):
    # Imported while frozen, the module's datetime and date are freezegun's fake classes.
    with FrozenClock(START):
        module = _module("weather_models", monkeypatch, FORECAST)
        forecast = module.Forecast(at="2001-02-03T04:05:06Z", day="2001-02-03")

    assert (forecast.at, forecast.day) == (FROZEN, FROZEN.date())


def test_a_model_defined_while_frozen_round_trips_json_after_the_clock_stops(monkeypatch):
    with FrozenClock(START):
        module = _module("weather_models", monkeypatch, FORECAST)
        forecast = module.Forecast(at=FROZEN, day=FROZEN.date())

    text = forecast.model_dump_json()

    assert (text, module.Forecast.model_validate_json(text)) == (
        '{"at":"2001-02-03T04:05:06Z","day":"2001-02-03"}',
        forecast,
    )


def test_a_model_defined_while_frozen_has_the_json_schema_of_real_dates(monkeypatch):
    unfrozen = _module("weather_models", monkeypatch, FORECAST).Forecast.model_json_schema()
    with FrozenClock(START):
        frozen = _module("weather_models", monkeypatch, FORECAST).Forecast.model_json_schema()

    assert frozen == unfrozen


async def test_pydantic_first_loaded_under_a_frozen_clock_still_knows_real_dates_after_it():
    # a fresh interpreter, whose first pydantic model is built while the clock is frozen:
    # pydantic must have learnt the real datetime classes before the freeze, or no model with
    # a datetime field validates, frozen or not, for the rest of the session
    code = (
        "from pytest_agentctx.doubles.freeze import FrozenClock\n"
        "with FrozenClock('2001-02-03T04:05:06Z'):\n"
        "    from datetime import datetime\n"
        "    from pydantic import BaseModel\n"
        "    class Frozen(BaseModel):\n"
        "        at: datetime\n"
        "    frozen = Frozen(at='2001-02-03T04:05:06Z').at.year\n"
        "import datetime as real\n"
        "class Later(BaseModel):\n"
        "    at: real.datetime\n"
        "print(frozen, Later(at='2024-05-06T07:08:09Z').at.year)\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()

    assert (process.returncode, out.decode().strip()) == (0, "2001 2024"), err.decode()
