"""Recovery from a failed step: what a tool's ``on_failure`` handler and ``compensate``
function receive (:class:`Failure`, :class:`CompletedStep`), and the records of both kept in
the iteration's metadata (:class:`CompensationRecord`).

A tool declares both on :func:`~pytest_agentctx.runtime.tools.tool`::

    @tool(on_failure=handle_payment_error, compensate=release_seat)
    def book_seat(flight: str) -> str: ...

When the tool raises, the runtime calls the handler with a :class:`Failure` (the
exception's type, message and traceback, the step's name, the time from the runtime's
clock). A handler that returns a value *recovers*: the value becomes the tool's result and
the run goes on. A handler that returns ``None`` (or raises) does not: the runtime calls
the ``compensate`` function of every step already done in the run, newest first, each with
a :class:`CompletedStep`, records all of it in the iteration's metadata (``failures``,
``compensations``) and raises :class:`~pytest_agentctx.runtime.errors.StepFailed`.

This module holds the records and their JSON form; the runtime
(:mod:`pytest_agentctx.runtime.steps`) does the work.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

if TYPE_CHECKING:
    from pytest_agentctx.runtime.tools import RunContext

#: ``on_failure``: called with the :class:`Failure`; a value other than ``None`` recovers
#: (sync or async: an awaitable it returns is awaited).
FailureHandler = Callable[["Failure"], object]
#: ``compensate``: called with the :class:`CompletedStep` to undo (sync or async).
Compensation = Callable[["CompletedStep"], object]

_PACKAGE_DIR = str(PurePath(__file__).parents[1])


def format_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` as text, stable across machines and runs.

    Frames inside pytest-agentctx itself are left out (the user's code is what matters),
    and each file is named by its base name, not its absolute path, so a context that
    holds the text is the same on every machine.
    """
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(_PACKAGE_DIR)
    ]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    for frame in frames:
        lines.append(
            f'  File "{PurePath(frame.filename).name}", line {frame.lineno}, in {frame.name}\n'
        )
        if frame.line:
            lines.append(f"    {frame.line.strip()}\n")
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines).rstrip("\n")


def _callable_name(fn: object) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


class FailureJSON(TypedDict):
    """A :class:`Failure` as the iteration's metadata keeps it (``at`` in ISO 8601)."""

    step: str
    tool_call_id: str
    iteration: int
    error_type: str
    message: str
    traceback: str
    at: str


class CompensationJSON(TypedDict):
    """A :class:`CompensationRecord` as the iteration's metadata keeps it; ``error`` only
    when the compensation failed."""

    step: str
    tool_call_id: str
    iteration: int
    status: Literal["compensated", "failed"]
    at: str
    error: NotRequired[str]


@dataclass(frozen=True)
class Failure:
    """A step that raised, as its ``on_failure`` handler receives it.

    ``step`` is the tool's name, ``at`` the runtime clock's time when the failure was
    caught; ``traceback`` is :func:`format_traceback` text. ``exception`` is the exception
    object itself (not recorded in the context). ``arguments`` are the tool's validated
    arguments, typed ``Any``: the handler knows the tool's parameters, this module does not.
    """

    step: str
    tool_call_id: str
    iteration: int
    error_type: str
    message: str
    traceback: str
    at: datetime
    arguments: Mapping[str, Any] = field(default_factory=dict)
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_exception(
        cls,
        exc: BaseException,
        *,
        step: str,
        tool_call_id: str,
        iteration: int,
        at: datetime,
        arguments: Mapping[str, object] | None = None,
    ) -> Failure:
        """The record of ``exc``, raised by ``step``."""
        return cls(
            step=step,
            tool_call_id=tool_call_id,
            iteration=iteration,
            error_type=type(exc).__name__,
            message=str(exc),
            traceback=format_traceback(exc),
            at=at,
            arguments=dict(arguments or {}),
            exception=exc,
        )

    def to_dict(self) -> FailureJSON:
        """The JSON form kept in the iteration's metadata (without the exception object)."""
        return {
            "step": self.step,
            "tool_call_id": self.tool_call_id,
            "iteration": self.iteration,
            "error_type": self.error_type,
            "message": self.message,
            "traceback": self.traceback,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True)
class CompletedStep:
    """A step that succeeded, as its ``compensate`` function receives it.

    ``output`` is what the tool returned (before it was rendered as text);
    ``run_context`` is the :class:`~pytest_agentctx.runtime.tools.RunContext` the tool ran with,
    so a compensation reaches the same dependencies (``run_context.deps``). ``arguments``
    and ``output`` are typed ``Any``: the compensation knows the tool's types, this module
    does not.
    """

    step: str
    tool_call_id: str
    iteration: int
    arguments: Mapping[str, Any]
    output: Any
    run_context: RunContext | None = field(default=None, compare=False, repr=False)
    compensate: Compensation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CompensationRecord:
    """What happened when one completed step was compensated."""

    step: str
    tool_call_id: str
    iteration: int
    status: Literal["compensated", "failed"]
    at: datetime
    error: str | None = None

    def to_dict(self) -> CompensationJSON:
        """The JSON form kept in the iteration's metadata."""
        data: CompensationJSON = {
            "step": self.step,
            "tool_call_id": self.tool_call_id,
            "iteration": self.iteration,
            "status": self.status,
            "at": self.at.isoformat(),
        }
        if self.error is not None:
            data["error"] = self.error
        return data


async def call_maybe_async(fn: Callable[..., object], *args: object) -> object:
    """Call ``fn`` and await its result if it is awaitable."""
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def handler_name(fn: object) -> str:
    """The name a handler or compensation is recorded under."""
    return _callable_name(fn)
