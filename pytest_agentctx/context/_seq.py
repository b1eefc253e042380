"""An immutable sequence whose appends share storage with the sequence they came from.

The context is immutable: every update returns a new context. If every update copied the
list of iterations, building a run of ``n`` iterations would cost ``O(n**2)``. ``Seq``
avoids that with two tricks:

* Views over a shared, append-only backing list. A ``Seq`` sees the first ``_size`` items
  of ``_items``. Appending to the newest view (the one that sees the whole backing list)
  appends in place and returns a longer view: the older views still see only their own
  prefix, so nothing they can observe changes. Appending to an older view copies.
* A separate last item. The context replaces its last iteration on every update
  (a message added, the iteration completed); ``with_last`` swaps the tail in ``O(1)``
  without touching the shared list.

Together, the linear life of a context (append, replace the last, append...) costs
amortised ``O(1)`` per update, and branching from an old context stays correct.

``Seq`` compares equal to any list or tuple with the same items, so ``it.tool_calls == []``
holds, and it is a :class:`collections.abc.Sequence`, so ``match`` sequence patterns work.
Pydantic validates it from any sequence and serialises it as a JSON array.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Generic, NoReturn, TypeVar, cast, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

T = TypeVar("T")

_NO_TAIL: Any = object()
_APPEND_LOCK = threading.Lock()


class Seq(Sequence[T], Generic[T]):
    """An immutable sequence; ``append`` and ``with_last`` return new sequences."""

    __slots__ = ("_items", "_size", "_tail")

    _items: list[T]
    _size: int
    _tail: T

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items = list(items)
        self._size = len(self._items)
        self._tail = _NO_TAIL

    @classmethod
    def _view(cls, items: list[T], size: int, tail: T) -> Seq[T]:
        new = cls.__new__(cls)
        new._items = items
        new._size = size
        new._tail = tail
        return new

    # -- the two updates -------------------------------------------------------------

    def append(self, item: T) -> Seq[T]:
        """Return a new sequence with ``item`` added at the end."""
        if self._tail is _NO_TAIL:
            return self._view(self._items, self._size, item)
        with _APPEND_LOCK:
            if len(self._items) == self._size:
                self._items.append(self._tail)
                items = self._items
            else:
                items = self._items[: self._size]
                items.append(self._tail)
        return self._view(items, self._size + 1, item)

    def with_last(self, item: T) -> Seq[T]:
        """Return a new sequence whose last item is ``item`` instead of the current one."""
        if self._tail is not _NO_TAIL:
            return self._view(self._items, self._size, item)
        if self._size == 0:
            raise IndexError("with_last() on an empty sequence: there is no last item to replace")
        return self._view(self._items, self._size - 1, item)

    # -- Sequence protocol -----------------------------------------------------------

    def __len__(self) -> int:
        return self._size + (self._tail is not _NO_TAIL)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self)[index]
        length = len(self)
        position = index + length if index < 0 else index
        if not 0 <= position < length:
            raise IndexError(f"index {index} out of range for a sequence of {length} items")
        index = position
        if index < self._size:
            return self._items[index]
        return self._tail

    def to_list(self) -> list[T]:
        """The items as a new list (one C-level copy: faster than ``list(seq)``)."""
        items = self._items[: self._size]
        if self._tail is not _NO_TAIL:
            items.append(self._tail)
        return items

    def __iter__(self) -> Iterator[T]:
        yield from islice(self._items, self._size)
        if self._tail is not _NO_TAIL:
            yield self._tail

    def __reversed__(self) -> Iterator[T]:
        if self._tail is not _NO_TAIL:
            yield self._tail
        for index in range(self._size - 1, -1, -1):
            yield self._items[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, bytes)) or not isinstance(other, Sequence):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Iterable[T]) -> list[T]:
        return [*self, *other]

    def __radd__(self, other: Iterable[T]) -> list[T]:
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    def __copy__(self) -> Seq[T]:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Seq[T]:
        import copy

        return Seq(copy.deepcopy(list(self), memo))

    def __reduce__(self) -> tuple[object, ...]:
        return (Seq, (list(self),))

    # -- pydantic --------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        args = getattr(source, "__args__", None)
        item_type: Any = args[0] if args else Any
        list_schema = handler.generate_schema(list[item_type])

        def to_seq(value: list[object]) -> Seq[object]:
            return Seq(value)

        return core_schema.no_info_after_validator_function(
            to_seq,
            list_schema,
            serialization=core_schema.plain_serializer_function_ser_schema(
                cast(Any, list), return_schema=list_schema
            ),
        )


def seq(items: Iterable[T] = ()) -> Seq[T]:
    """Build a :class:`Seq` from any iterable."""
    return Seq(items)


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes: the metadata of an immutable iteration.

    It is a real ``dict`` (equal to plain dicts, JSON-serialisable, matched by mapping
    patterns); nested dicts are frozen too. Build a changed copy with ``{**d, key: value}``.
    """

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            "Iteration metadata is immutable, like the rest of the context. Build a new "
            "context with context.with_iteration_metadata({...}) instead."
        )

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> FrozenDict:
        import copy

        return FrozenDict(copy.deepcopy(dict(self), memo))

    def __reduce__(self) -> tuple[object, ...]:
        return (FrozenDict, (dict(self),))

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenDict:
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        source = dict(*args, **kwargs)
        dict.update(self, {k: freeze(v) for k, v in source.items()})

    def __repr__(self) -> str:
        return repr(dict(self))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        dict_schema = handler.generate_schema(dict[str, Any])
        return core_schema.no_info_after_validator_function(
            lambda value: value if isinstance(value, FrozenDict) else FrozenDict(value),
            dict_schema,
            serialization=core_schema.plain_serializer_function_ser_schema(
                cast(Any, dict), return_schema=dict_schema
            ),
        )


def freeze(value: object) -> object:
    """Nested dicts become :class:`FrozenDict`; everything else is returned as it is."""
    if isinstance(value, dict) and not isinstance(value, FrozenDict):
        return FrozenDict(value)
    return value
