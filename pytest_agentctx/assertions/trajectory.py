"""Trajectory checks: the tool calls of a run against the calls a test expects.

``Trajectory(expected, mode=..., args=..., overrides=..., nested=...)`` is a pattern, so it
works with ``matches()``, inside larger patterns and with ``==``::

    assert matches(result.context, Trajectory(["get_weather", "send_email"]))

``mode`` compares the sequences of calls (the same modes as agentevals' trajectory match):

- ``strict``: the same calls in the same order;
- ``unordered``: the same calls in any order;
- ``subset``: every call the agent made is expected (it made no other call);
- ``superset``: every expected call was made (other calls are allowed).

``args`` compares the arguments of two calls to the same tool: ``exact`` (the same keys and
values), ``ignore``, ``subset`` (the agent's arguments are among the expected ones) or
``superset`` (the agent's arguments include the expected ones). ``overrides`` sets it per
tool, as one of these words or a function ``(actual_args, expected_args) -> bool``.
Expected argument values may be patterns (``ANY``, ``Regex(...)``, dirty-equals types).

With ``nested=True`` the calls of sub-agent runs count too: any :class:`AgentContext`, or
dict shaped like one, found in an iteration's ``metadata`` is a nested run, and its calls
follow the calls of the iteration that holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pytest_agentctx.assertions.patterns.assignment import Keyer, assign
from pytest_agentctx.assertions.patterns.base import Pattern
from pytest_agentctx.assertions.patterns.engine import fields_at, match_at
from pytest_agentctx.assertions.patterns.exact import exact_at
from pytest_agentctx.assertions.patterns.mismatch import (
    Mismatch,
    Out,
    PathCell,
    format_path,
    report_closest,
    short,
)
from pytest_agentctx.context.errors import PatternError
from pytest_agentctx.context.model import AgentContext, ToolCall
from pytest_agentctx.context.nested import LocatedCall, as_context, located_calls, nested_contexts

#: How the sequence of calls is compared.
Mode = Literal["strict", "unordered", "subset", "superset"]
#: How the arguments of two calls to the same tool are compared.
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
#: How to compare the arguments of two calls: a mode, or ``fn(actual, expected) -> bool``.
ArgsCheck = ArgsMode | Callable[[Mapping[str, Any], Mapping[str, Any]], bool]

_MODES: tuple[str, ...] = get_args(Mode)
_ARGS_MODES: tuple[str, ...] = get_args(ArgsMode)


def _require_context(run: Any, what: str) -> AgentContext:
    context = as_context(run)
    if context is None:
        raise PatternError(
            f"{what} takes an AgentContext (or a RunResult, or a dict shaped like a "
            f"context), got {type(run).__name__}: {short(run)}."
        )
    return context


def nested_runs(run: Any) -> list[tuple[str, AgentContext]]:
    """Every sub-agent run stored in the iterations' metadata, with its path, depth first."""
    return nested_contexts(_require_context(run, "nested_runs()"))


def tool_calls(run: Any, *, nested: bool = False) -> list[LocatedCall]:
    """The tool calls of a run in order, each with its path (sub-agents' too if ``nested``)."""
    return located_calls(_require_context(run, "tool_calls()"), nested=nested)


# -- the expected calls ------------------------------------------------------------------


@dataclass(frozen=True)
class _Expected:
    name: Any
    arguments: Mapping[str, Any] | Pattern | None
    pattern: Any = None

    def describe(self) -> str:
        if self.pattern is not None:
            return short(self.pattern)
        name = self.name if isinstance(self.name, str) else short(self.name)
        if self.arguments is None:
            return f"{name}(…)"
        if isinstance(self.arguments, Pattern):
            return f"{name}({short(self.arguments)})"
        return f"{name}({short(dict(self.arguments))})"


def _expected(spec: Any, index: int) -> _Expected:
    if isinstance(spec, ToolCall):
        return _Expected(spec.name, spec.arguments)
    if isinstance(spec, str):
        return _Expected(spec, None)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], (Mapping, Pattern)):
        return _Expected(spec[0], spec[1])
    if isinstance(spec, Mapping) and "name" in spec and set(spec) <= {"name", "arguments", "id"}:
        arguments = spec.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise PatternError(
                f"Trajectory: expected call {index} has arguments {arguments!r}; give them as "
                "a dict, e.g. {'name': 'get_weather', 'arguments': {'city': 'Paris'}}."
            )
        return _Expected(spec["name"], arguments)
    if isinstance(spec, Pattern):
        return _Expected(None, None, spec)
    raise PatternError(
        f"Trajectory: cannot read expected call {index}, {spec!r}, as a tool call. Give a "
        "tool name ('get_weather'), a ('get_weather', {'city': 'Paris'}) pair, a dict "
        "{'name': ..., 'arguments': {...}}, a ToolCall, or a pattern such as "
        "Like(ToolCall, name='get_weather')."
    )


def _describe_call(call: ToolCall) -> str:
    return f"{call.name}({short(dict(call.arguments))})"


def _check_args_mode(check: Any, where: str) -> ArgsCheck:
    if callable(check) or check in _ARGS_MODES:
        return check  # type: ignore[no-any-return]
    raise PatternError(
        f"Trajectory({where}={check!r}): the argument modes are {', '.join(_ARGS_MODES)}, or "
        "a function (actual_args, expected_args) -> bool."
    )


class _NameKeyer(Keyer):
    def pattern_key(self, pattern: Any) -> Any:
        expected: _Expected = pattern
        if expected.pattern is None and isinstance(expected.name, str):
            return expected.name
        return Keyer.WILD

    def item_key(self, item: Any) -> Any:
        located: LocatedCall = item
        return located.call.name


class Trajectory(Pattern):
    """A pattern over the tool calls of a run; see the module documentation.

    >>> Trajectory(["get_weather", ("send_email", {"to": "ann@example.com"})], mode="superset")
    Trajectory(['get_weather(…)', "send_email({'to': 'ann@example.com'})"], mode='superset')
    """

    __slots__ = ("args", "expected", "mode", "nested", "overrides")

    def __init__(
        self,
        expected: Sequence[Any],
        *,
        mode: Mode = "strict",
        args: ArgsCheck = "exact",
        overrides: Mapping[str, ArgsCheck] | None = None,
        nested: bool = False,
    ) -> None:
        if isinstance(expected, (str, bytes)) or not isinstance(expected, Sequence):
            raise PatternError(
                f"Trajectory() takes a list of expected calls, got {type(expected).__name__}: "
                f"{expected!r}. Example: Trajectory(['get_weather', 'send_email'])."
            )
        if mode not in _MODES:
            raise PatternError(f"Trajectory(mode={mode!r}): the modes are {', '.join(_MODES)}.")
        self.expected = [_expected(spec, index) for index, spec in enumerate(expected)]
        self.mode: Mode = mode
        self.args = _check_args_mode(args, "args")
        self.overrides = {
            name: _check_args_mode(check, f"overrides[{name!r}]")
            for name, check in (overrides or {}).items()
        }
        self.nested = nested

    # -- one pair of calls ---------------------------------------------------------------

    def _args_check(self, name: str) -> ArgsCheck:
        return self.overrides.get(name, self.args)

    def _pair(self, actual: ToolCall, expected: _Expected, path: PathCell, out: Out) -> bool:
        if expected.pattern is not None:
            return match_at(actual, expected.pattern, path, out)
        ok = match_at(actual.name, expected.name, (path, "name"), out)
        if not ok and out is None:
            return False
        if expected.arguments is not None:
            check = self._args_check(actual.name)
            where = (path, "arguments")
            ok = (
                _compare_args(actual.arguments, expected.arguments, check, actual.name, where, out)
                and ok
            )
        return ok

    # -- the whole trajectory ------------------------------------------------------------

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        context = as_context(value)
        if context is None:
            if out is not None:
                out.append(
                    Mismatch(
                        format_path(path),
                        f"expected an AgentContext (or a RunResult), got {short(value)}",
                    )
                )
            return False
        calls = located_calls(context, nested=self.nested)

        def cell(located: LocatedCall) -> PathCell:
            result = path
            for key in located.keys:
                result = (result, key)
            return result

        if self.mode == "strict":
            return self._strict(calls, path, out, cell)
        return self._unordered(calls, path, out, cell)

    def _strict(
        self,
        calls: list[LocatedCall],
        path: PathCell,
        out: Out,
        cell: Callable[[LocatedCall], PathCell],
    ) -> bool:
        n, m = len(calls), len(self.expected)
        if out is None and n != m:
            return False
        ok = True
        for index in range(min(n, m)):
            if not self._pair(calls[index].call, self.expected[index], cell(calls[index]), out):
                ok = False
                if out is None:
                    return False
        if out is not None:
            for located in calls[m:]:
                ok = False
                out.append(
                    Mismatch(
                        format_path(cell(located)),
                        f"unexpected call {_describe_call(located.call)}",
                    )
                )
            for index in range(n, m):
                ok = False
                out.append(
                    Mismatch(
                        format_path(((path, "tool_calls"), index)),
                        f"missing call {self.expected[index].describe()}",
                    )
                )
        return ok

    def _unordered(
        self,
        calls: list[LocatedCall],
        path: PathCell,
        out: Out,
        cell: Callable[[LocatedCall], PathCell],
    ) -> bool:
        def test(located: LocatedCall, expected: _Expected) -> bool:
            return self._pair(located.call, expected, None, None)

        call_of_expected: list[int | None]
        expected_of_call, call_of_expected = assign(calls, self.expected, test, keyer=_NameKeyer())
        need_expected = self.mode in ("unordered", "superset")
        need_calls = self.mode in ("unordered", "subset")
        missing = [j for j, i in enumerate(call_of_expected) if i is None]
        extra = [i for i, j in enumerate(expected_of_call) if j is None]
        ok = not (need_expected and missing) and not (need_calls and extra)
        if ok or out is None:
            return ok
        if need_expected:
            for j in missing:
                self._report_missing(calls, extra, self.expected[j], path, out, cell)
        if need_calls:
            for i in extra:
                what = "unexpected call" if self.mode == "unordered" else "call not expected"
                out.append(
                    Mismatch(
                        format_path(cell(calls[i])),
                        f"{what}: {_describe_call(calls[i].call)}",
                    )
                )
        return False

    def _report_missing(
        self,
        calls: list[LocatedCall],
        free: list[int],
        expected: _Expected,
        path: PathCell,
        out: list[Mismatch],
        cell: Callable[[LocatedCall], PathCell],
    ) -> None:
        pool = list(free or range(len(calls)))
        if expected.pattern is None and isinstance(expected.name, str):
            pool = [i for i in pool if calls[i].call.name == expected.name]

        def mismatches_at(i: int) -> list[Mismatch]:
            found: list[Mismatch] = []
            self._pair(calls[i].call, expected, cell(calls[i]), found)
            return found

        message = f"no call matches {expected.describe()}"
        where = format_path((path, "tool_calls"))
        if report_closest(
            out, where, message, pool, mismatches_at, lambda i: format_path(cell(calls[i]))
        ):
            return
        if expected.pattern is None and isinstance(expected.name, str):
            message += f"; {expected.name} was never called"
        out.append(Mismatch(where, message))

    def __repr__(self) -> str:
        expected = [e.describe() for e in self.expected]
        options = [f"mode={self.mode!r}"]
        if self.args != "exact":
            options.append(f"args={self.args!r}")
        if self.overrides:
            options.append(f"overrides={self.overrides!r}")
        if self.nested:
            options.append("nested=True")
        return f"Trajectory({expected!r}, {', '.join(options)})"


def _compare_args(
    actual: Mapping[str, Any],
    expected: Mapping[str, Any] | Pattern,
    check: ArgsCheck,
    tool: str,
    path: PathCell,
    out: Out,
) -> bool:
    if check == "ignore":
        return True
    if isinstance(expected, Pattern):
        return match_at(actual, expected, path, out)
    if check == "exact":
        return exact_at(actual, dict(expected), path, out)
    if check == "superset":
        return fields_at(actual, expected, path, out)
    if check == "subset":
        ok = True
        for key, value in actual.items():
            if key not in expected:
                ok = False
                if out is None:
                    return False
                out.append(
                    Mismatch(
                        format_path((path, key)),
                        f"argument not among the expected ones, with value {short(value)}",
                    )
                )
            elif not match_at(value, expected[key], (path, key), out):
                ok = False
                if out is None:
                    return False
        return ok
    assert callable(check)
    try:
        if check(actual, expected):
            return True
        problem = f"{short(dict(actual))} rejected by the argument check for {tool!r}"
    except Exception as exc:
        problem = (
            f"the argument check for {tool!r} raised {type(exc).__name__}: {exc} on "
            f"{short(dict(actual))}"
        )
    if out is not None:
        out.append(Mismatch(format_path(path), problem))
    return False
