"""The fake tools: :class:`FakeTools` replaces tools by name with canned results, raised
errors or functions, and keeps a ledger of every tool call the runtime made
(:class:`FakeToolCall`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.doubles.errors import FakeToolsError


@dataclass(frozen=True)
class FakeToolCall:
    """One entry of the :class:`FakeTools` ledger."""

    name: str
    arguments: dict[str, Any]
    iteration: int
    tool_call_id: str
    replaced: bool


@dataclass
class _Replacement:
    result: object = None
    raises: BaseException | None = None
    fn: Callable[..., object] | None = None


class _Missing:
    """The type of :data:`_MISSING`: no ``result=`` given (``None`` is a result)."""


_MISSING = _Missing()


@dataclass
class FakeTools:
    """Replaces tools by name and records every tool call the runtime makes.

    >>> tools = FakeTools().replace("get_weather", "sunny")
    >>> tools = tools.replace("book", raises=TimeoutError("down"))
    >>> sorted(tools.replaced)
    ['book', 'get_weather']
    """

    calls: list[FakeToolCall] = field(default_factory=list)
    _replacements: dict[str, _Replacement] = field(default_factory=dict)

    def replace(
        self,
        name: str,
        result: object = _MISSING,
        *,
        raises: BaseException | None = None,
        fn: Callable[..., object] | None = None,
    ) -> FakeTools:
        """Answer calls to tool ``name`` with ``result``, by raising ``raises``, or with ``fn``.

        ``fn`` receives the validated arguments as keywords. Returns the fakes, to chain.
        """
        given = [
            what
            for what, present in (
                ("result", result is not _MISSING),  # None is a valid result
                ("raises", raises is not None),
                ("fn", fn is not None),
            )
            if present
        ]
        if len(given) != 1:
            raise FakeToolsError(
                f"fake_tools.replace({name!r}, ...) needs exactly one of result=, raises= or "
                f"fn=; got {given or 'none'}. Example: fake_tools.replace({name!r}, 'sunny')."
            )
        if raises is not None and not isinstance(raises, BaseException):
            raise FakeToolsError(
                f"fake_tools.replace({name!r}, raises=...) needs an exception instance, got "
                f"{raises!r}. Example: raises=TimeoutError('service down')."
            )
        self._replacements[name] = _Replacement(
            result=None if result is _MISSING else result, raises=raises, fn=fn
        )
        return self

    @property
    def replaced(self) -> set[str]:
        """The names of the replaced tools."""
        return set(self._replacements)

    def calls_to(self, name: str) -> list[FakeToolCall]:
        """The ledger entries of one tool."""
        return [call for call in self.calls if call.name == name]

    def override_for(self, name: str) -> Callable[..., object] | None:
        """The function that answers tool ``name`` instead of the real one, if replaced."""
        replacement = self._replacements.get(name)
        if replacement is None:
            return None

        def answer(**arguments: object) -> object:
            if replacement.raises is not None:
                raise replacement.raises
            if replacement.fn is not None:
                return replacement.fn(**arguments)
            return replacement.result

        return answer

    def record(self, call: ToolCall, iteration: int) -> None:
        """Add a call to the ledger (the runtime calls this for every tool call)."""
        self.calls.append(
            FakeToolCall(
                call.name, dict(call.arguments), iteration, call.id, call.name in self._replacements
            )
        )

    def names(self) -> Sequence[str]:
        """The names of the tools called, in order."""
        return [call.name for call in self.calls]
