"""Retrieval: the :class:`VectorSearch` protocol and a deterministic in-memory store.

A retrieval context source (:class:`~pytest_agentctx.runtime.assembly.FromRetrieval`) asks a store
for the documents of a collection nearest to a query. Real stores (pgvector, Qdrant,
Chroma...) are wrapped in a small class with one ``search`` method; tests use
:class:`InMemoryVectorStore` (the ``fake_vector_store`` fixture), whose scores are
computed by code, so the same documents and query give the same results on every run::

    store = InMemoryVectorStore()
    store.add("kb", [Document("refunds", "Refunds take five days."),
                     Document("shipping", "Shipping takes two days.")])
    results = await store.search("kb", "how long do refunds take", top_k=1)
    assert [r.source_id for r in results] == ["refunds"]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from pytest_agentctx.runtime.errors import VectorStoreError

#: Scores are rounded to this many decimals, so equal scores tie exactly on every platform.
SCORE_DIGITS = 6
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Document:
    """One searchable text: its ``id`` (the source id results report), text and metadata.

    ``metadata`` holds what filters select on (``{"lang": "en", "product": "pro"}``); it
    is copied and read-only.
    """

    id: str
    text: str
    metadata: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise VectorStoreError(
                f"Document(id={self.id!r}): expected a non-empty string id, which results "
                "report as their source id. Give each document a stable id such as 'faq-1'."
            )
        if not isinstance(self.text, str):
            raise VectorStoreError(
                f"Document {self.id!r}: text is {type(self.text).__name__} {self.text!r}; "
                "expected a string."
            )
        if not isinstance(self.metadata, Mapping):
            raise VectorStoreError(
                f"Document {self.id!r}: metadata is {type(self.metadata).__name__}; expected "
                "a mapping such as {'lang': 'en'}."
            )
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __hash__(self) -> int:
        # metadata is a read-only mapping, which has no hash: documents that are equal
        # have the same id and text, so these two are enough.
        return hash((self.id, self.text))


@dataclass(frozen=True)
class SearchResult:
    """A document found by a search, with its relevance ``score`` from 0 to 1."""

    document: Document
    score: float

    def __post_init__(self) -> None:
        if isinstance(self.score, bool) or not 0.0 <= self.score <= 1.0:
            raise VectorStoreError(
                f"SearchResult for {self.document.id!r}: score={self.score!r}; expected a "
                "number from 0 to 1. A VectorSearch implementation must normalise its scores "
                "(for a cosine distance d: 1 - d / 2)."
            )

    @property
    def source_id(self) -> str:
        """The id of the document this result comes from."""
        return self.document.id


@runtime_checkable
class VectorSearch(Protocol):
    """What context assembly asks of a vector store: the documents nearest a query.

    An implementation returns at most ``top_k`` results of ``collection`` with a score of
    at least ``min_relevance``, best first, keeping only documents whose metadata matches
    ``filters``; it raises an error naming the known collections for an unknown one.
    """

    async def search(
        self,
        collection: str,
        query: str,
        *,
        top_k: int,
        min_relevance: float = 0.0,
        filters: Mapping[str, object] | None = None,
    ) -> list[SearchResult]:
        """The best ``top_k`` documents of ``collection`` for ``query``."""
        ...


@dataclass(frozen=True)
class SearchCall:
    """One search a store answered: what a test can assert the agent looked for."""

    collection: str
    query: str
    top_k: int
    min_relevance: float
    filters: Mapping[str, object] | None
    results: tuple[SearchResult, ...]

    @property
    def source_ids(self) -> list[str]:
        """The ids of the documents found, best first."""
        return [r.source_id for r in self.results]


def tokenize(text: str) -> list[str]:
    """The lower-cased word tokens of ``text`` (letters, digits and ``_``, any script)."""
    return _TOKEN.findall(text.casefold())


def check_search_limits(top_k: object, min_relevance: object, *, where: str) -> None:
    """Raise :class:`VectorStoreError` unless ``top_k >= 1`` and ``0 <= min_relevance <= 1``."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise VectorStoreError(
            f"{where}: top_k={top_k!r}; expected a whole number of at least 1 "
            "(how many documents to return at most)."
        )
    if (
        isinstance(min_relevance, bool)
        or not isinstance(min_relevance, int | float)
        or not 0.0 <= min_relevance <= 1.0
    ):
        raise VectorStoreError(
            f"{where}: min_relevance={min_relevance!r}; expected a number from 0 to 1 "
            "(0 keeps every document, 1 only exact matches)."
        )


def _vector(text: str) -> tuple[Counter[str], float]:
    counts = Counter(tokenize(text))
    return counts, math.sqrt(sum(n * n for n in counts.values()))


def _cosine(query: tuple[Counter[str], float], document: tuple[Counter[str], float]) -> float:
    (q, q_norm), (d, d_norm) = query, document
    if not q_norm or not d_norm:
        return 0.0
    dot = sum(n * d[token] for token, n in q.items())
    return min(1.0, round(dot / (q_norm * d_norm), SCORE_DIGITS))


def _matches(filters: Mapping[str, object], metadata: Mapping[str, object]) -> bool:
    # The filter's value on the left, so patterns (AnyOf, Regex, dirty-equals) decide.
    return all(key in metadata and value == metadata[key] for key, value in filters.items())


class InMemoryVectorStore:
    """A :class:`VectorSearch` over documents held in memory, with deterministic scores.

    The score of a document is the cosine similarity of the word counts of the query and
    of the document's text (lower-cased word tokens, see :func:`tokenize`), rounded to
    six decimals: 1 for the same words in the same proportions, 0 for no word in common.
    Results are sorted by score, best first, and equal scores by document id.

    ``filters`` keep the documents whose metadata has every key of the filter with an
    equal value. The value may also be a pattern of this package (``AnyOf("en", "fr")``,
    ``Regex(...)``, ``ANY``) or any object with an ``__eq__``, such as a dirty-equals type:
    it is compared as ``filter_value == metadata_value``. A document without the key never
    matches.

    Every search is recorded in :attr:`searches`, in the order it was made.
    """

    def __init__(self, collections: Mapping[str, Iterable[Document]] | None = None) -> None:
        self._collections: dict[str, dict[str, Document]] = {}
        self._vectors: dict[tuple[str, str], tuple[Counter[str], float]] = {}
        #: Every search answered, in order.
        self.searches: list[SearchCall] = []
        for name, documents in (collections or {}).items():
            self.add(name, documents)

    def add(self, collection: str, documents: Iterable[Document]) -> InMemoryVectorStore:
        """Add ``documents`` to ``collection`` (created if new); returns the store.

        A document id may appear once per collection; adding it again is an error
        (call :meth:`remove` first to replace a document).
        """
        if not isinstance(collection, str) or not collection:
            raise VectorStoreError(
                f"add(collection={collection!r}): expected a non-empty collection name."
            )
        if isinstance(documents, Document):
            documents = [documents]
        batch = list(documents)
        for document in batch:
            if not isinstance(document, Document):
                raise VectorStoreError(
                    f"add({collection!r}, ...) got {type(document).__name__} {document!r}; "
                    "expected Document objects, e.g. Document('faq-1', 'Refunds take 5 days.')."
                )
        existing = self._collections.setdefault(collection, {})
        seen: set[str] = set()
        for document in batch:
            if document.id in existing or document.id in seen:
                raise VectorStoreError(
                    f"Collection {collection!r} already holds a document {document.id!r}; "
                    "every id must be unique in its collection. Call "
                    f"remove({collection!r}, {document.id!r}) first to replace it."
                )
            seen.add(document.id)
        for document in batch:
            existing[document.id] = document
            self._vectors[collection, document.id] = _vector(document.text)
        return self

    def remove(self, collection: str, document_id: str) -> None:
        """Remove one document from ``collection``."""
        documents = self._collection(collection)
        if document_id not in documents:
            raise VectorStoreError(
                f"Collection {collection!r} has no document {document_id!r}; its ids: "
                f"{', '.join(sorted(documents)) or 'none'}."
            )
        del documents[document_id]
        del self._vectors[collection, document_id]

    @property
    def collections(self) -> list[str]:
        """The names of the collections, sorted."""
        return sorted(self._collections)

    def documents(self, collection: str) -> list[Document]:
        """The documents of ``collection``, sorted by id."""
        documents = self._collection(collection)
        return [documents[key] for key in sorted(documents)]

    def _collection(self, collection: str) -> dict[str, Document]:
        try:
            return self._collections[collection]
        except (KeyError, TypeError):
            known = ", ".join(repr(name) for name in self.collections) or "none yet"
            raise VectorStoreError(
                f"Unknown collection {collection!r}; the store holds: {known}. Seed it first "
                f"with store.add({collection!r}, [Document(...)]), or fix the name."
            ) from None

    async def search(
        self,
        collection: str,
        query: str,
        *,
        top_k: int,
        min_relevance: float = 0.0,
        filters: Mapping[str, object] | None = None,
    ) -> list[SearchResult]:
        """The best ``top_k`` documents of ``collection`` for ``query`` (see the class)."""
        where = f"search({collection!r}, {query!r})"
        check_search_limits(top_k, min_relevance, where=where)
        if not isinstance(query, str):
            raise VectorStoreError(
                f"search({collection!r}, ...): query is {type(query).__name__} {query!r}; "
                "expected a string."
            )
        if filters is not None and not isinstance(filters, Mapping):
            raise VectorStoreError(
                f"{where}: filters={filters!r}; expected a mapping of metadata keys to "
                "values, such as {'lang': 'en'}."
            )
        documents = self._collection(collection)
        query_vector = _vector(query)
        scored = [
            SearchResult(document, _cosine(query_vector, self._vectors[collection, key]))
            for key, document in documents.items()
            if not filters or _matches(filters, document.metadata)
        ]
        scored.sort(key=lambda r: (-r.score, r.source_id))
        results = [r for r in scored if r.score >= min_relevance][:top_k]
        self.searches.append(
            SearchCall(
                collection=collection,
                query=query,
                top_k=top_k,
                min_relevance=float(min_relevance),
                filters=MappingProxyType(dict(filters)) if filters else None,
                results=tuple(results),
            )
        )
        return results

    def __repr__(self) -> str:
        sizes = ", ".join(f"{name}: {len(self._collections[name])}" for name in self.collections)
        return f"InMemoryVectorStore({{{sizes}}})"
