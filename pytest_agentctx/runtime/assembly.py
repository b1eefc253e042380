"""Context assembly: the sources an agent reads before each model call, made into one message.

An agent (or one step) declares where its context comes from::

    sources = validate_sources(
        [
            FromState("customer.plan", label="Plan"),
            FromRetrieval("kb", query_from="question", top_k=2, min_relevance=0.1),
            Text("Answer in two sentences.", label="Style"),
        ],
        state_type=Ticket,
    )

* :class:`FromState` reads an attribute path (``"customer.plan"``) on the caller's state
  object (attributes, or keys of mappings);
* :class:`FromRetrieval` searches a collection of a :class:`~.retrieval.VectorSearch`
  store, with a literal ``query`` or one read from the state (``query_from``);
* :class:`Text` is literal text.

:func:`validate_sources` checks them when the agent is defined: path syntax always, and each
path against the state type's annotations when one is given (dataclasses, pydantic models,
TypedDicts, annotated classes; recursively). Mistakes raise
:class:`~pytest_agentctx.ContextAssemblyError` then, not in the middle of a run.

Before a model call, :func:`assemble` reads the sources in order and returns an
:class:`AssembledContext`: its :attr:`~AssembledContext.text` is the content of the one
context message (a ``## label`` heading per segment) and its
:meth:`~AssembledContext.metadata` the JSON record of each segment and each retrieval result
(collection, source id, score, rank) that the iteration's metadata keeps.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, Union, get_args, get_origin, get_type_hints

from pytest_agentctx.runtime.errors import ContextAssemblyError, ContextAssemblyFailed
from pytest_agentctx.runtime.retrieval import SearchResult, VectorSearch
from pytest_agentctx.runtime.tools import render_tool_output


def _check_path(path: object, where: str, what: str = "path") -> None:
    if not isinstance(path, str) or not all(part.isidentifier() for part in path.split(".")):
        raise ContextAssemblyError(
            f"{where}: {what}={path!r} is not an attribute path; expected names joined by "
            "dots, such as 'customer.plan' (read as state.customer.plan)."
        )


def _check_label(label: object, where: str) -> None:
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ContextAssemblyError(
            f"{where}: label={label!r}; expected a non-empty string (the segment's heading) "
            "or None for the default."
        )


@dataclass(frozen=True)
class FromState:
    """A segment read from the caller's state: ``path`` is an attribute path such as
    ``"customer.plan"``; the segment's heading is ``label`` (default: the path)."""

    path: str
    label: str | None = None

    def __post_init__(self) -> None:
        _check_path(self.path, f"FromState({self.path!r})")
        _check_label(self.label, f"FromState({self.path!r})")

    @property
    def heading(self) -> str:
        """The segment's heading in the context message."""
        return self.label or self.path


@dataclass(frozen=True)
class FromRetrieval:
    """A segment of the documents of ``collection`` nearest to a query.

    Give exactly one of ``query`` (literal text) and ``query_from`` (an attribute path on
    the state, read at each model call). At most ``top_k`` documents with a score of at
    least ``min_relevance`` (0 to 1) whose metadata matches ``filters`` are kept. The
    heading is ``label`` (default: the collection's name).
    """

    collection: str
    query: str | None = None
    query_from: str | None = None
    top_k: int = 3
    min_relevance: float = 0.0
    filters: Mapping[str, object] | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        where = f"FromRetrieval({self.collection!r})"
        if not isinstance(self.collection, str) or not self.collection:
            raise ContextAssemblyError(
                f"FromRetrieval(collection={self.collection!r}): expected the non-empty name "
                "of a collection of the vector store."
            )
        if (self.query is None) == (self.query_from is None):
            given = "both" if self.query is not None else "neither"
            raise ContextAssemblyError(
                f"{where} was given {given} of query= and query_from=; give exactly one: "
                "query='literal text' or query_from='state.path'."
            )
        if self.query is not None and not isinstance(self.query, str):
            raise ContextAssemblyError(
                f"{where}: query={self.query!r}; expected text, or query_from='path' to "
                "read it from the state."
            )
        if self.query_from is not None:
            _check_path(self.query_from, where, "query_from")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ContextAssemblyError(
                f"{where}: top_k={self.top_k!r}; expected a whole number of at least 1 "
                "(the most documents to put in the context)."
            )
        if (
            isinstance(self.min_relevance, bool)
            or not isinstance(self.min_relevance, int | float)
            or not 0.0 <= self.min_relevance <= 1.0
        ):
            raise ContextAssemblyError(
                f"{where}: min_relevance={self.min_relevance!r}; expected a number from 0 to "
                "1 (0 keeps every document, 1 only perfect matches)."
            )
        if self.filters is not None:
            if not isinstance(self.filters, Mapping) or not all(
                isinstance(key, str) for key in self.filters
            ):
                raise ContextAssemblyError(
                    f"{where}: filters={self.filters!r}; expected a mapping of metadata keys "
                    "to values, such as {'lang': 'en'}."
                )
            object.__setattr__(self, "filters", MappingProxyType(dict(self.filters)))
        _check_label(self.label, where)

    def __hash__(self) -> int:
        # filters are a read-only mapping, which has no hash (and their values may be
        # patterns): equal sources have the same filter keys, so these are enough.
        keys = tuple(sorted(self.filters)) if self.filters is not None else None
        fields = (self.query, self.query_from, self.top_k, self.min_relevance, self.label)
        return hash((self.collection, *fields, keys))

    @property
    def heading(self) -> str:
        """The segment's heading in the context message."""
        return self.label or self.collection


@dataclass(frozen=True)
class Text:
    """A segment of literal text, under the heading ``label`` (default: ``"Notes"``)."""

    text: str
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise ContextAssemblyError(
                f"Text({self.text!r}): expected a string; use FromState('path') to read a "
                "value from the state."
            )
        _check_label(self.label, "Text(...)")

    @property
    def heading(self) -> str:
        """The segment's heading in the context message."""
        return self.label or "Notes"


#: A context source: :class:`FromState`, :class:`FromRetrieval` or :class:`Text`.
ContextSource: TypeAlias = FromState | FromRetrieval | Text
_SOURCE_TYPES = (FromState, FromRetrieval, Text)


def validate_sources(
    sources: Iterable[ContextSource], state_type: type | None = None
) -> tuple[ContextSource, ...]:
    """Check context sources when an agent is defined; returns them as a tuple.

    Raises :class:`ContextAssemblyError` for anything that is not a source and, when
    ``state_type`` is given, for a path (``FromState.path``, ``FromRetrieval.query_from``)
    that the type does not have. Paths are checked through the annotations of dataclasses,
    pydantic models, TypedDicts and annotated classes, down through nested types; below a
    type without annotations (``dict``, ``Any``, a union) a path is not checked further.
    """
    if isinstance(sources, (str, bytes, *_SOURCE_TYPES)) or not isinstance(sources, Iterable):
        raise ContextAssemblyError(
            f"Context sources must be a list, got {type(sources).__name__}: {sources!r}. "
            "Write context=[FromState('...'), FromRetrieval('...'), Text('...')]."
        )
    checked: list[ContextSource] = []
    for index, source in enumerate(sources):
        if not isinstance(source, _SOURCE_TYPES):
            hint = " Wrap literal text in Text('...')." if isinstance(source, str) else ""
            raise ContextAssemblyError(
                f"Context source [{index}] is {type(source).__name__} {source!r}; expected "
                f"FromState, FromRetrieval or Text.{hint}"
            )
        if state_type is not None:
            if isinstance(source, FromState):
                _check_against_type(state_type, source.path, f"FromState({source.path!r})")
            elif isinstance(source, FromRetrieval) and source.query_from is not None:
                _check_against_type(
                    state_type,
                    source.query_from,
                    f"FromRetrieval({source.collection!r}, query_from={source.query_from!r})",
                )
        checked.append(source)
    return tuple(checked)


def _unwrap(annotation: object) -> type | None:
    """The class behind ``X | None``, ``Optional[X]`` and ``Annotated[X, ...]``; else None."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _unwrap(options[0]) if len(options) == 1 else None
    return annotation if isinstance(annotation, type) else None


def _fields_of(cls: type) -> dict[str, type | None] | None:
    """The annotated attributes of ``cls`` with their types (``None`` where unknown).

    ``None`` when ``cls`` declares no annotations (nothing can be checked below it).
    """
    if issubclass(cls, Mapping) and not typing.is_typeddict(cls):
        return None
    try:
        hints: dict[str, object] = get_type_hints(cls)
    except Exception:  # forward references that cannot be resolved: names only
        hints = {}
        for klass in reversed(cls.__mro__):
            hints.update(dict.fromkeys(getattr(klass, "__annotations__", {}), None))
    if not hints:
        return None
    return {name: _unwrap(hint) if hint is not None else None for name, hint in hints.items()}


def _attribute_type(cls: type, name: str) -> type | None:
    """The type of a non-annotated attribute of ``cls`` (a property's return type)."""
    attribute = inspect.getattr_static(cls, name, None)
    if isinstance(attribute, property) and attribute.fget is not None:
        try:
            return _unwrap(get_type_hints(attribute.fget).get("return"))
        except Exception:
            return None
    return None


def _check_against_type(state_type: type, path: str, where: str) -> None:
    current = _unwrap(state_type)
    walked = ["state"]
    for name in path.split("."):
        if current is None:
            return
        fields = _fields_of(current)
        if fields is None:
            return
        if name in fields:
            current = fields[name]
        elif hasattr(current, name):
            current = _attribute_type(current, name)
        else:
            known = ", ".join(sorted(n for n in fields if not n.startswith("_"))) or "none"
            raise ContextAssemblyError(
                f"{where}: {'.'.join(walked)} ({current.__name__}) has no attribute "
                f"{name!r}. Its attributes: {known}. Fix the path, or the state type."
            )
        walked.append(name)


@dataclass(frozen=True)
class Segment:
    """One part of the assembled context: its kind, heading and text.

    A retrieval segment also keeps its collection, query and results; a state segment its
    path.
    """

    kind: Literal["state", "retrieval", "text"]
    label: str
    text: str
    path: str | None = None
    collection: str | None = None
    query: str | None = None
    results: tuple[SearchResult, ...] = ()

    def render(self) -> str:
        """The segment as it appears in the context message."""
        return f"## {self.label}\n{self.text}"

    def metadata(self) -> dict[str, object]:
        """The JSON-ready record of the segment and its length in characters.

        State and text segments keep their text; a retrieval segment keeps its query and
        results (collection, source id, score, rank from 1), not the documents' texts,
        which the store holds.
        """
        data: dict[str, object] = {"kind": self.kind, "label": self.label}
        if self.kind == "state":
            data["path"] = self.path
        if self.kind != "retrieval":
            data["text"] = self.text
        else:
            data["collection"] = self.collection
            data["query"] = self.query
            data["results"] = [
                {
                    "collection": self.collection,
                    "source_id": result.source_id,
                    "score": result.score,
                    "rank": rank,
                }
                for rank, result in enumerate(self.results, start=1)
            ]
        data["chars"] = len(self.text)
        return data


@dataclass(frozen=True)
class AssembledContext:
    """The context read from the sources for one model call.

    :attr:`text` is the content of the context message; :meth:`metadata` is what the
    iteration's metadata records.
    """

    segments: tuple[Segment, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        """The segments, each under its ``## label`` heading, separated by blank lines."""
        return "\n\n".join(segment.render() for segment in self.segments)

    @property
    def source_ids(self) -> list[str]:
        """The ids of every document retrieved, in the order they appear in the text."""
        return [r.source_id for segment in self.segments for r in segment.results]

    def __bool__(self) -> bool:
        return bool(self.segments)

    def metadata(self) -> dict[str, object]:
        """JSON-ready: every segment (kind, label, length; the text of state and text
        segments) and every retrieval result (collection, source id, score, rank from 1)."""
        return {
            "segments": [segment.metadata() for segment in self.segments],
            "chars": len(self.text),
        }


_MISSING: Final = object()


def _known_names(value: object) -> str:
    if isinstance(value, Mapping):
        names = [str(key) for key in value]
    else:
        model_fields = getattr(type(value), "model_fields", None)
        if isinstance(model_fields, Mapping):
            names = [str(key) for key in model_fields]
        else:
            names = list(getattr(value, "__dict__", {}))
    shown = sorted(n for n in names if not n.startswith("_"))
    return ", ".join(shown) or "none"


def _read(state: object, path: str, where: str) -> object:
    value = state
    walked = ["state"]
    for name in path.split("."):
        if value is None:
            raise ContextAssemblyFailed(
                f"{where}: {'.'.join(walked)} is None, so {path!r} cannot be read. Give the "
                "run a state where it is set, or read a path that is always present."
            )
        if isinstance(value, Mapping):
            found = value.get(name, _MISSING)
        else:
            found = getattr(value, name, _MISSING)
        if found is _MISSING:
            raise ContextAssemblyFailed(
                f"{where}: {'.'.join(walked)} ({type(value).__name__}) has no attribute "
                f"{name!r}; it has: {_known_names(value)}. Give the run a state with it, or "
                "fix the path (validate_sources(..., state_type=...) catches this at "
                "definition time)."
            )
        value = found
        walked.append(name)
    return value


def _render_value(value: object) -> str:
    return render_tool_output(value)


async def assemble(
    sources: Iterable[ContextSource], *, state: object, store: VectorSearch | None
) -> AssembledContext:
    """Read ``sources`` in order for one model call.

    ``state`` is the caller's state object that :class:`FromState` paths and
    ``query_from`` are read on; ``store`` answers :class:`FromRetrieval` sources. Raises
    :class:`ContextAssemblyFailed` when the state lacks an attribute, a query read from the
    state is not text, or a retrieval source has no store; errors of the store itself
    (an unknown collection...) propagate unchanged.
    """
    segments: list[Segment] = []
    for source in validate_sources(sources):
        if isinstance(source, Text):
            segments.append(Segment("text", source.heading, source.text))
        elif isinstance(source, FromState):
            value = _read(state, source.path, f"FromState({source.path!r})")
            segments.append(
                Segment("state", source.heading, _render_value(value), path=source.path)
            )
        else:
            segments.append(await _retrieve(source, state, store))
    return AssembledContext(tuple(segments))


async def _retrieve(source: FromRetrieval, state: object, store: VectorSearch | None) -> Segment:
    where = f"FromRetrieval({source.collection!r})"
    if store is None or not isinstance(store, VectorSearch):
        raise ContextAssemblyFailed(
            f"{where} needs a vector store to search, but got {store!r}. Give the runtime "
            "one (AgentRuntime(vector_store=...); in tests the fake_vector_store fixture) or "
            "remove the retrieval source."
        )
    if source.query_from is None:
        query = source.query or ""
    else:
        found = _read(
            state,
            source.query_from,
            f"FromRetrieval({source.collection!r}, query_from={source.query_from!r})",
        )
        if not isinstance(found, str):
            raise ContextAssemblyFailed(
                f"{where}: the query read from state.{source.query_from} is "
                f"a {type(found).__name__}, not text. Point query_from at a "
                "string attribute."
            )
        query = found
    results = await store.search(
        source.collection,
        query,
        top_k=source.top_k,
        min_relevance=source.min_relevance,
        filters=source.filters,
    )
    results = list(results)[: source.top_k]
    if results:
        body = "\n\n".join(
            f"[{rank}] {result.source_id} (score {result.score:.3f})\n{result.document.text}"
            for rank, result in enumerate(results, start=1)
        )
    else:
        body = "(no documents found)"
    return Segment(
        "retrieval",
        source.heading,
        body,
        collection=source.collection,
        query=query,
        results=tuple(results),
    )
