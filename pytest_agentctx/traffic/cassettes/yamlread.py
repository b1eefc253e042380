"""YAML documents read as PyYAML's safe loader reads them, in half its time.

``yaml.load(text, Loader=yaml.CSafeLoader)`` parses with libyaml, in C, but builds the
document in Python: a node object per value, the resolver's regular expressions for each
plain scalar, and a constructor that walks the nodes with generators. :func:`load` takes
libyaml's events (the C parser's, ``yaml._yaml.CParser``) and builds the values straight
from them, in one loop, with the safe loader's own tables: its implicit resolvers decide
the tag of a plain scalar, and its constructors make every value that is not a string, a
mapping or a list (integers, floats, booleans, nulls, timestamps, ``!!binary``).

It gives the same Python objects as the safe loader, or it gives way to it: a document
with what the loop does not handle (anchors and aliases, merge keys, tags other than the
scalar ones above, a mapping or list as a key, several documents, string, mapping or list
constructors other than PyYAML's, path resolvers) is read again by ``yaml.load`` with the safe
loader, as is one on which the loop meets any error, so that its answer, or its error, is
the safe loader's. Without libyaml, the pure-Python safe loader reads everything.

Both stay within the limits of :mod:`pytest_agentctx._untrusted`: the loop counts the
nesting of lists and mappings, and a document given way is first walked by its events
(:func:`check_bounds`), counting its nesting and the values its aliases repeat, so that a
"billion laughs" document (a kilobyte whose aliases repeat a billion values) or one nested
deep enough to exhaust the C stack is refused (:class:`~pytest_agentctx._untrusted.LimitExceeded`)
before the safe loader builds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import orjson
import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import ScalarNode

from pytest_agentctx._untrusted import LimitExceeded, current_limits

_STR = "tag:yaml.org,2002:str"
#: The scalar tags whose constructors the loop calls (those of the safe loader).
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("null", "bool", "int", "float", "timestamp", "binary", "str")
)
#: The constructors the loop stands in for (a string is its text, a mapping a dict, a
#: sequence a list): it runs only while the loader's table holds these, PyYAML's own.
_BUILT_IN = {
    _STR: SafeConstructor.construct_yaml_str,
    "tag:yaml.org,2002:map": SafeConstructor.construct_yaml_map,
    "tag:yaml.org,2002:seq": SafeConstructor.construct_yaml_seq,
}


class _GiveWay(Exception):
    """The document holds something the loop leaves to the safe loader."""


def safe_load(text: str) -> object:
    """``yaml.load(text)`` with the safe loader: libyaml's when PyYAML has it."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load(text: str, where: str = "YAML document") -> object:
    """The document in ``text``, as :func:`safe_load` gives it (see the module), or
    :class:`~pytest_agentctx._untrusted.LimitExceeded` naming ``where`` (its file)."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None or not _stock(loader):
        check_bounds(text, where)
        return safe_load(text)
    if text.startswith("{"):
        found = json_document(text)
        if found is not None:
            return found
    try:
        return _Builder(loader, where).document(yaml._yaml.CParser(text).get_event)
    except LimitExceeded:
        raise
    except Exception:
        check_bounds(text, where)
        return safe_load(text)


# -- documents written in JSON, YAML's subset ---------------------------------------


def dump_json(value: object) -> str | None:
    """``value`` as one line of JSON that PyYAML's safe loader reads as ``value`` (and
    :func:`json_document` reads at JSON's speed), or ``None`` when JSON cannot say it so:
    bytes, dates, ``NaN`` and the infinities, an integer past 64 bits, a character a YAML
    file cannot hold as it is, nesting past the ``depth`` limit. A float is written as
    orjson writes it, with a point before its exponent when it has none (``1.0e-7``, not
    ``1e-7``, which YAML 1.1 reads as a string)."""
    try:
        text = _json_text(value)
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    return text if text is not None and _yaml_keeps(text) else None


#: orjson writing the JSON types, and the containers it writes as arrays, only: a
#: subclass, a date or a dataclass is refused, not converted.
_ORJSON_PLAIN = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
#: Characters a YAML file cannot hold as they are (libyaml refuses them), and line breaks
#: other than ``\n`` (which YAML would fold inside a string). orjson escapes those below
#: ``\x20`` and never writes a lone surrogate, so these are the ones its text can hold.
#: (Looked for one by one: ``in`` is many times faster than a character class.)
_NOT_IN_YAML = "".join(map(chr, range(0x7F, 0xA0))) + "\u2028\u2029\ufeff\ufffe\uffff"


def _json_text(value: object) -> str | None:
    """The one text :func:`dump_json` writes for ``value`` (the types orjson writes as
    JSON only, :data:`_ORJSON_PLAIN`; else :class:`TypeError`), before its characters are
    checked: ``None`` when it nests past the ``depth`` limit or holds a float JSON has no
    number for (orjson would write ``NaN`` as ``null``)."""
    kept = _floats_kept(value, current_limits().depth)
    if kept is None:
        return None
    if not kept:  # a float orjson writes with no point before its exponent
        value = _with_points(value)
    return orjson.dumps(value, option=_ORJSON_PLAIN).decode() + "\n"


def _yaml_keeps(text: str) -> bool:
    """Whether YAML reads every character of ``text`` as JSON does: none YAML refuses or
    folds. In JSON's subset, strings are double-quoted scalars with JSON's escapes, and
    ``true``, ``false``, ``null``, integers and the floats :func:`_json_text` writes are
    YAML 1.1's too."""
    if text.isascii():
        return "\x7f" not in text
    return not any(char in text for char in _NOT_IN_YAML)


def _float_kept(value: float) -> bool | None:
    """Whether YAML 1.1 reads orjson's text of ``value`` as that float: it does when the
    text has no exponent, or a point before a signed exponent (YAML 1.1's float needs
    both); ``False`` for an exponent with no point (``1e-7``) or no sign (``1e20``, as
    older orjson releases write it), which :func:`_pointed` writes as YAML reads it;
    ``None`` for ``NaN`` and the infinities, which JSON has no number for."""
    if value - value != 0.0:  # NaN or an infinity
        return None
    mantissa, _, exponent = orjson.dumps(value).partition(b"e")
    return not exponent or (b"." in mantissa and exponent[:1] in (b"+", b"-"))


def _pointed(value: float) -> orjson.Fragment:
    """``value`` as orjson writes it, with ``.0`` after a mantissa with no point and ``+``
    before an exponent with no sign: a number JSON and YAML 1.1 both read as ``value``
    (``1e-7`` as ``1.0e-7``, ``1e20`` as ``1.0e+20``)."""
    mantissa, _, exponent = orjson.dumps(value).partition(b"e")
    if b"." not in mantissa:
        mantissa += b".0"
    if exponent[:1] not in (b"+", b"-"):
        exponent = b"+" + exponent
    return orjson.Fragment(mantissa + b"e" + exponent)


def _floats_kept(value: object, depth: int) -> bool | None:
    """``None`` when ``value``'s lists and mappings nest deeper than ``depth`` or it holds
    ``NaN`` or an infinity; else whether orjson writes each of its floats as YAML 1.1
    reads it (:func:`_float_kept`). Walks the containers of the value (a cassette's are
    few: its bodies are strings), not its text; ``value`` holds the types orjson reads and
    writes as JSON only (:data:`_ORJSON_PLAIN`)."""
    if type(value) not in _CONTAINERS:
        return _float_kept(value) if type(value) is float else True
    kept = True
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if level > depth:
            return None
        for item in node.values() if type(node) is dict else node:  # type: ignore[attr-defined]
            kind = type(item)
            if kind in _CONTAINERS:
                if item:
                    stack.append((item, level + 1))
                elif level + 1 > depth:
                    return None
            elif kind is float:
                one = _float_kept(item)
                if one is None:
                    return None
                kept = kept and one
    return kept


def _with_points(value: object) -> object:
    """``value`` with each float orjson would write with no point before its exponent
    put as :func:`_pointed` writes it (nesting within the limit: it has been walked)."""
    kind = type(value)
    if kind is dict:
        return {key: _with_points(item) for key, item in value.items()}  # type: ignore[attr-defined]
    if kind in _CONTAINERS:
        return [_with_points(item) for item in value]  # type: ignore[attr-defined]
    if kind is float and not _float_kept(value):  # type: ignore[arg-type]
        return _pointed(value)  # type: ignore[arg-type]
    return value


#: The types orjson writes as JSON objects or arrays.
_CONTAINERS = frozenset({dict, list, tuple})


def json_document(text: str) -> object | None:
    """The document in ``text`` when it is what :func:`dump_json` writes (so the safe
    loader reads the same), read with orjson; else ``None``."""
    try:
        value = orjson.loads(text)
        again = _json_text(value)
    except (orjson.JSONDecodeError, TypeError):
        return None
    if again != text:
        return None
    return value if _yaml_keeps(text) else None


def _events(text: str) -> Iterator[Event]:
    parser = getattr(yaml, "_yaml", None)
    if parser is not None and hasattr(parser, "CParser"):
        next_event = parser.CParser(text).get_event
        while (event := next_event()) is not None:
            yield event
    else:
        yield from yaml.parse(text, Loader=yaml.SafeLoader)


def check_bounds(text: str, where: str) -> None:
    """:class:`~pytest_agentctx._untrusted.LimitExceeded` when the YAML ``text`` nests
    lists and mappings deeper than the ``depth`` limit, or when its aliases repeat more
    values than ``alias_nodes`` (each alias counts every value of the node it names,
    aliases within included). Reads its events only (libyaml's, when PyYAML has it):
    nothing is built. A parse error is left for the loader to report."""
    limits = current_limits()
    # values of each anchored node; the count and the open containers' anchors and counts
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []
    count = repeated = 0
    try:
        for event in _events(text):
            if isinstance(event, AliasEvent):
                size = sizes.get(event.anchor or "", 1)
                count += size
                repeated += size
                if repeated > limits.alias_nodes:
                    what = f"YAML aliases repeating at least {repeated} values"
                    raise LimitExceeded(where, what, "alias_nodes")
            elif isinstance(event, CollectionStartEvent):
                open_nodes.append((event.anchor, count))
                count += 1
                if len(open_nodes) > limits.depth:
                    raise LimitExceeded(
                        where, f"lists or mappings nested {len(open_nodes)} deep", "depth"
                    )
            elif isinstance(event, CollectionEndEvent):
                anchor, start = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = count - start
            elif isinstance(event, NodeEvent):  # a scalar
                count += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
    except yaml.YAMLError:
        return


def _stock(loader: type) -> bool:
    """Whether the loop may stand in for ``loader``: its string, mapping and sequence
    constructors are PyYAML's and it has no path resolvers. (Its implicit resolvers and
    other constructors, the loop uses as they are.)"""
    constructors = loader.yaml_constructors  # type: ignore[attr-defined]
    return all(constructors.get(tag) is built_in for tag, built_in in _BUILT_IN.items()) and (
        not loader.yaml_path_resolvers  # type: ignore[attr-defined]
    )


class _Builder:
    """Values from libyaml's events; raises :class:`_GiveWay` for what it leaves."""

    def __init__(self, loader: type, where: str) -> None:
        self.where = where
        self.depth = current_limits().depth
        self.resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = (
            loader.yaml_implicit_resolvers  # type: ignore[attr-defined]
        )
        self.wildcard: list[tuple[str, re.Pattern[str]]] = self.resolvers.get(None, [])
        self.firsts = frozenset(key for key in self.resolvers if key)
        self.constructors: dict[str | None, Callable[[SafeConstructor, ScalarNode], object]] = (
            loader.yaml_constructors  # type: ignore[attr-defined]
        )
        self.constructor = SafeConstructor()

    def resolve(self, value: str) -> str:
        """The tag of a plain scalar (the resolver's rule for one)."""
        if value and value[0] not in self.firsts and not self.wildcard:
            return _STR
        resolvers = self.resolvers.get(value[0] if value else "", [])
        for tag, regexp in resolvers + self.wildcard:
            if regexp.match(value):
                return tag
        return _STR

    def scalar(self, event: ScalarEvent) -> object:
        if event.anchor is not None:
            raise _GiveWay("anchor")
        tag, value = event.tag, event.value
        if tag is None or tag == "!":
            if not event.implicit[0]:
                return value
            tag = self.resolve(value)
        if tag == _STR:
            return value
        if tag not in _SCALAR_TAGS:
            raise _GiveWay(tag)  # a merge or value key, another tag, or an unknown one
        return self.constructors[tag](self.constructor, ScalarNode(tag, value))

    def document(self, next_event: Callable[[], Event | None]) -> object:
        if next_event().__class__ is not StreamStartEvent:
            raise _GiveWay("stream")
        event = next_event()
        if event.__class__ is StreamEndEvent:
            return None
        if event.__class__ is not DocumentStartEvent:
            raise _GiveWay("document")
        value = self.node(next_event)
        if next_event().__class__ is not DocumentEndEvent:
            raise _GiveWay("document end")
        if next_event().__class__ is not StreamEndEvent:
            raise _GiveWay("more than one document")
        return value

    def node(self, next_event: Callable[[], Event | None]) -> object:
        """The value whose events come next: a scalar, or a mapping or list to its end."""
        # The innermost open container (a mapping or a list, the other None) and its key
        # waiting for a value (``_NO_KEY`` while the next value is a key); the outer ones on
        # the stack.
        mapping: dict[object, object] | None = None
        sequence: list[object] | None = None
        key: object = _NO_KEY
        stack: list[tuple[dict[object, object] | None, list[object] | None, object]] = []
        firsts, wildcard, scalar = self.firsts, self.wildcard, self.scalar
        while True:
            event = next_event()
            value: object
            if isinstance(event, ScalarEvent):
                text = event.value
                # A quoted string, or a plain one no resolver could claim, as it is.
                if (
                    event.tag is None
                    and event.anchor is None
                    and (not event.implicit[0] or (text and text[0] not in firsts and not wildcard))
                ):
                    value = text
                else:
                    value = scalar(event)
                if mapping is not None and key is _NO_KEY:
                    key = value
                    continue
            elif isinstance(event, CollectionStartEvent):  # a mapping's or a list's
                if (
                    event.anchor is not None
                    or event.tag not in (None, "!")
                    or (mapping is not None and key is _NO_KEY)
                ):
                    raise _GiveWay("an anchor, a tag, or a mapping or list as a key")
                stack.append((mapping, sequence, key))
                if len(stack) > self.depth:
                    raise LimitExceeded(
                        self.where, f"lists or mappings nested {len(stack)} deep", "depth"
                    )
                if event.__class__ is MappingStartEvent:
                    mapping, sequence = {}, None
                else:
                    mapping, sequence = None, []
                key = _NO_KEY
                continue
            elif isinstance(event, CollectionEndEvent):
                value = mapping if mapping is not None else sequence
                mapping, sequence, key = stack.pop()
            else:
                raise _GiveWay(type(event).__name__)  # an alias
            if mapping is not None:
                mapping[key] = value
                key = _NO_KEY
            elif sequence is not None:
                sequence.append(value)
            else:
                return value


_NO_KEY = object()
