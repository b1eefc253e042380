"""The Google Gemini wire format (``generateContent`` and ``streamGenerateContent``).

The model is named by the URL, not the body: ``POST /v1beta/models/{model}:generateContent``
(the Gemini API, also under ``/v1``), the same with ``:streamGenerateContent?alt=sse`` for a
stream of server-sent events (without ``alt=sse``: one JSON array of the same chunks,
:func:`is_array_stream`, :func:`array_chunks`; :func:`decode_stream` reads either), and on
Vertex AI
``/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent``.
:func:`model_of_path`, :func:`is_stream_path` and :func:`request_for_path` read what the URL
says; :func:`encode_request` adds a ``model`` key to the body for the runtime's provider,
which sends it in the URL instead.

A request has ``contents`` (turns of role ``user`` or ``model``, each a list of ``parts``:
``text``, ``functionCall``, ``functionResponse``), an optional ``systemInstruction``,
``tools`` (``functionDeclarations``) and ``generationConfig``. The API accepts the
snake_case spelling of every field too (``function_call``, ``system_instruction``...),
which some clients send: the decoders read both.

Tool call ids: the Gemini API usually sends function calls without an ``id`` and joins a
``functionResponse`` to its call by name and position. A call without an id gets a
deterministic one (:func:`synthetic_call_id`: from the number of model turns before it,
its position in the turn, its name and its arguments), the same whether it is read from
the response (``decode_response(body, turn=model_turns(request contents))``) or from the
next request's echo of it (``decode_request`` counts the model turns; ``first_turn`` when
the body holds only the end of the conversation), and distinct for the same call made in
another turn. A ``functionResponse`` takes the id of the call it names when the model turn
before has a call with that id; otherwise (no id, or an id only the client knows) the id
of the first unanswered call of the same name whose id was made up. Ids the client
assigned (on its echo of a bare call) are adopted by capture, which gives the reply's call
the client's id (see ``Conversation.adopt_client_ids``). Synthetic ids are never sent on
the wire.

Thinking: a part with ``"thought": true`` is a thought summary, and a ``thoughtSignature``
on a text or ``functionCall`` part must be sent back with it on the next call (Gemini 3
requires it for function calling). Both are kept as reasoning items of the assistant
message (see ``Message.reasoning``): ``{"type": "gemini_thought", "text": ...,
"thoughtSignature": ...}`` and ``{"type": "gemini_signature", "part": "text" |
"functionCall", "index": k, "thoughtSignature": ...}`` (``index``: the k-th function call
of the turn), which :func:`encode_request` puts back in place.
"""

from __future__ import annotations

from pytest_agentctx.traffic.codecs.gemini.parts import (
    SYNTHETIC_ID_PREFIX as SYNTHETIC_ID_PREFIX,
    is_synthetic as is_synthetic,
    model_turns as model_turns,
    synthetic_call_id as synthetic_call_id,
)
from pytest_agentctx.traffic.codecs.gemini.request import (
    decode_request as decode_request,
    encode_request as encode_request,
    is_stream_path as is_stream_path,
    model_of_path as model_of_path,
    request_for_path as request_for_path,
)
from pytest_agentctx.traffic.codecs.gemini.response import (
    decode_response as decode_response,
    encode_response as encode_response,
)
from pytest_agentctx.traffic.codecs.gemini.stream import (
    array_chunks as array_chunks,
    decode_stream as decode_stream,
    encode_stream as encode_stream,
    is_array_stream as is_array_stream,
)

#: The codec's name (see :mod:`~pytest_agentctx.traffic.codecs.base`).
name = "gemini"
