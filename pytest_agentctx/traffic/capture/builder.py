"""Conversations rebuilt from LLM exchanges: the heart of traffic capture.

Exchanges are read in request order. Each one whose URL is a model endpoint
(:func:`~pytest_agentctx.traffic.codecs.codec_for_path`) and whose request decodes is a model call;
every other exchange is kept aside as *non-LLM*. A model call belongs to the conversation
whose last request is a prefix of its own and is longer, or as long when the last call
failed (a retry). The prefix is found by the item count and the hash of the last item of
each conversation's last request (an index), then checked by comparing the items, which
stops at the first difference: a request costs about what reading it costs, so a long
conversation that repeats its history in every request stays linear in what it sends. A
request that continues no conversation starts one. When it starts while another
conversation waits for a tool result, it is that tool call's sub-agent.

Each model call is one iteration: the messages new in its request (the echo of the
previous reply is left out: the reply itself is kept from the response), the assistant
message of the response, and the tool results that the next request of the conversation
brings, joined by tool call id. Requests and bodies go through the wire-format codecs; the
timestamps come from a :class:`~pytest_agentctx.context.clock.StepClock` read twice per model call
(request, response), in exchange order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pytest_agentctx.context.clock import DEFAULT_START, StepClock
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall
from pytest_agentctx.exceptions import CodecError
from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.codecs import Completion
from pytest_agentctx.traffic.codecs.base import Codec, codec_for_path
from pytest_agentctx.traffic.codecs.sse import SSEEvent

__all__ = ["Conversation", "build"]

#: Where each wire format keeps the conversation's items, and the fields that hold the
#: system prompt outside of them (left out when only the new items are decoded).
_ITEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai_chat": ("messages", ()),
    "anthropic_messages": ("messages", ("system",)),
    "openai_responses": ("input", ("instructions",)),
    "gemini": ("contents", ("systemInstruction", "system_instruction")),
}
#: The runtime's provider name for each wire format (``metadata["provider"]``).
_PROVIDERS = {
    "openai_chat": "openai",
    "anthropic_messages": "anthropic",
    "openai_responses": "openai-responses",
    "gemini": "google",
}
#: Stop reasons after which the model's tool calls are not waiting for a result (a call
#: forced by ``tool_choice`` to get structured output ends with ``stop``).
_FINAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "max_tokens", "length"})


#: What reading a body of an unexpected shape raises: the codecs check the fields they need
#: (CodecError), but an item of the wrong type deeper down surfaces as Python's own errors.
_UNREADABLE = (CodecError, AttributeError, TypeError, KeyError, ValueError)


@dataclass
class _Iteration:
    number: int
    started_at: datetime
    messages: list[Message] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    completed_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    replied: bool = False
    #: Sub-agent conversations started by this iteration's tool calls: (call id, child).
    children: list[tuple[str, Conversation]] = field(default_factory=list)


@dataclass
class Conversation:
    """One conversation being rebuilt (internal state; :meth:`context` is the result)."""

    number: int
    wire_format: str
    tools_key: int
    iterations: list[_Iteration] = field(default_factory=list)
    #: The items of the last request (the prefix the next request must have), its system
    #: fields, and the hash of its last item (the index key, with the count).
    last_items: list[Any] = field(default_factory=list)
    last_system: tuple[Any, ...] = ()
    last_key: tuple[int, int] = (0, 0)
    last_ok: bool = False
    last_response_id: str | None = None
    #: Tool calls of the last reply that no request answered yet, by id.
    pending: dict[str, ToolCall] = field(default_factory=dict)
    waits_for_tools: bool = False
    last_event: int = 0
    parent: Conversation | None = None
    _last_time: datetime | None = None

    @property
    def created_at(self) -> datetime:
        return self.iterations[0].started_at

    def context(self) -> AgentContext:
        """The conversation as an :class:`AgentContext` (sub-agents in metadata)."""
        iterations = []
        for item in self.iterations:
            metadata = dict(item.metadata)
            if item.children:
                subagents: dict[str, Any] = {}
                for call_id, child in item.children:
                    key = call_id
                    counter = 2
                    while key in subagents:
                        key = f"{call_id}#{counter}"
                        counter += 1
                    subagents[key] = {
                        "tool_call_id": call_id,
                        "context": child.context().model_dump(mode="json"),
                    }
                metadata["subagents"] = subagents
            iterations.append(
                Iteration(
                    number=item.number,
                    messages=item.messages,
                    tool_calls=item.tool_calls,
                    started_at=item.started_at,
                    completed_at=item.completed_at,
                    metadata=metadata,
                )
            )
        last = self.iterations[-1]
        updated = max(
            t for t in (last.completed_at, last.started_at, self._last_time) if t is not None
        )
        return AgentContext(
            iterations=iterations,
            current_iteration=last.number,
            created_at=self.created_at,
            updated_at=updated,
        )

    def summary(self) -> str:
        """For messages: the wire format, the iterations and the first user message."""
        first_user = next(
            (
                m.content
                for it in self.iterations
                for m in it.messages
                if m.role == "user" and m.content
            ),
            None,
        )
        shown = repr(first_user[:60]) if first_user else "no user message"
        return (
            f"{self.wire_format}, {len(self.iterations)} iteration(s), first user message {shown}"
        )


@dataclass
class Built:
    """What :func:`build` found: the top-level conversations and the other exchanges."""

    conversations: list[Conversation]
    non_llm: list[Exchange]
    #: Why each non-LLM exchange is not a model call (same order as ``non_llm``).
    reasons: list[str]


def _item_hash(item: Any) -> int:
    return hash(repr(_canonical(item)))


#: Keys a client may move from one request to the next without changing the conversation:
#: Anthropic's prompt-caching marker (also accepted by OpenAI-compatible gateways), which
#: clients put on the newest message of every call and take off the older ones.
_ANNOTATIONS = frozenset({"cache_control"})
#: Content blocks that hold only a text; ``[{"type": "text", "text": t}]`` is ``t``.
_TEXT_BLOCKS = frozenset({"text", "input_text"})


def _canonical(value: Any) -> Any:
    """``value`` without per-turn annotations, for comparing requests.

    ``cache_control`` keys are dropped at any depth, and a content list of one text block
    reads as its text (clients turn a string into a block to mark it, then back). Returns
    ``value`` itself when there is nothing to drop, so the common case copies nothing.
    """
    if isinstance(value, Mapping):
        changed = False
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key in _ANNOTATIONS:
                changed = True
                continue
            canonical = _canonical(item)
            if key == "content":
                canonical = _single_text(canonical)
            changed = changed or canonical is not item
            result[key] = canonical
        return result if changed else value
    if isinstance(value, list):
        items = [_canonical(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
    return value


def _single_text(content: Any) -> Any:
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if (
            isinstance(block, Mapping)
            and block.keys() == {"type", "text"}
            and block["type"] in _TEXT_BLOCKS
            and isinstance(block["text"], str)
        ):
            return block["text"]
    return content


def _same_items(previous: list[Any], items: list[Any], length: int) -> bool:
    """Whether ``previous`` is ``items[:length]``, annotations aside (see
    :func:`_canonical`). The items are compared in C first, stopping at the first
    difference; only the items that differ are compared again without annotations."""
    if previous is items or previous == items[:length]:
        return True
    return len(previous) == length and all(
        old == new or _canonical(old) == _canonical(new)
        for old, new in zip(previous, items, strict=False)
    )


def _tools_key(tools: Any) -> int:
    text = repr(tools)
    if any(key in text for key in _ANNOTATIONS):
        text = repr(_canonical(tools))
    return hash(text)


def _events(stored: Sequence[Mapping[str, Any]]) -> list[SSEEvent]:
    events = []
    for event in stored:
        if "data" not in event:
            continue
        data = event["data"]
        text = data if isinstance(data, str) else _dumps(data)
        events.append(SSEEvent(event.get("event"), text))
    return events


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _decode_reply(codec: Codec, exchange: Exchange, stream: bool) -> Completion:
    """The model's reply in ``exchange`` (JSON or a stream), through the codec."""
    body = exchange.response
    if body is not None and "sse" in body:
        decode_stream = getattr(codec, "decode_stream")  # noqa: B009 (every codec has one)
        completion: Completion = decode_stream(_events(body["sse"]))
        return completion
    if body is not None and "json" in body:
        data = body["json"]
        if not isinstance(data, Mapping):
            raise CodecError(f"the response is a JSON {type(data).__name__}, not an object")
        return codec.decode_response(data)
    if body is not None and "text" in body and stream:
        decode_stream = getattr(codec, "decode_stream")  # noqa: B009
        completion = decode_stream(str(body["text"]))
        return completion
    data = exchange.response_json()
    if isinstance(data, Mapping):
        return codec.decode_response(data)
    raise CodecError(
        f"the response body ({sorted(body) if body else 'empty'}) is neither JSON nor a "
        "stream of events"
    )


def _error_of(exchange: Exchange) -> dict[str, Any]:
    data = exchange.response_json()
    message: Any = None
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("type")
        elif isinstance(error, str):
            message = error
        message = message or data.get("message")
    if message is None and exchange.response is not None and "text" in exchange.response:
        message = str(exchange.response["text"])[:200]
    return {"status": exchange.status, "message": message}


class _Builder:
    def __init__(self, start: datetime, step: timedelta) -> None:
        self.clock = StepClock(start, step)
        self.conversations: list[Conversation] = []
        self.top: list[Conversation] = []
        #: Conversations by the item count of their last request, then by the hash of
        #: its last item: a request looks up each count it could continue.
        self.by_size: dict[int, dict[int, list[Conversation]]] = {}
        self.by_response: dict[str, Conversation] = {}
        self.non_llm: list[Exchange] = []
        self.reasons: list[str] = []
        self.events = 0
        #: Background responses (OpenAI Responses ``background: true``) not done yet, by
        #: id: the conversation that asked, its codec and the request's model.
        self.background: dict[str, tuple[Conversation, Codec, str | None]] = {}
        #: Compaction items (by id) returned for a conversation's history.
        self.compactions: dict[str, Conversation] = {}
        self._child_first_request: tuple[_Iteration, Conversation] | None = None

    # -- one exchange --------------------------------------------------------------

    def add(self, exchange: Exchange) -> None:
        codec = codec_for_path(exchange.path) if exchange.method == "POST" else None
        if codec is None:
            if not (self._retrieval(exchange) or self._compaction(exchange)):
                self._skip(exchange, "not a model endpoint")
            return
        body = exchange.request_json()
        items_key, system_keys = _ITEMS[codec.name]
        items = body.get(items_key) if isinstance(body, Mapping) else None
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            self._skip(exchange, f"the request has no {items_key!r} list")
            return
        system = tuple(_canonical(body.get(key)) for key in system_keys)
        candidates, offset = self._find(codec.name, body, items, system)
        sliced: Mapping[str, Any] = body
        if candidates:
            trimmed = {k: v for k, v in body.items() if k not in system_keys}
            trimmed[items_key] = items[offset:]
            sliced = trimmed
        try:
            decoded = codec.decode_request(sliced)
            messages = [_message(raw) for raw in decoded.messages]
        except _UNREADABLE as exc:
            self._skip(exchange, f"the request does not decode: {exc}")
            return
        tools_key = _tools_key(body.get("tools"))
        started = self.clock.now()
        conversation = _choose(candidates, messages, tools_key) if candidates else None
        if conversation is None:
            conversation = self._start(codec.name, tools_key, started)
        else:
            self._unindex(conversation)
            conversation.tools_key = tools_key
        self._take_request(conversation, messages, started)
        self._take_response(conversation, codec, exchange, decoded.model, decoded.stream)
        conversation.last_items = items
        conversation.last_system = system
        if items:
            conversation.last_key = (len(items), _item_hash(items[-1]))
            bucket = self.by_size.setdefault(len(items), {})
            bucket.setdefault(conversation.last_key[1], []).append(conversation)

    def _skip(self, exchange: Exchange, reason: str) -> None:
        self.non_llm.append(exchange)
        self.reasons.append(reason)

    # -- which conversation --------------------------------------------------------

    def _find(
        self,
        wire_format: str,
        body: Mapping[str, Any],
        items: list[Any],
        system: tuple[Any, ...],
    ) -> tuple[list[Conversation], int]:
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self.by_response:
            return [self.by_response[previous]], 0
        size = len(items)
        for length in sorted((n for n in self.by_size if n <= size), reverse=True):
            found = self.by_size[length].get(_item_hash(items[length - 1]))
            if not found:
                continue
            candidates = [
                c
                for c in found
                if c.wire_format == wire_format
                and (length < size or not c.last_ok)
                and c.last_system == system
                # the same items (a C-level comparison that stops at the first difference)
                and _same_items(c.last_items, items, length)
            ]
            if candidates:
                return candidates, length
        return self._after_compaction(wire_format, items)

    def _unindex(self, conversation: Conversation) -> None:
        length, key = conversation.last_key
        bucket = self.by_size.get(length)
        found = bucket.get(key) if bucket else None
        if bucket is not None and found and conversation in found:
            found.remove(conversation)
            if not found:
                del bucket[key]
            if not bucket:
                del self.by_size[length]

    def _start(self, wire_format: str, tools_key: int, at: datetime) -> Conversation:
        conversation = Conversation(len(self.conversations) + 1, wire_format, tools_key)
        parent = self._waiting_parent()
        self.conversations.append(conversation)
        if parent is None:
            self.top.append(conversation)
        else:
            conversation.parent = parent
            self._link(parent, conversation)
        return conversation

    def _waiting_parent(self) -> Conversation | None:
        # The conversation that last got a reply asking for tools it has not been given
        # yet, among those with a call that started no sub-agent so far: one tool call
        # starts at most one sub-agent.
        waiting = [c for c in self.conversations if c.waits_for_tools and _unlinked(c)]
        return max(waiting, key=lambda c: c.last_event) if waiting else None

    def _link(self, parent: Conversation, child: Conversation) -> None:
        iteration = parent.iterations[-1]
        iteration.children.append((_unlinked(parent)[0], child))
        self._child_first_request = (iteration, child)

    # -- the request: new messages, tool results ---------------------------------

    def _take_request(
        self, conversation: Conversation, messages: list[Message], at: datetime
    ) -> None:
        start = 0
        last = conversation.iterations[-1] if conversation.iterations else None
        echoed: set[str] = set()
        if last is not None and last.replied:
            # The echo of the previous reply: kept from the response, not repeated.
            while start < len(messages) and messages[start].role == "assistant":
                start += 1
            # A client may answer parallel calls one by one (call 1, result 1, call 2,
            # result 2): the later calls are the echo too, until something new comes.
            echoed = {call.id for call in last.tool_calls}
        fresh: list[Message] = []
        for message in messages[start:]:
            call = conversation.pending.get(message.tool_call_id or "")
            if message.role == "tool" and call is not None and last is not None:
                if message.name is None:
                    message = message.model_copy(update={"name": call.name})
                last.messages.append(message)
                del conversation.pending[call.id]
            elif _echoes(message, echoed):
                continue
            else:
                echoed = set()
                fresh.append(message)
        if last is None or last.replied:
            if last is not None and last.completed_at is None:
                last.completed_at = at
            conversation.iterations.append(_Iteration(len(conversation.iterations) + 1, at, fresh))
        else:
            last.messages.extend(fresh)
        if self._child_first_request is not None:
            iteration, child = self._child_first_request
            if child is conversation:
                self._retarget(iteration, child)
            self._child_first_request = None

    def _retarget(self, iteration: _Iteration, child: Conversation) -> None:
        """Link a sub-agent to the pending call whose arguments its first user message
        quotes, when there is one (several sub-agents started in parallel)."""
        texts = [m.content for m in child.iterations[0].messages if m.role == "user" and m.content]
        if not texts:
            return
        parent = child.parent
        if parent is None:
            return
        taken = {call_id for call_id, c in iteration.children if c is not child}
        for call in iteration.tool_calls:
            if call.id in taken or call.id not in parent.pending:
                continue
            values = [v for v in call.arguments.values() if isinstance(v, str) and v]
            if any(value in text for value in values for text in texts):
                iteration.children = [
                    (call.id if c is child else call_id, c) for call_id, c in iteration.children
                ]
                return

    # -- the response ------------------------------------------------------------

    def _take_response(
        self,
        conversation: Conversation,
        codec: Codec,
        exchange: Exchange,
        request_model: str | None,
        stream: bool,
    ) -> None:
        at = self._reply_time(conversation)
        iteration = conversation.iterations[-1]
        completion: Completion | None = None
        error: dict[str, Any] | None = None
        if exchange.status >= 400:
            error = _error_of(exchange)
        else:
            try:
                completion = _decode_reply(codec, exchange, stream)
            except _UNREADABLE as exc:
                error = {"status": exchange.status, "message": str(exc)}
        if completion is None:
            errors = list(iteration.metadata.get("errors", ()))
            errors.append(error)
            iteration.metadata["errors"] = errors
            conversation.last_ok = False
            return
        conversation.last_ok = True
        if _in_background(completion) and completion.response_id:
            # Answered later: the retrieval that finds it done brings the reply.
            self.background[completion.response_id] = (conversation, codec, request_model)
            return
        self._reply(conversation, codec, completion, request_model, at)

    def _reply_time(self, conversation: Conversation) -> datetime:
        """Read the clock for a reply of ``conversation`` (its last event so far)."""
        at = self.clock.now()
        self.events += 1
        conversation.last_event = self.events
        conversation._last_time = at
        return at

    def _reply(
        self,
        conversation: Conversation,
        codec: Codec,
        completion: Completion,
        request_model: str | None,
        at: datetime,
    ) -> None:
        """The model's reply ``completion`` closes the last request of ``conversation``."""
        iteration = conversation.iterations[-1]
        metadata = completion.metadata()
        metadata["provider"] = _PROVIDERS[codec.name]
        metadata["model"] = completion.model or request_model
        iteration.metadata.update(metadata)
        calls = list(completion.tool_calls)
        iteration.messages.append(
            Message(
                role="assistant",
                content=completion.content,
                tool_calls=calls,
                reasoning=list(completion.reasoning),
            )
        )
        iteration.tool_calls.extend(calls)
        iteration.replied = True
        if not calls:
            iteration.completed_at = at
        conversation.pending = {call.id: call for call in calls}
        conversation.waits_for_tools = bool(calls) and completion.stop_reason not in _FINAL_STOPS
        if completion.response_id:
            conversation.last_response_id = completion.response_id
            self.by_response[completion.response_id] = conversation

    # -- OpenAI Responses compaction -----------------------------------------------

    def _compaction(self, exchange: Exchange) -> bool:
        """Take ``exchange`` if it compacts a conversation's history
        (``POST .../responses/compact``): the compaction items it returns stand for that
        history, so a request that sends one back continues the conversation."""
        if exchange.method != "POST" or not exchange.path.rstrip("/").endswith(
            "/responses/compact"
        ):
            return False
        body, reply = exchange.request_json(), exchange.response_json()
        items = body.get("input") if isinstance(body, Mapping) else None
        output = reply.get("output") if isinstance(reply, Mapping) else None
        if exchange.status >= 400 or not isinstance(items, list) or not isinstance(output, list):
            return False
        system = (_canonical(body.get("instructions")),)
        candidates, _ = self._find("openai_responses", body, items, system)
        if not candidates:
            return False
        for item in output:
            key = _compaction_key(item)
            if key is not None:
                self.compactions[key] = candidates[0]
        self._skip(exchange, f"compacts the history of conversation {candidates[0].number}")
        return True

    def _after_compaction(
        self, wire_format: str, items: list[Any]
    ) -> tuple[list[Conversation], int]:
        """The conversation whose compacted history ``items`` sends back, and the position
        of the items after the compaction item (the new ones)."""
        for position, item in enumerate(items):
            found = self.compactions.get(_compaction_key(item) or "")
            if found is not None and found.wire_format == wire_format:
                return [found], position + 1
        return [], 0

    # -- OpenAI Responses in the background ----------------------------------------

    def _retrieval(self, exchange: Exchange) -> bool:
        """Take ``exchange`` if it retrieves a background response a conversation waits for
        (``GET .../responses/<id>``): its reply once done, else a poll (non-LLM)."""
        segments = exchange.path.rstrip("/").split("/")
        if exchange.method != "GET" or len(segments) < 2 or segments[-2] != "responses":
            return False
        waiting = self.background.get(segments[-1])
        if waiting is None:
            return False
        conversation, codec, request_model = waiting
        completion: Completion | None = None
        if exchange.status < 400:
            stream = exchange.response is not None and "sse" in exchange.response
            try:
                completion = _decode_reply(codec, exchange, stream)
            except _UNREADABLE:
                completion = None
        if completion is None or _in_background(completion):
            state = completion.stop_reason if completion is not None else f"{exchange.status}"
            self._skip(exchange, f"a poll of background response {segments[-1]} ({state})")
            return True
        del self.background[segments[-1]]
        self._reply(conversation, codec, completion, request_model, self._reply_time(conversation))
        return True


def _choose(
    candidates: list[Conversation], messages: list[Message], tools_key: int
) -> Conversation:
    """The conversation a request continues when several have the same history so far (two
    agents given the same input): the one whose tool calls it answers, else one with the
    same tools, else one that waits for tool results, else the oldest."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return min(
        candidates,
        key=lambda c: (
            not answered.intersection(c.pending),
            c.tools_key != tools_key,
            not c.pending,
            c.number,
        ),
    )


def _compaction_key(item: Any) -> str | None:
    """The id of an OpenAI Responses ``compaction`` item, else ``None``."""
    if isinstance(item, Mapping) and item.get("type") == "compaction":
        key = item.get("id") or item.get("encrypted_content")
        return key if isinstance(key, str) else None
    return None


#: Statuses of an OpenAI Responses reply that is still being made (``background: true``).
_UNFINISHED = frozenset({"queued", "in_progress"})


def _in_background(completion: Completion) -> bool:
    """Whether ``completion`` is a background response not done yet (no output so far)."""
    return (
        completion.stop_reason in _UNFINISHED
        and completion.content is None
        and not completion.tool_calls
    )


def _echoes(message: Message, calls: set[str]) -> bool:
    """Whether ``message`` repeats some of the previous reply's tool calls ``calls``."""
    return (
        message.role == "assistant"
        and bool(message.tool_calls)
        and all(call.id in calls for call in message.tool_calls)
    )


def _unlinked(conversation: Conversation) -> list[str]:
    """Ids of the pending tool calls of the last reply that started no sub-agent."""
    if not conversation.pending or not conversation.iterations:
        return []
    linked = {call_id for call_id, _ in conversation.iterations[-1].children}
    return [call_id for call_id in conversation.pending if call_id not in linked]


def _message(raw: Mapping[str, Any]) -> Message:
    role = raw.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        role = "user"
    content = raw.get("content")
    return Message(
        role=role,
        content=content if content is None or isinstance(content, str) else str(content),
        tool_calls=[ToolCall.model_validate(call) for call in raw.get("tool_calls") or ()],
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
        is_error=bool(raw.get("is_error")),
        reasoning=list(raw.get("reasoning") or ()),
    )


def build(
    exchanges: Sequence[Exchange],
    *,
    start: datetime = DEFAULT_START,
    step: timedelta = timedelta(seconds=1),
) -> Built:
    """The conversations of ``exchanges`` (in request order), and the non-LLM exchanges."""
    builder = _Builder(start, step)
    for exchange in exchanges:
        builder.add(exchange)
    return Built(builder.top, builder.non_llm, builder.reasons)
