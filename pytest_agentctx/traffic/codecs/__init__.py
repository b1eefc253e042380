"""Wire-format codecs: pure functions between provider JSON and the context's models.

One module per wire format, each with the same four functions:

* ``encode_request(...)``: provider-neutral messages and tool specs to the request JSON;
* ``decode_request(body)``: request JSON back to neutral messages (used by the fake model
  and by traffic capture);
* ``decode_response(body)``: response JSON to a :class:`Completion`;
* ``encode_response(completion, ...)``: a :class:`Completion` to response JSON (used by the
  fake model, so the real SDK parses what it serves).

The runtime, the fake model and traffic capture all go through these functions: there is
exactly one parser per wire format.
"""

from __future__ import annotations

from .base import (
    Codec as Codec,
    Completion as Completion,
    DecodedRequest as DecodedRequest,
    Usage as Usage,
    codec_for_path as codec_for_path,
    get_codec as get_codec,
)
