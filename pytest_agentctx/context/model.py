"""The nested iteration context: one :class:`Iteration` per pass of the agent loop.

Everything in pytest-agentctx produces an :class:`AgentContext` (the runtime, the capture of
HTTP traffic) or consumes one (assertions, snapshots, reports). The models are pydantic v2
and immutable: every update returns a new context and leaves the old one as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticSerializationError, to_jsonable_python

from pytest_agentctx.context._seq import FrozenDict, Seq
from pytest_agentctx.context.errors import ContextStateError

Role = Literal["system", "user", "assistant", "tool"]

#: Key under which a tool call keeps arguments that the model sent as invalid JSON.
INVALID_ARGUMENTS_KEY = "__invalid_json_arguments__"

_FROZEN = ConfigDict(frozen=True, extra="forbid", ser_json_timedelta="iso8601")


def _now(at: datetime | None) -> datetime:
    return at if at is not None else datetime.now(UTC)


_M = TypeVar("_M", bound=BaseModel)


def _build(cls: type[_M], values: dict[str, Any]) -> _M:
    """An instance from values that are already valid (what ``model_construct`` does,
    without its per-field work): the update methods call it with checked values, so a
    long run does not pay validation again and again."""
    new = cls.__new__(cls)
    object.__setattr__(new, "__dict__", values)
    object.__setattr__(new, "__pydantic_fields_set__", set(values))
    object.__setattr__(new, "__pydantic_extra__", None)
    object.__setattr__(new, "__pydantic_private__", None)
    return new


def _evolve(model: _M, changes: dict[str, Any]) -> _M:
    """A copy of ``model`` with ``changes`` (a faster ``model_copy(update=...)``)."""
    values = {**model.__dict__, **changes}
    new = _build(type(model), values)
    object.__setattr__(new, "__pydantic_fields_set__", model.__pydantic_fields_set__ | set(changes))
    return new


def _message(
    role: Role,
    content: str | None,
    *,
    tool_calls: Seq[ToolCall] | None = None,
    tool_call_id: str | None = None,
    name: str | None = None,
    is_error: bool = False,
    reasoning: Seq[FrozenDict] | None = None,
) -> Message:
    return _build(
        Message,
        {
            "role": role,
            "content": content,
            "tool_calls": tool_calls if tool_calls is not None else Seq(),
            "tool_call_id": tool_call_id,
            "name": name,
            "is_error": is_error,
            "reasoning": reasoning if reasoning is not None else Seq(),
        },
    )


def _iteration(number: int, messages: Seq[Message], started_at: datetime) -> Iteration:
    return _build(
        Iteration,
        {
            "number": number,
            "messages": messages,
            "tool_calls": Seq(),
            "started_at": started_at,
            "completed_at": None,
            "metadata": FrozenDict(),
        },
    )


_RESULT_KEYS = {
    "id": "tool_call_id",
    "tool_call_id": "tool_call_id",
    "result": "content",
    "content": "content",
    "name": "name",
    "is_error": "is_error",
}


def _calls_text(calls: Iterable[ToolCall]) -> str:
    return ", ".join(f"{call.id} ({call.name})" for call in calls)


def _tool_result(value: object) -> ToolResult:
    """A :class:`ToolResult` from one item given to ``add_tool_results()``."""
    if isinstance(value, ToolResult):
        return value
    if not isinstance(value, Mapping):
        raise ContextStateError(
            f"add_tool_results(): expected ToolResult objects or mappings "
            f"{{'id': ..., 'result': ...}}, got {type(value).__name__}: {value!r}. Give "
            "ToolResult(tool_call_id=..., content=...) or {'id': ..., 'result': ...}."
        )
    fields: dict[str, Any] = {}
    for key, item in value.items():
        field = _RESULT_KEYS.get(key) if isinstance(key, str) else None
        if field is None or field in fields:
            problem = "twice" if field is not None else "a key it does not know"
            raise ContextStateError(
                f"add_tool_results(): the result {dict(value)!r} names {key!r}, "
                f"{problem}. A result mapping has 'id' (or 'tool_call_id'), 'result' (or "
                "'content'), and optionally 'name' and 'is_error'."
            )
        fields[field] = item
    if not isinstance(fields.get("tool_call_id"), str) or "content" not in fields:
        raise ContextStateError(
            f"add_tool_results(): the result {dict(value)!r} needs the id of the tool call it "
            "answers (a str) and its result: {'id': 'call_1', 'result': ...}."
        )
    fields["content"] = _result_text(fields["content"])
    try:
        return ToolResult.model_validate(fields)
    except ValidationError as exc:  # name or is_error
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors()
        )
        raise ContextStateError(
            f"add_tool_results(): the result {dict(value)!r} cannot be read ({problems}). "
            "'name' must be a str and 'is_error' a bool."
        ) from None


def _result_text(value: object) -> str:
    """The text of a tool's result: text as it is, anything else as JSON (keys sorted)."""
    if isinstance(value, str):
        return value
    try:
        data = to_jsonable_python(_sets_sorted(value))
    except PydanticSerializationError:
        raise ContextStateError(
            f"add_tool_results(): the result {value!r} ({type(value).__name__}) is neither "
            "text nor a value JSON can hold. Give its text (str) or a JSON value."
        ) from None
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def _sets_sorted(value: object) -> object:
    """Sets in a stable order, so the same result is the same text on every run."""
    if isinstance(value, set | frozenset):
        return sorted((_sets_sorted(item) for item in value), key=repr)
    if isinstance(value, dict):
        return {key: _sets_sorted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_sets_sorted(item) for item in value]
    return value


def _answering(pending: Mapping[str, ToolCall], iteration: int, result: ToolResult) -> ToolResult:
    """``result`` with the name of the pending call it answers; refused when it answers
    none, or names another tool than its call."""
    call = pending.get(result.tool_call_id)
    if call is None:
        raise ContextStateError(
            f"add_tool_results(): a result answers tool call id {result.tool_call_id!r}, but "
            f"iteration {iteration} has no pending tool call with that id; it waits for "
            f"{_calls_text(pending.values())}. Give each result the id of one of them."
        )
    if result.name is None:
        return _evolve(result, {"name": call.name})
    if result.name != call.name:
        raise ContextStateError(
            f"add_tool_results(): the result for tool call {call.id} is named "
            f"{result.name!r}, but {call.id} called {call.name!r}. Leave the name out (it is "
            "taken from the call) or give the id of the call that the result answers."
        )
    return result


class ToolCall(BaseModel):
    """A tool call the model asked for: its id, the tool's name and the arguments."""

    model_config = _FROZEN
    __match_args__: ClassVar[tuple[str, ...]] = ("name", "arguments", "id")

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @property
    def arguments_json(self) -> str:
        """The arguments as the model sent them: a JSON object (or the invalid raw text)."""
        raw = self.arguments.get(INVALID_ARGUMENTS_KEY)
        if isinstance(raw, str) and len(self.arguments) == 1:
            return raw
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


class ToolResult(BaseModel):
    """The result of one tool call, fed back to the model as a ``tool`` message.

    ``name`` may be left out: :meth:`AgentContext.add_tool_results` takes it from the
    pending tool call with the same ``tool_call_id`` (and refuses a name that contradicts
    it), so the ``tool`` message it adds always names its tool.
    """

    model_config = _FROZEN
    __match_args__: ClassVar[tuple[str, ...]] = ("name", "content", "tool_call_id", "is_error")

    tool_call_id: str
    name: str | None = None
    content: str
    is_error: bool = False

    def to_message(self) -> Message:
        """The ``tool`` message that carries this result in the conversation."""
        return _message(
            "tool",
            self.content,
            tool_call_id=self.tool_call_id,
            name=self.name,
            is_error=self.is_error,
        )


class Message(BaseModel):
    """One message of the conversation.

    ``tool_calls`` is set on assistant messages that ask for tools; ``tool_call_id``,
    ``name`` and ``is_error`` are set on ``tool`` messages that carry a result.
    ``reasoning`` keeps, verbatim, the reasoning items a provider returned with an
    assistant message (OpenAI Responses ``reasoning`` items, Anthropic ``thinking``
    blocks), so the codec of that provider can send them back on the next call.
    """

    model_config = _FROZEN
    __match_args__: ClassVar[tuple[str, ...]] = ("role", "content", "tool_calls")

    role: Role
    content: str | None = None
    tool_calls: Seq[ToolCall] = Field(default_factory=Seq)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: Seq[FrozenDict] = Field(default_factory=Seq)

    def to_dict(self) -> dict[str, Any]:
        """The provider-neutral JSON form of this message (defaults left out)."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.model_dump(mode="json") for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.is_error:
            data["is_error"] = True
        if self.reasoning:
            data["reasoning"] = [dict(item) for item in self.reasoning]
        return data


class Iteration(BaseModel):
    """One pass of the agent loop: the messages it added, the tools it called, its times.

    ``tool_calls`` holds every tool call the assistant asked for in this iteration
    (``[]`` when it answered without tools, never ``None``). ``completed_at`` is ``None``
    while the iteration is in progress. ``metadata`` holds extensions such as the model
    and the token usage of the iteration's model call.
    """

    model_config = _FROZEN
    __match_args__: ClassVar[tuple[str, ...]] = (
        "number",
        "messages",
        "tool_calls",
        "started_at",
        "completed_at",
        "metadata",
    )

    number: int = Field(ge=1)
    messages: Seq[Message] = Field(default_factory=Seq)
    tool_calls: Seq[ToolCall] = Field(default_factory=Seq)
    started_at: datetime
    completed_at: datetime | None = None
    metadata: FrozenDict = Field(default_factory=FrozenDict)

    @property
    def is_complete(self) -> bool:
        """Whether the iteration has ended (``completed_at`` is set)."""
        return self.completed_at is not None

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of this iteration that no tool message has answered yet."""
        answered = {m.tool_call_id for m in self.messages if m.role == "tool"}
        return [call for call in self.tool_calls if call.id not in answered]

    def _replace(self, **changes: Any) -> Iteration:
        return _evolve(self, changes)


class AgentContext(BaseModel):
    """The whole run: ``iterations`` and the number of the ``current_iteration``.

    Build one with :meth:`new` and update it with the ``add_*`` methods; each returns a new
    context. Every update takes an optional ``at=`` timestamp (the runtime passes its
    deterministic clock's time); without it the wall clock in UTC is used.
    """

    model_config = _FROZEN
    __match_args__: ClassVar[tuple[str, ...]] = ("iterations", "current_iteration")

    iterations: Seq[Iteration]
    current_iteration: int = Field(ge=1)
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="after")
    def _numbered_in_order(self) -> AgentContext:
        # Runs when a context is validated (from JSON, or built by hand); the update methods
        # keep these invariants themselves and skip it.
        numbers = [iteration.number for iteration in self.iterations]
        if not numbers:
            raise ValueError("an AgentContext needs at least one iteration")
        if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
            raise ValueError(
                f"iterations must be numbered consecutively (1, 2, 3...); got {numbers}"
            )
        if self.current_iteration != numbers[-1]:
            raise ValueError(
                f"current_iteration is {self.current_iteration}, but the last iteration is "
                f"number {numbers[-1]}; they must be equal"
            )
        return self

    # -- construction ------------------------------------------------------------------

    @classmethod
    def new(
        cls, input: str, *, system_prompt: str | None = None, at: datetime | None = None
    ) -> AgentContext:
        """Start a run: iteration 1 holds the system message (if any) and the user message."""
        if not isinstance(input, str):
            raise ContextStateError(
                f"AgentContext.new() takes the user's input as a str, got "
                f"{type(input).__name__}: {input!r}. Pass the text of the first user message."
            )
        now = _now(at)
        messages: list[Message] = []
        if system_prompt is not None:
            messages.append(Message(role="system", content=system_prompt))
        messages.append(Message(role="user", content=input))
        first = Iteration(number=1, messages=Seq(messages), started_at=now)
        return cls.model_construct(
            iterations=Seq([first]), current_iteration=1, created_at=now, updated_at=now
        )

    # -- updates (each returns a new context) ------------------------------------------

    def _current(self) -> Iteration:
        return self.iterations[-1]

    def _with_current(self, iteration: Iteration, now: datetime) -> AgentContext:
        return _evolve(
            self, {"iterations": self.iterations.with_last(iteration), "updated_at": now}
        )

    def add_assistant_message(
        self,
        content: str | None,
        tool_calls: Iterable[ToolCall] = (),
        *,
        reasoning: Iterable[Mapping[str, Any]] = (),
        at: datetime | None = None,
    ) -> AgentContext:
        """Add the model's reply to the current iteration.

        A reply with tool calls leaves the iteration open until :meth:`add_tool_results`;
        a reply without tool calls is a final answer and completes the iteration.
        """
        current = self._current()
        if current.is_complete:
            raise ContextStateError(
                f"add_assistant_message(): iteration {current.number} is already complete "
                "(the assistant gave its final answer). Call add_user_message() to start a "
                "new turn before adding another assistant message."
            )
        if current.pending_tool_calls:
            ids = ", ".join(call.id for call in current.pending_tool_calls)
            raise ContextStateError(
                f"add_assistant_message(): iteration {current.number} still waits for the "
                f"results of tool calls {ids}. Call add_tool_results() with them first."
            )
        calls = Seq(tool_calls)
        for call in calls:
            if not isinstance(call, ToolCall):
                raise ContextStateError(
                    f"add_assistant_message(): tool_calls must hold ToolCall objects, got "
                    f"{type(call).__name__}: {call!r}. Build them with "
                    "ToolCall(id=..., name=..., arguments={...})."
                )
        seen = {call.id for call in current.tool_calls}
        for call in calls:
            if call.id in seen:
                raise ContextStateError(
                    f"add_assistant_message(): tool call id {call.id!r} is used twice in "
                    f"iteration {current.number}; every tool call needs its own id."
                )
            seen.add(call.id)
        now = _now(at)
        if content is not None and not isinstance(content, str):
            raise ContextStateError(
                f"add_assistant_message(): content must be a str or None, got "
                f"{type(content).__name__}: {content!r}."
            )
        message = _message(
            "assistant",
            content,
            tool_calls=calls,
            reasoning=Seq(FrozenDict(item) for item in reasoning),
        )
        updated = current._replace(
            messages=current.messages.append(message),
            tool_calls=Seq([*current.tool_calls, *calls]) if calls else current.tool_calls,
            completed_at=None if calls else now,
        )
        return self._with_current(updated, now)

    def add_tool_results(
        self, results: Iterable[ToolResult | Mapping[str, Any]], *, at: datetime | None = None
    ) -> AgentContext:
        """Append the tool results, complete the current iteration and open the next one.

        The results must answer exactly the tool calls still pending in the current
        iteration (in any order). Each is a :class:`ToolResult` or a mapping
        ``{"id": <tool call id>, "result": <value>}`` (``tool_call_id``, ``content``,
        ``name`` and ``is_error`` are accepted too); a result that is not text is written as
        JSON with sorted keys. A result without a name takes the name of its tool call.
        """
        current = self._current()
        pending = current.pending_tool_calls
        if not pending:
            raise ContextStateError(
                f"add_tool_results(): iteration {current.number} has no pending tool call to "
                "answer. Add an assistant message with tool_calls first."
            )
        by_id = {call.id: call for call in pending}
        result_list = [
            _answering(by_id, current.number, _tool_result(result)) for result in results
        ]
        given = [r.tool_call_id for r in result_list]
        expected = [c.id for c in pending]
        if sorted(given) != sorted(expected):
            raise ContextStateError(
                f"add_tool_results(): got results for tool call ids {given}, but iteration "
                f"{current.number} waits for exactly {expected} ({_calls_text(pending)}). "
                "Give one ToolResult per pending tool call."
            )
        now = _now(at)
        messages = current.messages
        for result in result_list:
            messages = messages.append(result.to_message())
        completed = current._replace(messages=messages, completed_at=now)
        following = _iteration(current.number + 1, Seq(), now)
        return _evolve(
            self,
            {
                "iterations": self.iterations.with_last(completed).append(following),
                "current_iteration": following.number,
                "updated_at": now,
            },
        )

    def add_user_message(self, content: str, *, at: datetime | None = None) -> AgentContext:
        """Add a user message: a new turn of a multi-turn conversation.

        After a final answer this opens a new iteration; in an iteration that has no
        assistant message yet, the message joins it.
        """
        if not isinstance(content, str):
            raise ContextStateError(
                f"add_user_message() takes the message text as a str, got "
                f"{type(content).__name__}: {content!r}."
            )
        current = self._current()
        if current.pending_tool_calls:
            ids = ", ".join(call.id for call in current.pending_tool_calls)
            raise ContextStateError(
                f"add_user_message(): iteration {current.number} still waits for the results "
                f"of tool calls {ids}; providers reject a user message before them. Call "
                "add_tool_results() first."
            )
        now = _now(at)
        message = _message("user", content)
        if current.is_complete:
            following = _iteration(current.number + 1, Seq([message]), now)
            return _evolve(
                self,
                {
                    "iterations": self.iterations.append(following),
                    "current_iteration": following.number,
                    "updated_at": now,
                },
            )
        return self._with_current(current._replace(messages=current.messages.append(message)), now)

    def with_iteration_metadata(
        self, metadata: Mapping[str, Any], *, at: datetime | None = None
    ) -> AgentContext:
        """Merge ``metadata`` into the current iteration's metadata."""
        current = self._current()
        merged = FrozenDict({**current.metadata, **metadata})
        return self._with_current(
            current._replace(metadata=merged), at if at is not None else self.updated_at
        )

    # -- queries -----------------------------------------------------------------------

    def extract_tool_calls(self) -> list[ToolCall]:
        """The tool calls of the last assistant message of the current iteration."""
        for message in reversed(self._current().messages):
            if message.role == "assistant":
                return list(message.tool_calls)
        return []

    def get_all_messages(self) -> list[Message]:
        """Every message of every iteration, in order."""
        return [message for iteration in self.iterations for message in iteration.messages]

    def to_messages(self) -> list[dict[str, Any]]:
        """The conversation in the provider-neutral JSON form that the codecs encode."""
        return [message.to_dict() for message in self.get_all_messages()]

    def get_iteration(self, number: int) -> Iteration | None:
        """The iteration with this number (from 1), or ``None`` if there is none."""
        if 1 <= number <= len(self.iterations):
            iteration = self.iterations[number - 1]
            if iteration.number == number:
                return iteration
        return next((it for it in self.iterations if it.number == number), None)

    def get_iteration_messages(self, number: int) -> list[Message]:
        """The messages of the iteration with this number, or ``[]`` if there is none."""
        iteration = self.get_iteration(number)
        return list(iteration.messages) if iteration is not None else []

    def exceeded_max_iterations(self, max_iterations: int) -> bool:
        """Whether the current iteration is at or past ``max_iterations``.

        The limit belongs to the agent's definition and is passed in; the context never
        stores it.
        """
        return self.current_iteration >= max_iterations

    @property
    def final_output(self) -> str | None:
        """The content of the last assistant message if it is a final answer, else None."""
        current = self._current()
        if not current.is_complete:
            return None
        for message in reversed(current.messages):
            if message.role == "assistant":
                return None if message.tool_calls else message.content
        return None

    @property
    def all_tool_calls(self) -> list[ToolCall]:
        """Every tool call of the run, in order."""
        return [call for iteration in self.iterations for call in iteration.tool_calls]
