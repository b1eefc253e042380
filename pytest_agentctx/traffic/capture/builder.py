"""Conversations rebuilt from LLM exchanges: the heart of traffic capture.

Exchanges are read in request order. Each one whose URL is a model endpoint
(:func:`~pytest_agentctx.traffic.codecs.codec_for_path`) and whose request decodes is a model call;
every other exchange is kept aside as *non-LLM*. A model call belongs to the conversation
whose last request is a prefix of its own and is longer, or as long when the last call
failed (a retry). The prefix is found by the item count and the hash of the last item of
each conversation's last request (an index), then checked by comparing the items, which
stops at the first difference: a request costs about what reading it costs, so a long
conversation that repeats its history in every request stays linear in what it sends. A
request that continues no conversation of its wire format may retry or continue one of
another format, compared by its messages (:mod:`.crossing`); else it starts one. When it
starts while another conversation waits for a tool result, it is linked to that tool call
as its sub-agent; the link stays only where the traffic shows the call started it
(:mod:`.nesting`), so agents run concurrently by one test stay apart.

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
from pytest_agentctx.context.model import Message, ToolCall
from pytest_agentctx.traffic.capture.conversation import Conversation, IterationState, renamed
from pytest_agentctx.traffic.capture.crossing import (
    Crossings,
    provider_error,
    provider_errors,
)
from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.capture.items import (
    item_hash,
    same_items,
    tools_hash,
    without_annotations,
)
from pytest_agentctx.traffic.capture.mcp import McpCall, McpTraffic, attach
from pytest_agentctx.traffic.capture.nesting import first_user_texts, quotes_arguments, top_level
from pytest_agentctx.traffic.capture.replies import (
    UNREADABLE,
    CallError,
    decode_items,
    decode_reply,
    error_of,
    in_background,
)
from pytest_agentctx.traffic.codecs import Completion
from pytest_agentctx.traffic.codecs.base import Codec, DecodedRequest, codec_for_path

#: Where each wire format keeps the conversation's items, and the fields that hold the
#: system prompt outside of them (left out when only the new items are decoded).
_ITEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai_chat": ("messages", ()),
    "anthropic_messages": ("messages", ("system",)),
    "openai_responses": ("input", ("instructions",)),
    "gemini": ("contents", ("systemInstruction", "system_instruction")),
    "cohere_chat": ("messages", ()),
    "ollama_chat": ("messages", ()),
    "bedrock": ("messages", ("system",)),
}
#: The runtime's provider name for each wire format (``metadata["provider"]``).
_PROVIDERS = {
    "openai_chat": "openai",
    "anthropic_messages": "anthropic",
    "openai_responses": "openai-responses",
    "gemini": "google",
    "cohere_chat": "cohere",
    "ollama_chat": "ollama",
    "bedrock": "bedrock",
}
#: Stop reasons after which the model's tool calls are not waiting for a result (a call
#: forced by ``tool_choice`` to get structured output ends with ``stop``).
_FINAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "max_tokens", "length"})
#: Wire formats whose stop reason does not say whether tool calls wait for results (Ollama
#: ends every reply with ``stop``, tool calls or not): their tool calls always wait.
_CALLS_ALWAYS_WAIT = frozenset({"ollama_chat"})


@dataclass
class Built:
    """What :func:`build` found: the top-level conversations and the other exchanges."""

    conversations: list[Conversation]
    non_llm: list[Exchange]
    #: Why each non-LLM exchange is not a model call (same order as ``non_llm``).
    reasons: list[str]
    #: The MCP tool calls (each in its iteration's ``metadata["mcp"]`` too) and the
    #: servers' tool contract (see :mod:`.mcp`).
    mcp: McpTraffic = field(default_factory=McpTraffic)


class _Builder:
    def __init__(self, start: datetime, step: timedelta, mcp: McpTraffic) -> None:
        self.clock = StepClock(start, step)
        self.mcp = mcp
        #: The position of the next exchange, and the model tool calls MCP calls joined.
        self.position = 0
        self.mcp_joined: set[tuple[int, str]] = set()
        self.conversations: list[Conversation] = []
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
        self._child_first_request: tuple[IterationState, Conversation] | None = None
        self.requests = 0
        #: The conversations a request of another wire format may join (see :mod:`.crossing`).
        self.crossings = Crossings()

    # -- one exchange --------------------------------------------------------------

    def add(self, exchange: Exchange) -> None:
        position = self.position
        self.position += 1
        mcp_reason = self.mcp.reasons.get(position)
        if mcp_reason is not None:  # MCP traffic: no model call
            self._mcp(self.mcp.calls_at.get(position, []))
            self._skip(exchange, mcp_reason)
            return
        codec = codec_for_path(exchange.path) if exchange.method == "POST" else None
        if codec is None:
            if not (self._retrieval(exchange) or self._compaction(exchange)):
                self._skip(exchange, "not a model endpoint")
            return
        body: object = exchange.request_json()
        items_key, system_keys = _ITEMS[codec.name]
        items = body.get(items_key) if isinstance(body, Mapping) else None
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not isinstance(body, Mapping):
            self._skip(exchange, _no_items(codec, exchange.path, body, items_key))
            return
        system = tuple(without_annotations(body.get(key)) for key in system_keys)
        candidates, offset = self._find(codec.name, body, items, system)
        sliced: Mapping[str, object] = body
        if candidates:
            trimmed = {k: v for k, v in body.items() if k not in system_keys}
            trimmed[items_key] = items[offset:]
            sliced = trimmed
        try:
            decoded = _decode_request(
                codec, exchange.path, sliced, items[:offset] if candidates else ()
            )
            messages = [_message(raw) for raw in decoded.messages]
        except UNREADABLE as exc:
            self._skip(exchange, f"the request does not decode: {exc}")
            return
        tools_key = tools_hash(body.get("tools"))
        started = self.clock.now()
        self.requests += 1
        whole = not candidates
        joined = self.crossings.join(codec, decoded.messages) if whole else None
        if joined is not None:  # a retry or continuation on another wire format
            messages = renamed(messages[joined.offset :], joined.ids)
            candidates = [joined.conversation]
            provider_errors(joined.conversation, _PROVIDERS[joined.conversation.wire_format])
            joined.conversation.wire_format = codec.name
        conversation = _choose(candidates, messages, tools_key) if candidates else None
        if conversation is None:
            conversation = self._start(codec.name, tools_key, started)
        else:
            self._unindex(conversation)
            conversation.tools_key = tools_key
        conversation.last_request = self.requests
        self._take_request(conversation, messages, started, codec)
        self._take_response(conversation, codec, exchange, decoded.model, decoded.stream)
        conversation.last_items = items
        conversation.last_system = system
        self.crossings.note(conversation, codec, body, decoded.messages if whole else None)
        if items:
            conversation.last_key = (len(items), item_hash(items[-1]))
            bucket = self.by_size.setdefault(len(items), {})
            bucket.setdefault(conversation.last_key[1], []).append(conversation)

    def _mcp(self, calls: list[McpCall]) -> None:
        attach(self.conversations, calls, self.mcp_joined)

    def _skip(self, exchange: Exchange, reason: str) -> None:
        self.non_llm.append(exchange)
        self.reasons.append(reason)

    # -- which conversation --------------------------------------------------------

    def _find(
        self,
        wire_format: str,
        body: Mapping[str, object],
        items: list[object],
        system: tuple[object, ...],
    ) -> tuple[list[Conversation], int]:
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self.by_response:
            return [self.by_response[previous]], 0
        size = len(items)
        for length in sorted((n for n in self.by_size if n <= size), reverse=True):
            found = self.by_size[length].get(item_hash(items[length - 1]))
            if not found:
                continue
            candidates = [
                c
                for c in found
                if c.wire_format == wire_format
                and (length < size or not c.last_ok)
                and c.last_system == system
                # the same items (a C-level comparison that stops at the first difference)
                and same_items(c.last_items, items, length)
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
        if parent is not None:
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
        self, conversation: Conversation, messages: list[Message], at: datetime, codec: Codec
    ) -> None:
        start = 0
        last = conversation.iterations[-1] if conversation.iterations else None
        echoed: set[str] = set()
        if last is not None and last.replied:
            # The echo of the previous reply: kept from the response, not repeated.
            while start < len(messages) and messages[start].role == "assistant":
                start += 1
            made_up = getattr(codec, "is_synthetic", None)
            if made_up is not None:  # Gemini: ids the client gave calls the model sent bare
                conversation.adopt_client_ids(messages[:start], made_up)
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
                conversation.answers[call.id] = (self.requests, message.content)
            elif _echoes(message, echoed):
                continue
            else:
                echoed = set()
                fresh.append(message)
        if last is None or last.replied:
            if last is not None and last.completed_at is None:
                last.completed_at = at
            conversation.iterations.append(
                IterationState(len(conversation.iterations) + 1, at, fresh)
            )
        else:
            last.messages.extend(fresh)
        if self._child_first_request is not None:
            iteration, child = self._child_first_request
            if child is conversation:
                self._retarget(iteration, child)
            self._child_first_request = None

    def _retarget(self, iteration: IterationState, child: Conversation) -> None:
        """Link a sub-agent to the pending call whose arguments its first user message
        quotes, when there is one (several sub-agents started in parallel)."""
        texts = first_user_texts(child)
        if not texts:
            return
        parent = child.parent
        if parent is None:
            return
        taken = {call_id for call_id, c in iteration.children if c is not child}
        for call in iteration.tool_calls:
            if call.id in taken or call.id not in parent.pending:
                continue
            if quotes_arguments(call, texts):
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
        error: CallError | None = None
        if exchange.status >= 400:
            error = error_of(exchange)
        else:
            try:
                completion = decode_reply(codec, exchange, stream)
            except UNREADABLE as exc:
                error = {"status": exchange.status, "message": str(exc)}
        if completion is None:
            previous = iteration.metadata.get("errors")
            errors = list(previous) if isinstance(previous, list) else []
            errors.append(provider_error(errors, error, _PROVIDERS[codec.name]))
            iteration.metadata["errors"] = errors
            conversation.last_ok = False
            return
        conversation.last_ok = True
        if in_background(completion) and completion.response_id:
            # Answered later: the retrieval that finds it done brings the reply.
            self.background[completion.response_id] = (conversation, codec, request_model)
            return
        self._reply(conversation, codec, completion, request_model, at)

    def _reply_time(self, conversation: Conversation) -> datetime:
        """Read the clock for a reply of ``conversation`` (its last event so far)."""
        at = self.clock.now()
        self.events += 1
        conversation.last_event = self.events
        conversation.last_time = at
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
        conversation.waits_for_tools = bool(calls) and (
            codec.name in _CALLS_ALWAYS_WAIT or completion.stop_reason not in _FINAL_STOPS
        )
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
        system = (without_annotations(body.get("instructions")),)
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
        self, wire_format: str, items: list[object]
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
                completion = decode_reply(codec, exchange, stream)
            except UNREADABLE:
                completion = None
        if completion is None or in_background(completion):
            state = completion.stop_reason if completion is not None else f"{exchange.status}"
            self._skip(exchange, f"a poll of background response {segments[-1]} ({state})")
            return True
        del self.background[segments[-1]]
        self._reply(conversation, codec, completion, request_model, self._reply_time(conversation))
        return True


def _decode_request(
    codec: Codec, path: str, body: Mapping[str, object], before: Sequence[object]
) -> DecodedRequest:
    """``body`` (the items following ``before``) decoded by ``codec``, with what the URL
    ``path`` says when the codec reads it (``decode_request_at``: Bedrock names the model
    and the operation in the path)."""
    decode_at = getattr(codec, "decode_request_at", None)
    if decode_at is None:
        return decode_items(codec, body, before)
    decoded: DecodedRequest = decode_at(path, body)
    return decoded


def _no_items(codec: Codec, path: str, body: object, items_key: str) -> str:
    """Why a request without the ``items_key`` list is no model call: what the codec says
    of it when it reads the URL too (a Bedrock InvokeModel body of a model family it does
    not read), else that the list is missing."""
    if isinstance(body, Mapping) and hasattr(codec, "decode_request_at"):
        try:
            _decode_request(codec, path, body, ())
        except UNREADABLE as exc:
            return f"the request does not decode: {exc}"
    return f"the request has no {items_key!r} list"


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


def _compaction_key(item: object) -> str | None:
    """The id of an OpenAI Responses ``compaction`` item, else ``None``."""
    if isinstance(item, Mapping) and item.get("type") == "compaction":
        key = item.get("id") or item.get("encrypted_content")
        return key if isinstance(key, str) else None
    return None


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


def _message(raw: Mapping[str, Any]) -> Message:  # a message a codec decoded
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
    mcp: McpTraffic | None = None,
) -> Built:
    """The conversations of ``exchanges`` (in request order), and the non-LLM exchanges;
    ``mcp`` is the exchanges' MCP traffic (:func:`.mcp.read_mcp`), its tool calls joined to
    the model's."""
    traffic = mcp if mcp is not None else McpTraffic()
    builder = _Builder(start, step, traffic)
    for exchange in exchanges:
        builder.add(exchange)
    return Built(top_level(builder.conversations), builder.non_llm, builder.reasons, traffic)
