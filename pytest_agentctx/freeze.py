"""A frozen wall clock for user code, on freezegun, that starts fast and keeps asyncio alive.

Tools and agents sometimes read the wall clock themselves (``datetime.now()``,
``time.time()``). :class:`FrozenClock` freezes it with freezegun, with two changes to
freezegun's defaults:

* ``real_asyncio=True``: event loops keep real monotonic time, so ``asyncio.sleep``,
  ``wait_for``, ``httpx2`` timeouts and the SDKs' retries do not hang.
* A default ignore list of the standard library and of libraries that never need their
  clock frozen (the SDKs, ``httpx2``, pydantic, pytest...). On every start freezegun walks
  every loaded module and lists its attributes; with the SDKs imported that walk dominates
  the cost of a test. Modules on the list are skipped (and calls made from them see real
  time, which is what timeouts and retries need). Your own modules are still patched.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from .clock import DEFAULT_START, parse_datetime

__all__ = ["DEFAULT_IGNORE", "FrozenClock"]

_LIBRARIES = (
    "_pytest",
    "pytest",
    "pluggy",
    "iniconfig",
    "pytest_asyncio",
    "pytest_agentctx",
    "xdist",
    "execnet",
    "openai",
    "anthropic",
    "httpx2",
    "httpcore2",
    "httpx",
    "httpcore",
    "h11",
    "h2",
    "hpack",
    "hyperframe",
    "anyio",
    "sniffio",
    "certifi",
    "idna",
    "distro",
    "jiter",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_extensions",
    "typing_inspection",
    "freezegun",
    "dateutil",
    "six",
    "yaml",
    "_yaml",
    "vcr",
    "wrapt",
    "syrupy",
    "dirty_equals",
    "respx",
    "tiktoken",
    "regex",
    "docstring_parser",
    "tqdm",
    "pygments",
    "_distutils_hack",
    "pkg_resources",
    "setuptools",
    "importlib_metadata",
    "zipp",
)

# "test" is a stdlib package name that users' test packages share: never ignore it.
_STDLIB = tuple(sorted(n for n in sys.stdlib_module_names if n not in ("datetime", "time", "test")))


def _prefixes(name: str, *, bare: bool) -> tuple[str, ...]:
    # freezegun compares with str.startswith: a bare name also matches longer module names
    # ("re" would match "research"), so bare names are used only where that cannot bite.
    return (f"{name}.", name) if bare else (f"{name}.",)


#: Module name prefixes that :class:`FrozenClock` neither scans nor freezes by default.
DEFAULT_IGNORE: tuple[str, ...] = (
    *(p for n in _STDLIB for p in _prefixes(n, bare=n.startswith("_"))),
    *(p for n in _LIBRARIES for p in _prefixes(n, bare=len(n) >= 6 or n.startswith("_"))),
)


class FrozenClock:
    """The wall clock frozen at ``start`` until :meth:`tick` or :meth:`move_to` moves it.

    Use it as a context manager or with :meth:`start`/:meth:`stop`. It also satisfies the
    :class:`~pytest_agentctx.clock.Clock` protocol, so a runtime can share it.
    """

    def __init__(
        self,
        start: datetime | str = DEFAULT_START,
        *,
        ignore: Iterable[str] = (),
        default_ignore: bool = True,
    ) -> None:
        self.initial = parse_datetime(start, what="FrozenClock(start=...)")
        extra = tuple(ignore)
        self.ignore: tuple[str, ...] = (*DEFAULT_IGNORE, *extra) if default_ignore else extra
        self._freezer: Any = None
        self._factory: Any = None

    @property
    def active(self) -> bool:
        """Whether the clock is frozen now."""
        return self._factory is not None

    def start(self) -> FrozenClock:
        """Freeze the wall clock."""
        if self._factory is not None:
            return self
        from freezegun import freeze_time

        # freezegun works in naive UTC; give it the instant without its offset.
        naive_utc = self.initial.astimezone(UTC).replace(tzinfo=None)
        self._freezer = freeze_time(naive_utc, real_asyncio=True, ignore=list(self.ignore))
        self._factory = self._freezer.start()
        return self

    def stop(self) -> None:
        """Give the wall clock back."""
        if self._freezer is not None:
            self._freezer.stop()
        self._freezer = None
        self._factory = None

    def _require_active(self, what: str) -> Any:
        if self._factory is None:
            raise RuntimeError(
                f"FrozenClock.{what}() needs a started clock; call start() or use `with`."
            )
        return self._factory

    def now(self) -> datetime:
        """The frozen instant, as an aware UTC datetime."""
        factory = self._require_active("now")
        value: datetime = factory()
        return value.replace(tzinfo=UTC)

    def tick(self, delta: timedelta | float = 1.0) -> datetime:
        """Move the clock forward by ``delta`` (a timedelta or seconds); return the new time."""
        factory = self._require_active("tick")
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise ValueError(f"FrozenClock.tick({delta!r}) cannot go backwards; use move_to().")
        factory.tick(timedelta(seconds=seconds))
        return self.now()

    def move_to(self, when: datetime | str) -> datetime:
        """Jump to ``when`` (an aware datetime or ISO 8601 text); return it."""
        factory = self._require_active("move_to")
        target = parse_datetime(when, what="FrozenClock.move_to()")
        factory.move_to(target.astimezone(UTC).replace(tzinfo=None))
        return self.now()

    def __enter__(self) -> FrozenClock:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.now().isoformat() if self.active else "stopped"
        return f"FrozenClock({state})"
