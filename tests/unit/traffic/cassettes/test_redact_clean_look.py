"""The cassette redactor looks at the text a JSON body was read from with one regular
expression first (:meth:`Redactor._clean`): for any text and any secrets, it finds a body
clean exactly when the package's redactor does, so a body it lets go unread is one the
package's redactor lets go too.

Derandomized, with no deadline: the same cases every run.
"""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from pytest_agentctx.redaction.redactor import Redactor as BaseRedactor
from pytest_agentctx.traffic.cassettes.redact import Redactor

LAW = settings(max_examples=300, deadline=None, derandomize=True, database=None)

SECRETS = st.lists(
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789-_/+=%.", min_size=8, max_size=24),
    max_size=3,
)
#: What a JSON text may hold around a secret: escapes, percent signs, shapes' markers.
PIECES = st.sampled_from(
    ["\\/", "\\u0073", "\\u00e9", "%2F", "%41", "%zz", "AKIA", "ASIA", "Credential=", "{", " "]
)


@st.composite
def texts(draw: st.DrawFn, secrets: list[str]) -> bytes:
    secret = st.sampled_from(secrets or ["x"])
    parts = draw(st.lists(st.one_of(PIECES, st.text(max_size=6), secret)))
    return "".join(parts).encode("utf-8", "surrogatepass")


@LAW
@given(st.data(), SECRETS)
def test_a_text_is_clean_exactly_when_the_package_redactor_finds_it_clean(
    data: st.DataObject, secrets: list[str]
):
    cassette = Redactor(env=(), extra_values=tuple(secrets))
    package = BaseRedactor(env=(), extra_values=tuple(secrets))
    raw = data.draw(texts(secrets))

    assert cassette._clean(raw) == package._clean(raw)


def test_a_body_with_a_secret_hidden_by_an_escape_is_redacted():
    redactor = Redactor(env=(), extra_values=("sk-live-0123456789",))
    raw = b'{"k": "sk-live-0123456789\\u0020", "x": "sk\\u002dlive-0123456789"}'

    redacted = redactor.json(json.loads(raw), raw=raw)

    assert "sk-live-0123456789" not in json.dumps(redacted)
