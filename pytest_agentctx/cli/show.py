"""``pytest-agentctx cassettes show``: one cassette, readably.

Each interaction on a few lines: method, URL and status (and the role, for a judge's or a
simulated user's call), the request's model and messages
in short, and the reply in short (its text, its tool calls, its token usage), decoded by
the wire format's codec when the URL is a model endpoint. The caller prints the lines
through the redactor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.cassettes.diffs import one_line
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import load_cassette
from pytest_agentctx.traffic.codecs.base import Codec, Completion, codec_for_path
from pytest_agentctx.traffic.codecs.gemini.stream import is_array_stream
from pytest_agentctx.traffic.errors import CassetteFormatError, CodecError
from pytest_agentctx.traffic.roles import DEFAULT_ROLE

_WIDTH = 100


def _short(text: object, width: int = _WIDTH) -> str:
    return one_line(text, width)


def _call(name: object, arguments: object) -> str:
    shown = dict(arguments) if isinstance(arguments, Mapping) else arguments
    return f"{name}({_short(json.dumps(shown, ensure_ascii=False), 60)})"


def _message(message: Mapping[str, object]) -> str:
    role = message.get("role") or "?"
    parts = []
    if message.get("content"):
        parts.append(_short(message["content"]))
    calls = message.get("tool_calls") or ()
    for call in calls if isinstance(calls, list | tuple) else ():
        if isinstance(call, Mapping):
            parts.append("calls " + _call(call.get("name", ""), call.get("arguments") or {}))
    return f"{role}: {'; '.join(parts) if parts else '(empty)'}"


def _reply(completion: Completion) -> str:
    parts = []
    if completion.content:
        parts.append(repr(_short(completion.content)))
    parts += [f"tool call {_call(call.name, call.arguments)}" for call in completion.tool_calls]
    if completion.usage is not None:
        usage = completion.usage
        parts.append(f"tokens {usage.input_tokens} in, {usage.output_tokens} out")
    return "; ".join(parts) or "(empty)"


def _decoded(codec: Codec, interaction: Interaction) -> list[str]:
    lines: list[str] = []
    request = interaction.request_body or {}
    if isinstance(request.get("json"), Mapping):
        decoded = codec.decode_request(request["json"])
        model = f", model {decoded.model}" if decoded.model else ""
        lines.append(f"  request: {len(decoded.messages)} message(s){model}")
        lines += [f"    {_message(message)}" for message in decoded.messages]
    response = interaction.response_body or {}
    if interaction.status >= 400:
        lines.append(f"  reply: error {_short(body_bytes(response).decode('utf-8', 'replace'))}")
    elif isinstance(response.get("json"), Mapping):
        lines.append(f"  reply: {_reply(codec.decode_response(response['json']))}")
    elif (
        "sse" in response
        or "eventstream" in response
        or ("text" in response and hasattr(codec, "format_ndjson"))  # Ollama's NDJSON as text
    ):
        stream = getattr(codec, "decode_stream", None)
        if stream is not None:
            lines.append(f"  reply (stream): {_reply(stream(body_bytes(response)))}")
    elif codec.name == "gemini" and is_array_stream(interaction.url):
        # streamGenerateContent without alt=sse: one JSON array of chunks
        from pytest_agentctx.traffic.capture.exchange import Exchange
        from pytest_agentctx.traffic.capture.replies import decode_reply

        completion = decode_reply(codec, Exchange.from_interaction(interaction), True)
        lines.append(f"  reply (stream): {_reply(completion)}")
    return lines


def _raw(interaction: Interaction) -> list[str]:
    lines = []
    for label, body in (
        ("request", interaction.request_body),
        ("reply", interaction.response_body),
    ):
        if body:
            text = body_bytes(body).decode("utf-8", "replace")
            lines.append(f"  {label}: {_short(text)}")
    return lines


def _interaction(index: int, interaction: Interaction) -> list[str]:
    head = f"#{index} {interaction.method} {interaction.url} -> {interaction.status}"
    if interaction.test_id:
        head += f"  (recorded by {interaction.test_id})"
    if interaction.role != DEFAULT_ROLE:
        head += f"  (role {interaction.role})"
    if interaction.partial:
        head += "  (stream recorded in part)"
    codec = codec_for_path(urlsplit(interaction.url).path)
    if codec is None:
        return [head, *_raw(interaction)]
    try:
        return [f"{head}  [{codec.name}]", *_decoded(codec, interaction)]
    except (CodecError, KeyError, TypeError, ValueError) as exc:
        return [f"{head}  [{codec.name}: not decoded: {_short(exc, 80)}]", *_raw(interaction)]


def show_cassette(path: Path) -> list[str]:
    """The lines of ``path``'s interactions; :class:`CassetteFormatError` for a file that
    is not a cassette (or not a regular file, or past a limit) or does not exist."""
    if not path.exists():
        raise CassetteFormatError(
            f"{path}: no such cassette file. Give the path of a cassette (list them with: "
            "pytest-agentctx cassettes check)."
        )
    interactions = load_cassette(path)
    lines = [f"{path}: {len(interactions)} interaction(s)"]
    for index, interaction in enumerate(interactions):
        lines += _interaction(index, interaction)
    return lines
