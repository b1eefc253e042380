"""The AWS Bedrock runtime wire format (Converse, ConverseStream, InvokeModel and
InvokeModelWithResponseStream).

The model is named by the URL, percent-encoded: ``POST /model/{modelId}/converse``,
``.../converse-stream``, ``.../invoke`` and ``.../invoke-with-response-stream``
(``/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse``).
:func:`model_of_path` and :func:`is_stream_path` read what the URL says;
:func:`decode_request_at` decodes a body with them.

A Converse request has ``messages`` (role ``user`` or ``assistant``, each a list of
content blocks: ``text``, ``toolUse``, ``toolResult``, ``image``, ``document``,
``reasoningContent``), a ``system`` list of blocks, ``toolConfig.tools[].toolSpec``
(``name``, ``description``, ``inputSchema.json``) and ``inferenceConfig``. The response
has ``output.message``, ``stopReason``, ``usage`` and ``metrics``; a stream is AWS's
binary event-stream framing (:mod:`~pytest_agentctx.traffic.codecs.eventstream`), which
:func:`decode_stream` reads and :func:`encode_stream` writes as
:class:`~pytest_agentctx.traffic.codecs.eventstream.EventMessage` lists.

InvokeModel's body is the model's own. Anthropic's Messages body
(``anthropic_version: bedrock-2023-05-31``) and its response and stream (``chunk`` events
whose ``bytes`` hold the base64 of each Messages stream event) are read by the
``anthropic_messages`` codec; other models' bodies (Amazon Nova and Titan, Meta Llama,
Mistral, Cohere...) raise :class:`~pytest_agentctx.traffic.errors.CodecError` naming the
model family.

Reasoning: a ``reasoningContent`` block is kept as a reasoning item of the assistant
message (see ``Message.reasoning``), ``{"type": "bedrock_reasoning", "reasoningText":
{"text": ..., "signature": ...}}`` or ``{"type": "bedrock_reasoning", "redactedContent":
...}``, which :func:`encode_request` sends back first in the assistant message.
"""

from __future__ import annotations

from pytest_agentctx.traffic.codecs.bedrock.blocks import REASONING as REASONING
from pytest_agentctx.traffic.codecs.bedrock.request import (
    decode_request as decode_request,
    decode_request_at as decode_request_at,
    encode_request as encode_request,
    is_invoke_path as is_invoke_path,
    is_stream_path as is_stream_path,
    model_family as model_family,
    model_of_path as model_of_path,
)
from pytest_agentctx.traffic.codecs.bedrock.response import (
    STOP_REASONS as STOP_REASONS,
    decode_response as decode_response,
    encode_response as encode_response,
)
from pytest_agentctx.traffic.codecs.bedrock.stream import (
    decode_stream as decode_stream,
    encode_invoke_stream as encode_invoke_stream,
    encode_stream as encode_stream,
)

#: The codec's name (see :mod:`~pytest_agentctx.traffic.codecs.base`).
name = "bedrock"
