"""The process's wall clock frozen for user code: :class:`FrozenClock`, on freezegun, which
starts fast and keeps asyncio alive, and its :data:`DEFAULT_SKIP` list.

Tools and agents sometimes read the wall clock themselves (``datetime.now()``,
``time.time()``). :class:`FrozenClock` freezes it with freezegun, with two changes to
freezegun's defaults:

* ``real_asyncio=True``: event loops keep real monotonic time, so ``asyncio.sleep``,
  ``wait_for``, ``httpx2`` timeouts and the SDKs' retries do not hang.
* A skip list for freezegun's module walk. On every start freezegun walks every loaded
  module, lists its attributes (``dir()``) and hashes the names, to find copies of
  ``time.time``, ``datetime`` and friends made by ``from time import time``. With the SDKs
  imported that walk is most of the cost of a test. The standard library and libraries
  that never need their clock frozen (the SDKs, ``httpx2``, pydantic, pytest...) are not
  walked: their own ``from time import monotonic`` copies keep real time, which is what
  their timeouts and retries need. Your modules are still walked and patched, and
  ``datetime.datetime``, ``time.time`` and the other module-level functions are frozen for
  every caller, as with plain freezegun.

Unlike freezegun's ``ignore=`` list, the skip list does not make calls *from* those modules
see real time: freezegun's ``ignore`` looks five frames up the stack, so ignoring pytest or
asyncio would unfreeze every test. ``ignore=`` is still available for that purpose.

While the clock is frozen, ``datetime.datetime`` and ``datetime.date`` *are* freezegun's
``FakeDatetime`` and ``FakeDate``: a module imported then (an SDK imported lazily on the
first model call, a module of yours) binds them by ``from datetime import datetime``, and
pydantic, which knows the real classes only, cannot build the schema of a model with a
``datetime`` field (``PydanticSchemaGenerationError ... FakeDatetime``): whether a test
passed depended on whether something had imported the SDK before. :class:`FrozenClock`
therefore gives the two fake classes the schemas of the real ones, so such a model
validates and serialises datetimes and dates as it would unfrozen.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from types import ModuleType, TracebackType
from typing import Protocol

# Imported here, before any freeze: pydantic's schema generator keys its table of known types
# by the classes ``datetime.datetime`` and ``datetime.date`` are when it is first imported, and
# a freeze makes those freezegun's fakes. ``TypeAdapter`` is the public name whose import loads
# that generator; without it a session whose first model is built under a frozen clock could
# never validate a real datetime again.
from pydantic import (
    GetCoreSchemaHandler,
    TypeAdapter as _loads_the_schema_generator,  # noqa: F401
)
from pydantic_core import CoreSchema, core_schema

from pytest_agentctx.context.clock import DEFAULT_START, parse_datetime

_LIBRARIES = frozenset(
    {
        "_pytest",
        "pytest",
        "pluggy",
        "py",
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
    }
)

#: Top-level package names whose modules :class:`FrozenClock` does not walk by default:
#: the standard library (except ``test``, a name users' test packages share) and the
#: libraries above. Matching is by top-level name, never by string prefix.
DEFAULT_SKIP: frozenset[str] = (
    frozenset(n for n in sys.stdlib_module_names if n not in ("datetime", "time", "test"))
    | _LIBRARIES
)


class _TimeFactory(Protocol):
    """What freezegun's ``start()`` returns: the frozen time, moved by ``tick``/``move_to``."""

    def __call__(self) -> datetime: ...

    def tick(self, delta: timedelta, /) -> datetime: ...

    def move_to(self, target: datetime, /) -> None: ...


class _Freezer(Protocol):
    """What freezegun's ``freeze_time(...)`` returns."""

    def start(self) -> _TimeFactory: ...

    def stop(self) -> None: ...


def _top_level(name: str) -> str:
    return name.partition(".")[0]


class FrozenClock:
    """The wall clock frozen at ``start`` until :meth:`tick` or :meth:`move_to` moves it.

    Use it as a context manager or with :meth:`start`/:meth:`stop`. It also satisfies the
    :class:`~pytest_agentctx.context.clock.Clock` protocol, so a runtime can share it.
    """

    def __init__(
        self,
        start: datetime | str = DEFAULT_START,
        *,
        skip: Iterable[str] = (),
        default_skip: bool = True,
        ignore: Iterable[str] = (),
    ) -> None:
        self.initial = parse_datetime(start, what="FrozenClock(start=...)")
        extra = frozenset(_top_level(name) for name in skip)
        #: Top-level package names whose modules are not walked on start.
        self.skip: frozenset[str] = (DEFAULT_SKIP | extra) if default_skip else extra
        #: freezegun's ``ignore``: calls made from these modules see real time.
        self.ignore: tuple[str, ...] = tuple(ignore)
        self._freezer: _Freezer | None = None
        self._factory: _TimeFactory | None = None

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
        _pydantic_reads_fake_dates()
        freezer: _Freezer = freeze_time(naive_utc, real_asyncio=True, ignore=list(self.ignore))
        self._freezer = freezer
        with _skipping(self.skip):
            self._factory = freezer.start()
        return self

    def stop(self) -> None:
        """Give the wall clock back."""
        if self._freezer is not None:
            self._freezer.stop()
        self._freezer = None
        self._factory = None

    def _require_active(self, what: str) -> _TimeFactory:
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


def _pydantic_reads_fake_dates() -> None:
    """Give freezegun's ``FakeDatetime`` and ``FakeDate`` the pydantic schemas of
    ``datetime.datetime`` and ``datetime.date``: a model whose module was imported while the
    clock was frozen annotates its fields with the fake classes. Idempotent."""
    import freezegun.api as api

    schemas = (
        (api.FakeDatetime, core_schema.datetime_schema),
        (api.FakeDate, core_schema.date_schema),
    )
    for fake, build in schemas:
        if "__get_pydantic_core_schema__" in vars(fake):
            continue

        def schema(
            cls: type,
            source: object,
            handler: GetCoreSchemaHandler,
            *,
            build: Callable[[], CoreSchema] = build,
        ) -> CoreSchema:
            return build()

        setattr(fake, "__get_pydantic_core_schema__", classmethod(schema))  # noqa: B010


class _skipping:
    """While active, freezegun's module walk passes over modules of the skipped packages."""

    def __init__(self, skip: frozenset[str]) -> None:
        self.skip = skip
        self._original: Callable[[ModuleType], list[tuple[str, object]]] | None = None

    def __enter__(self) -> None:
        import freezegun.api as api

        original = getattr(api, "_get_cached_module_attributes", None)
        if original is None:  # a freezegun without the hook: walk everything, as it would
            return
        skip = self.skip

        def walk(module: ModuleType) -> list[tuple[str, object]]:
            if _top_level(getattr(module, "__name__", "") or "") in skip:
                return []
            result: list[tuple[str, object]] = original(module)
            return result

        self._original = original
        setattr(api, "_get_cached_module_attributes", walk)  # noqa: B010

    def __exit__(self, *exc_info: object) -> None:
        if self._original is not None:
            import freezegun.api as api

            setattr(api, "_get_cached_module_attributes", self._original)  # noqa: B010
            self._original = None
