"""How a value is written into a snapshot: one line per value, each led by its path.

::

    AgentContext
    iterations = [2 items]
    iterations[0] = Iteration
    iterations[0].number = 1
    iterations[0].messages = [3 items]
    iterations[0].messages[0] = Message
    iterations[0].messages[0].role = 'user'
    iterations[0].messages[0].content = 'Weather in Paris?'
    ...

Every model is expanded field by field (fields at their default value are left out, so a
new optional field does not change old snapshots). Timestamps are written as offsets from
the run's start (``<t+3s>``), generated ids as ``<id:1>``, ``<id:2>`` in first-seen order,
providers' opaque tokens as ``<opaque>``; a sub-agent's run kept as JSON in its parent's
metadata is written like the top-level run. The :class:`Writer` applies the options' path
rules (``normalize``, ``omit``, ``fields``, ``truncate``, ``last``); without them the
context's own models take a fast path that writes the very same lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import date, datetime, time
from enum import Enum
from itertools import islice
from operator import is_
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from pytest_agentctx.assertions.errors import SnapshotError
from pytest_agentctx.assertions.snapshots.options import SnapshotOptions
from pytest_agentctx.context._paths import compile_globs, segment
from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall

_NO_DEFAULT: Any = object()
_OBJECT_REPR: Any = object.__repr__


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    default: Any
    implied: type | None


_FIELD_SPECS: dict[type, list[_FieldSpec]] = {}


def _implied_model(annotation: Any) -> type | None:
    """The model class a field holds (or holds a sequence of), if the annotation says so."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Seq, list, tuple) or (isinstance(origin, type) and issubclass(origin, Sequence)):
        args = get_args(annotation)
        if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            return args[0]
    return None


def _field_specs(cls: type[BaseModel]) -> list[_FieldSpec]:
    """The fields of a model in declaration order, with their defaults and model types."""
    specs = _FIELD_SPECS.get(cls)
    if specs is None:
        specs = []
        for name, info in cls.model_fields.items():
            if info.is_required():
                default = _NO_DEFAULT
            elif info.default_factory is not None:
                default = info.default_factory()  # type: ignore[call-arg]
            else:
                default = info.default
            specs.append(_FieldSpec(name, default, _implied_model(info.annotation)))
        _FIELD_SPECS[cls] = specs
    return specs


#: Keys whose text is an opaque token a provider needs back, not something to review:
#: OpenAI reasoning items' ``encrypted_content`` and Anthropic thinking blocks' ``signature``
#: (both change on every recording).
_OPAQUE_KEYS = frozenset({"encrypted_content", "signature"})
_OPAQUE = "<opaque>"


def _reasoning_implied() -> type | None:
    """The model type ``Message.reasoning``'s items are written as (as ``model`` would)."""
    return next(spec.implied for spec in _field_specs(Message) if spec.name == "reasoning")


class _Raw(str):
    """Text written as it is (a summary line), not as a quoted string."""

    __slots__ = ()


def _sort_key(key: Any) -> tuple[int, str]:
    return (0, key) if isinstance(key, str) else (1, repr(key))


def _sorted_keys(mapping: Mapping[Any, Any]) -> list[Any]:
    """The keys in order; keys of mixed types: strings first, then the others by repr."""
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=_sort_key)


def _count(size: int) -> str:
    return f"{size} item" if size == 1 else f"{size} items"


class Writer:
    """Writes one value as lines; one writer per snapshot (ids and the start are its own).

    ``value()`` applies the options' path rules and ``write()`` writes; without path rules
    ``value`` is ``write`` itself, which keeps the common case fast.
    """

    def __init__(self, options: SnapshotOptions) -> None:
        self.lines: list[str] = []
        self.start: datetime | None = None
        self.id_numbers: dict[str, str] = {}
        self.id_keys = compile_globs(options.ids)
        self.id_cache: dict[Any, bool] = {}
        self.truncate = options.truncate
        self.last = options.last
        self.normalize_re = compile_globs(options.normalize)
        self.replacements = list(options.normalize.values())
        self.omit_re = compile_globs(options.omit)
        self.fields_re = compile_globs(options.fields)
        self.keeping = self.fields_re is None
        self.suffixes: dict[Any, str] = {}
        self.instants: dict[datetime, str] = {}
        # Without path rules, ``value`` is ``write`` and the context's own models take a
        # fast path that writes the very lines the general one would.
        self.fast = (
            self.normalize_re is None
            and self.omit_re is None
            and self.fields_re is None
            and self.truncate is None
        )
        if self.fast:
            self.value = self.write  # type: ignore[method-assign]
        self.id_is_id = self.is_id_key("id")
        self.tool_call_id_is_id = self.is_id_key("tool_call_id")

    def line(self, path: str, text: str) -> None:
        if self.keeping:
            self.lines.append(f"{path} = {text}" if path else text)

    def value(self, path: str, value: Any, key: Any, implied: type | None = None) -> None:
        """Write ``value`` at ``path``, applying ``omit``, ``normalize`` and ``fields``."""
        if self.omit_re is not None and self.omit_re.fullmatch(path):
            return
        if self.normalize_re is not None:
            found = self.normalize_re.fullmatch(path)
            if found is not None and found.lastgroup is not None:
                replacement = self.replacements[int(found.lastgroup[1:])]
                if not callable(replacement):
                    self.line(path, str(replacement))
                    return
                try:
                    value = replacement(value)
                except Exception as exc:
                    raise SnapshotError(
                        f"The normalize hook for {path} raised {type(exc).__name__}: {exc} "
                        f"on {value!r}. Fix the hook so it accepts every value at that path."
                    ) from exc
        if not self.keeping and self.fields_re is not None and self.fields_re.fullmatch(path):
            self.keeping = True
            try:
                self.write(path, value, key, implied)
            finally:
                self.keeping = False
            return
        self.write(path, value, key, implied)

    def write(self, path: str, value: Any, key: Any, implied: type | None = None) -> None:
        """Write ``value`` at ``path`` as one line, or as a line per field or item."""
        kind = type(value)
        if kind is str:
            if key in _OPAQUE_KEYS:
                self.line(path, _OPAQUE)
            elif key is not None and self.is_id_key(key):
                self.line(path, self.generated_id(value))
            else:
                self.text(path, value)
        elif kind is int or kind is bool or kind is float or value is None:
            self.line(path, repr(value))
        elif kind is datetime:
            self.line(path, self.instant(value))
        elif isinstance(value, BaseModel):
            self.model(path, value, implied)
        elif kind is dict or isinstance(value, Mapping):
            run = _nested_run(key, value)
            if run is None:
                self.mapping(path, value)
            else:
                self.model(path, run, None)
        elif kind is Seq or kind is list or kind is tuple:
            self.sequence(path, value, implied)
        else:
            self.other(path, value, key)

    def other(self, path: str, value: Any, key: Any) -> None:
        if isinstance(value, _Raw):
            self.line(path, value)
        elif isinstance(value, Enum):
            self.line(path, f"{type(value).__name__}.{value.name}")
        elif isinstance(value, str):
            self.write(path, str(value), key)
        elif isinstance(value, datetime):
            self.line(path, self.instant(value))
        elif isinstance(value, (date, time)):
            self.line(path, value.isoformat())
        elif isinstance(value, (set, frozenset)):
            self.sequence(path, sorted(value, key=repr), None, brackets="{}")
        elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            self.sequence(path, value, None)
        elif is_dataclass(value) and not isinstance(value, type):
            self.line(path, type(value).__name__)
            prefix = f"{path}." if path else ""
            for item in fields(value):
                if item.repr:
                    self.value(prefix + item.name, getattr(value, item.name), item.name)
        elif type(value).__repr__ is _OBJECT_REPR:
            name = type(value).__name__
            raise SnapshotError(
                f"Cannot snapshot {path or 'the value'}: a {name} has no stable text form "
                "(its repr holds a memory address). Convert it first, or give "
                f"agent_snapshot(normalize={{{(path or '**')!r}: '<{name}>'}})."
            )
        else:
            self.line(path, repr(value))

    def is_id_key(self, key: Any) -> bool:
        known = self.id_cache.get(key)
        if known is None and key in _OPAQUE_KEYS:
            return False  # not cached: the fast paths must keep sending it to ``fast_value``
        if known is None:
            known = bool(
                isinstance(key, str)
                and self.id_keys is not None
                and self.id_keys.fullmatch(key) is not None
            )
            self.id_cache[key] = known
        return known

    def generated_id(self, value: str) -> str:
        number = self.id_numbers.get(value)
        if number is None:
            number = self.id_numbers[value] = f"<id:{len(self.id_numbers) + 1}>"
        return number

    def instant(self, value: datetime) -> str:
        known = self.instants.get(value)
        if known is not None:
            return known
        if self.start is None:
            self.start = value
        text = self.instants[value] = self._offset(value)
        return text

    def _offset(self, value: datetime) -> str:
        assert self.start is not None
        try:
            delta = value - self.start
        except TypeError:
            return value.isoformat()
        if delta.days >= 0:
            sign = "+"
        else:
            sign = "-"
            delta = -delta
        seconds = delta.days * 86_400 + delta.seconds
        fraction = delta.microseconds
        if fraction:
            return f"<t{sign}{seconds}.{fraction:06d}".rstrip("0") + "s>"
        return f"<t{sign}{seconds}s>"

    def text(self, path: str, value: str) -> None:
        cut = 0
        if self.truncate is not None and len(value) > self.truncate:
            cut = len(value) - self.truncate
            value = value[: self.truncate]
        if "\n" in value:
            lines = value.split("\n")
            if all(line.isprintable() for line in lines):
                self.line(path, "|")
                if self.keeping:
                    self.lines.extend(f"  | {line}" if line else "  |" for line in lines)
                    if cut:
                        self.lines.append(f"  … (+{cut} chars)")
                return
        self.line(path, f"{value!r} … (+{cut} chars)" if cut else repr(value))

    def model(self, path: str, value: BaseModel, implied: type | None) -> None:
        cls = type(value)
        if cls is not implied:
            self.line(path, cls.__name__)
        elif self.fast:
            if cls is Message:
                self.message(path, value)  # type: ignore[arg-type]
                return
            if cls is ToolCall:
                self.tool_call(path, value)  # type: ignore[arg-type]
                return
            if cls is Iteration:
                self.iteration(path, value)  # type: ignore[arg-type]
                return
        root_run = cls is AgentContext and self.start is None
        if root_run:
            self.start = value.created_at  # type: ignore[attr-defined]
        data = value.__dict__
        prefix = path + "." if path else ""
        for spec in _field_specs(cls):
            name = spec.name
            item = data[name] if name in data else getattr(value, name)
            default = spec.default
            if default is not _NO_DEFAULT and (
                item is default or (type(item) is type(default) and item == default)
            ):
                continue
            if (
                cls is Iteration
                and name == "tool_calls"
                and self.can_refer_to_messages(prefix)
                and _calls_of_messages(item, data["messages"])
            ):
                self.value(
                    prefix + name, _Raw(f"[{_count(len(item))}: those of the messages]"), None
                )
            elif root_run and name == "iterations" and self.last is not None:
                skip = max(0, len(item) - self.last)
                self.sequence(prefix + name, item, spec.implied, skip=skip)
            else:
                self.value(prefix + name, item, name, spec.implied)

    # -- the fast path for the context's models: the lines ``model`` would write -------

    def string(self, path: str, value: str, is_id: bool) -> None:
        if is_id:
            self.lines.append(f"{path} = {self.generated_id(value)}")
        elif "\n" in value:
            self.text(path, value)
        else:
            self.lines.append(f"{path} = {value!r}")

    def message(self, path: str, message: Message, gathered: list[Any] | None = None) -> None:
        data = message.__dict__
        append = self.lines.append
        role = data["role"]
        content = data["content"]
        if content is None:
            append(f"{path}.role = {role!r}")
        elif "\n" in content:
            append(f"{path}.role = {role!r}")
            self.text(f"{path}.content", content)
        else:
            # two lines in one string: the final join gives the same text, faster
            append(f"{path}.role = {role!r}\n{path}.content = {content!r}")
        calls = data["tool_calls"]
        calls = calls.to_list() if type(calls) is Seq else list(calls)
        if calls:
            self.message_calls(f"{path}.tool_calls", calls, gathered)
        tool_call_id = data["tool_call_id"]
        if tool_call_id is not None:
            if self.tool_call_id_is_id:
                numbers = self.id_numbers
                id_text = numbers.get(tool_call_id)
                if id_text is None:
                    id_text = numbers[tool_call_id] = f"<id:{len(numbers) + 1}>"
                append(f"{path}.tool_call_id = {id_text}")
            else:
                self.string(f"{path}.tool_call_id", tool_call_id, False)
        name = data["name"]
        if name is not None:
            if "\n" in name:
                self.text(f"{path}.name", name)
            else:
                append(f"{path}.name = {name!r}")
        if data["is_error"] is not False:
            append(f"{path}.is_error = {data['is_error']!r}")
        reasoning = data["reasoning"]
        if reasoning:
            self.write(f"{path}.reasoning", reasoning, "reasoning", _reasoning_implied())

    def message_calls(self, where: str, calls: list[Any], gathered: list[Any] | None) -> None:
        """The lines of a message's tool calls (``calls`` not empty), at ``where``."""
        append = self.lines.append
        append(f"{where} = [{_count(len(calls))}]")
        if gathered is not None:
            gathered.extend(calls)
        for index, call in enumerate(calls):
            if type(call) is ToolCall and self.id_is_id:
                self.tool_call(f"{where}[{index}]", call)
            else:
                self.write(f"{where}[{index}]", call, None, ToolCall)

    def tool_call(self, path: str, call: ToolCall) -> None:
        data = call.__dict__
        append = self.lines.append
        call_id = data["id"]
        if self.id_is_id:
            append(f"{path}.id = {self.id_numbers.get(call_id) or self.generated_id(call_id)}")
        else:
            self.string(f"{path}.id", call_id, False)
        name = data["name"]
        if "\n" in name:
            self.text(f"{path}.name", name)
        else:
            append(f"{path}.name = {name!r}")
        arguments = data["arguments"]
        if arguments:
            self.fast_mapping(f"{path}.arguments", arguments)

    def iteration(self, path: str, iteration: Iteration) -> None:
        data = iteration.__dict__
        append = self.lines.append
        append(f"{path}.number = {data['number']!r}")
        messages = data["messages"]
        messages = messages.to_list() if type(messages) is Seq else list(messages)
        gathered: list[Any] = []
        if messages:
            where = f"{path}.messages"
            append(f"{where} = [{_count(len(messages))}]")
            for index, message in enumerate(messages):
                if type(message) is Message:
                    self.message(f"{where}[{index}]", message, gathered)
                else:
                    gathered.extend(getattr(message, "tool_calls", ()))
                    self.write(f"{where}[{index}]", message, None, Message)
        calls = data["tool_calls"]
        calls = calls.to_list() if type(calls) is Seq else list(calls)
        if calls:
            if _same_calls(calls, gathered):
                append(f"{path}.tool_calls = [{_count(len(calls))}: those of the messages]")
            else:
                self.sequence(f"{path}.tool_calls", calls, ToolCall)
        append(f"{path}.started_at = {self.instant(data['started_at'])}")
        if data["completed_at"] is not None:
            append(f"{path}.completed_at = {self.instant(data['completed_at'])}")
        if data["metadata"]:
            self.fast_mapping(f"{path}.metadata", data["metadata"])

    def fast_mapping(self, path: str, value: Mapping[Any, Any]) -> None:
        """``mapping`` without path rules, with the plain values written in line."""
        append = self.lines.append
        suffixes = self.suffixes
        id_cache = self.id_cache
        try:
            keys = sorted(value)
        except TypeError:
            keys = sorted(value, key=_sort_key)
        for key in keys:
            item = value[key]
            suffix = suffixes.get(key) or self.suffix(key)
            kind = type(item)
            if (kind is str and id_cache.get(key) is False and "\n" not in item) or (
                kind is int or kind is float or kind is bool or item is None
            ):
                append(f"{path}{suffix} = {item!r}")
            else:
                self.fast_value(path + suffix, item, key)

    def fast_value(self, path: str, value: Any, key: Any) -> None:
        """A mapping value that is not a plain scalar (or a string not yet known)."""
        if type(value) is str:
            if key in _OPAQUE_KEYS:
                self.lines.append(f"{path} = {_OPAQUE}")
            elif self.is_id_key(key):
                self.lines.append(f"{path} = {self.generated_id(value)}")
            else:
                self.text(path, value)
        elif isinstance(value, dict) and value and key != "context":  # a run: see write()
            self.fast_mapping(path, value)
        else:
            self.write(path, value, key)

    def suffix(self, key: Any) -> str:
        """What a key adds to the path of its mapping: ``.name`` or ``['a key']``."""
        text = segment("", key)
        text = self.suffixes[key] = text if text[0] == "[" else "." + text
        return text

    def can_refer_to_messages(self, prefix: str) -> bool:
        """Whether an iteration's tool calls may be written as "those of the messages".

        Not when a path rule may leave the messages' tool calls out of the snapshot.
        """
        if self.fields_re is not None:
            return False
        for rule in (self.omit_re, self.normalize_re):
            if rule is not None and (
                rule.fullmatch(f"{prefix}messages")
                or rule.fullmatch(f"{prefix}messages[0]")
                or rule.fullmatch(f"{prefix}messages[0].tool_calls")
            ):
                return False
        return True

    def mapping(self, path: str, value: Mapping[Any, Any]) -> None:
        if not value:
            self.line(path, "{}")
            return
        keys = _sorted_keys(value)
        suffixes = self.suffixes
        for key in keys:
            suffix = suffixes.get(key) or self.suffix(key)
            child = path + suffix if path else segment("", key)
            self.value(child, value[key], key)

    def sequence(
        self,
        path: str,
        value: Sequence[Any],
        implied: type | None,
        *,
        skip: int = 0,
        brackets: str = "[]",
    ) -> None:
        size = len(value)
        opening, closing = brackets[0], brackets[1]
        if not size:
            self.line(path, opening + closing)
            return
        count = _count(size)
        if skip:
            count += f", the first {skip} left out"
        self.line(path, f"{opening}{count}{closing}")
        write = self.value
        for index, item in enumerate(islice(value, skip, None), start=skip):
            write(f"{path}[{index}]", item, None, implied)


_RUN_FIELDS = frozenset(AgentContext.model_fields)


def _nested_run(key: Any, value: Mapping[Any, Any]) -> AgentContext | None:
    """The run a sub-agent's record keeps as JSON (``metadata.subagents.<id>.context``), as
    an :class:`AgentContext`, so it is written like the top-level run (offsets from the
    top-level start, defaults left out); ``None`` for any other mapping."""
    if key != "context" or value.keys() != _RUN_FIELDS:
        return None
    try:
        return AgentContext.model_validate(value)
    except ValidationError:
        return None


def _calls_of_messages(calls: Sequence[Any], messages: Sequence[Any]) -> bool:
    """Whether an iteration's tool calls are exactly those of its messages, in order."""
    return _same_calls(calls, [call for message in messages for call in message.tool_calls])


def _same_calls(calls: Sequence[Any], from_messages: list[Any]) -> bool:
    if not calls or len(from_messages) != len(calls):
        return False
    if all(map(is_, calls, from_messages)):  # the usual case, checked at C speed
        return True
    return all(a is b or a == b for a, b in zip(calls, from_messages, strict=True))
