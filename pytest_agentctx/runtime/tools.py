"""Tools: plain Python functions whose signature and docstring become the tool schema.

>>> @tool
... def get_weather(city: str, unit: str = "celsius") -> str:
...     '''Current weather for a city.
...
...     Args:
...         city: The city's name.
...         unit: "celsius" or "fahrenheit".
...     '''
...     return f"18 degrees {unit} in {city}"

The arguments a model sends are validated by a pydantic model built from the signature
before the function runs. A tool may be sync or async, and may take one parameter
annotated :class:`RunContext` to receive the runtime's context (agent, actor, tenant,
dependencies, state, iteration): that parameter is not part of the schema.

A tool may also declare what happens when it fails (see :mod:`pytest_agentctx.runtime.recovery`):
``@tool(on_failure=handler, compensate=undo)``. Without ``on_failure``, an exception is
fed back to the model as an error result.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_type_hints, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, create_model

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.runtime.errors import ToolDefinitionError

if TYPE_CHECKING:
    from pytest_agentctx.context.clock import Clock
    from pytest_agentctx.doubles.ids import IdFactory
    from pytest_agentctx.runtime.agent import Agent
    from pytest_agentctx.runtime.recovery import Compensation, FailureHandler

# The decorated function's type, which a Tool keeps for type checkers. Unbounded and
# covariant on the class: mypy then joins tools of different signatures (a list
# `[get_weather, add]`) into a Tool (of `function`) that Agent(tools=...) takes. Generic
# over a ParamSpec and a return type, the same list would join into `object`.
_F_co = TypeVar("_F_co", covariant=True)
_F = TypeVar("_F", bound=Callable[..., object])

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class RunContext:
    """The runtime's context, handed to tools that ask for it; never stored on the context.

    ``deps`` holds whatever the caller passed to ``run(..., deps=...)`` (and the runtime's
    artifact store under ``"artifacts"``); ``state`` is the ``run(..., state=...)`` object.
    """

    agent: Agent
    iteration: int
    tool_call: ToolCall
    clock: Clock
    ids: IdFactory
    actor: Any = None
    tenant: Any = None
    deps: Mapping[str, Any] = field(default_factory=dict)
    state: Any = None


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument texts."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if in_args:
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                in_args = False  # another section (Returns:, Raises:...)
                current = None
                continue
            match = _ARG_LINE.match(line)
            if match and line.startswith(("    ", "\t")) and not line.startswith(("        ",)):
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
            continue
        if not in_args and not params:
            description.append(line)
    text = "\n".join(description).strip()
    # keep the summary paragraphs, drop trailing sections like "Returns:"
    text = re.split(r"\n\s*(?:Returns|Raises|Yields|Examples?)\s*:\s*\n", text)[0].strip()
    return text, params


class Tool(Generic[_F_co]):
    """A function the model can call, with the schema derived from its signature.

    ``Tool[F]`` keeps the function's type ``F`` for type checkers: calling the tool
    directly (``get_weather("Paris")``) checks the arguments and returns what the function
    returns (a coroutine for an async function). ``Tool[object]`` is any tool.

    ``on_failure`` and ``compensate`` declare the tool's failure handling (see
    :mod:`pytest_agentctx.runtime.recovery`).
    """

    def __init__(
        self,
        fn: _F_co,
        *,
        name: str | None = None,
        description: str | None = None,
        on_failure: FailureHandler | None = None,
        compensate: Compensation | None = None,
    ) -> None:
        if not callable(fn):
            raise ToolDefinitionError(f"@tool needs a function, got {type(fn).__name__}: {fn!r}.")
        for option, value in (("on_failure", on_failure), ("compensate", compensate)):
            if value is not None and not callable(value):
                raise ToolDefinitionError(
                    f"@tool({option}={value!r}) for {getattr(fn, '__name__', fn)!r}: expected a "
                    f"function (sync or async) or None, got {type(value).__name__}."
                )
        self.fn: Callable[..., object] = fn
        self.on_failure = on_failure
        self.compensate = compensate
        if name is not None and not name:
            raise ToolDefinitionError(
                "@tool(name='') is not allowed: give the tool a name of 1 to 64 letters, "
                "digits, '_' or '-', or leave name out to use the function's name."
            )
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not _NAME.fullmatch(self.name):
            raise ToolDefinitionError(
                f"Tool name {self.name!r} is not allowed: providers accept 1 to 64 letters, "
                "digits, '_' or '-'. Pass @tool(name='...') with such a name."
            )
        doc_description, arg_docs = _docstring_parts(inspect.getdoc(fn))
        self.description = description if description is not None else doc_description
        self.is_async = inspect.iscoroutinefunction(fn)
        self.context_param: str | None = None
        self._args_model = self._build_model(arg_docs)
        self.parameters = self._schema()

    def _build_model(self, arg_docs: Mapping[str, str]) -> type[BaseModel]:
        where = f"tool {self.name!r} ({getattr(self.fn, '__qualname__', self.fn)!r})"
        try:
            signature = inspect.signature(self.fn)
            hints = get_type_hints(self.fn, include_extras=True)
        except (TypeError, ValueError, NameError) as exc:
            raise ToolDefinitionError(
                f"Cannot read the signature of {where}: {exc}. Make every annotation "
                "importable at module level."
            ) from exc
        fields: dict[str, Any] = {}  # create_model takes annotations, typed Any
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"{where} takes {param}; a tool's schema needs named parameters only. "
                    "Replace *args/**kwargs with explicit parameters."
                )
            annotation = hints.get(param.name, inspect.Parameter.empty)
            if annotation is RunContext:
                if self.context_param is not None:
                    raise ToolDefinitionError(
                        f"{where} has two RunContext parameters ({self.context_param!r} and "
                        f"{param.name!r}); keep one."
                    )
                self.context_param = param.name
                continue
            if annotation is inspect.Parameter.empty:
                raise ToolDefinitionError(
                    f"Parameter {param.name!r} of {where} has no type annotation; the "
                    f"schema needs one, for example `{param.name}: str`."
                )
            default = ... if param.default is inspect.Parameter.empty else param.default
            doc = arg_docs.get(param.name)
            # The parameter's name is the field's alias: as a field name, names such as
            # `schema`, `json` or `_x` clash with BaseModel or are refused by pydantic.
            fields[f"arg_{len(fields)}"] = (
                annotation,
                Field(default, alias=param.name, description=doc)
                if doc
                else Field(default, alias=param.name),
            )
        model_name = "".join(part.title() for part in self.name.replace("-", "_").split("_"))
        return create_model(
            f"{model_name or 'Tool'}Arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )

    def _schema(self) -> dict[str, object]:
        schema = self._args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        schema.setdefault("properties", {})
        schema["additionalProperties"] = False
        return schema

    @property
    def spec(self) -> ToolSpec:
        """The name, description and JSON schema sent to providers."""
        return ToolSpec(self.name, self.description, self.parameters)

    def validate_arguments(self, arguments: Mapping[str, object]) -> dict[str, object]:
        """Validate ``arguments`` against the schema; raise ``ValueError`` with details."""
        if INVALID_ARGUMENTS_KEY in arguments:
            raise ValueError(
                f"the arguments were not valid JSON: {arguments[INVALID_ARGUMENTS_KEY]!r}; "
                "send a JSON object that matches the tool's schema"
            )
        model = self._args_model.model_validate(dict(arguments))
        return {
            str(info.alias): getattr(model, name) for name, info in type(model).model_fields.items()
        }

    async def invoke(self, arguments: Mapping[str, object], run_context: RunContext) -> object:
        """Validate the arguments, then call the function (awaiting it if async)."""
        return await self.call_validated(self.validate_arguments(arguments), run_context)

    async def call_validated(self, kwargs: Mapping[str, object], run_context: RunContext) -> object:
        """Call the function with arguments already validated by :meth:`validate_arguments`."""
        kwargs = dict(kwargs)
        if self.context_param is not None:
            kwargs[self.context_param] = run_context
        result = self.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    if TYPE_CHECKING:
        # Calling the tool is calling the function: same parameters, same return type.
        __call__: _F_co
    else:

        def __call__(self, *args: object, **kwargs: object) -> object:
            return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"


def render_tool_output(value: object, *, source: str = "a tool") -> str:
    """Turn a tool's return value into the text sent back to the model. ``source`` names
    where the value came from (``tool 'screenshot'``), for the error that bytes which are
    not UTF-8 text raise (:class:`ToolDefinitionError`): a model reads text."""
    if isinstance(value, str):
        return value
    try:
        if isinstance(value, BaseModel):
            return value.model_dump_json()
        return json.dumps(
            pydantic_core.to_jsonable_python(_sorted_sets(value), fallback=_stable_repr),
            ensure_ascii=False,
            sort_keys=True,
        )
    except UnicodeDecodeError as error:
        raw = error.object
        start = f", starting {bytes(raw[:16])!r}" if raw else ""
        raise ToolDefinitionError(
            f"{source[0].upper()}{source[1:]} returned bytes that are not UTF-8 text "
            f"({type(error).__name__}: {error}{start}); its result goes to the model as text. "
            "Return a str instead: the text decoded with its own encoding "
            "(data.decode('latin-1')), base64.b64encode(data).decode('ascii') for binary data, "
            "or write the data with write_artifact and return the reference it gives."
        ) from None


def _sorted_sets(value: object) -> object:
    """Sets in a stable order, so the same result renders the same text on every run."""
    if isinstance(value, (set, frozenset)):
        return sorted((_sorted_sets(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {k: _sorted_sets(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sorted_sets(v) for v in value]
    return value


def _stable_repr(value: object) -> str:
    """``repr`` of an object JSON cannot hold, without memory addresses (they vary by run)."""
    text = repr(value)
    return f"<{type(value).__name__}>" if " at 0x" in text else text


@overload
def tool(fn: _F, /) -> Tool[_F]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    on_failure: FailureHandler | None = None,
    compensate: Compensation | None = None,
) -> Callable[[_F], Tool[_F]]: ...


def tool(
    fn: _F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    on_failure: FailureHandler | None = None,
    compensate: Compensation | None = None,
) -> Tool[_F] | Callable[[_F], Tool[_F]]:
    """Turn a function into a :class:`Tool`; use as ``@tool`` or ``@tool(name=...)``.

    ``on_failure`` is called with a :class:`~pytest_agentctx.runtime.recovery.Failure` when the tool
    raises (a value other than ``None`` recovers and becomes the result); ``compensate``
    undoes the tool's work when a later step fails beyond recovery. Either way the tool
    keeps the function's signature for type checkers (see :class:`Tool`).
    """
    if fn is not None:
        return Tool(
            fn, name=name, description=description, on_failure=on_failure, compensate=compensate
        )

    def decorate(inner: _F) -> Tool[_F]:
        return Tool(
            inner, name=name, description=description, on_failure=on_failure, compensate=compensate
        )

    return decorate
