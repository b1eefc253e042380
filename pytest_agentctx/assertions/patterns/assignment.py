"""The assignment of unordered collections: items paired with patterns one to one.

:func:`assign` pairs as many patterns as possible with an item each, given a test of one
item against one pattern (``Unordered`` and ``Contains`` pass the matcher, ``Trajectory``
its comparison of tool calls). A :class:`Keyer` indexes the patterns by a key every
matching item has (a tool call's name, a message's role), so that each item is tested
against few patterns: the usual cost is linear, and augmenting paths make the result a
maximum matching when the first pairing leaves patterns unmatched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

_WILD: Any = object()
_NO_KEY: Any = object()


class Keyer:
    """Keys that narrow down which patterns an item can match (an index, for speed).

    ``pattern_key(pattern)`` is a hashable value every matching item has, or ``WILD``;
    ``item_key(item)`` is that item's value, or ``NO_KEY``.
    """

    WILD: Any = _WILD
    NO_KEY: Any = _NO_KEY

    def pattern_key(self, pattern: Any) -> Any:
        """The key of the items that may match ``pattern`` (``WILD`` for any item)."""
        return _WILD

    def item_key(self, item: Any) -> Any:
        """The key of ``item``."""
        return _NO_KEY


def assign(
    items: Sequence[Any],
    patterns: Sequence[Any],
    test: Callable[[Any, Any], bool],
    *,
    keyer: Keyer | Callable[[Sequence[Any]], Keyer | None] | None = None,
) -> tuple[list[int | None], list[int | None]]:
    """Pair items with patterns one to one so that as many patterns as possible match.

    Returns ``(pattern_of_item, item_of_pattern)``. Items first try the patterns indexed
    under their key (then the unindexed ones) and take the first free one that matches;
    only when that leaves patterns unmatched are augmenting paths searched, so the usual
    cost is linear and the result is a maximum matching.
    """
    if keyer is not None and not isinstance(keyer, Keyer):
        keyer = keyer(patterns)
    n, m = len(items), len(patterns)
    pattern_of: list[int | None] = [None] * n
    item_of: list[int | None] = [None] * m
    buckets, wild, pattern_keys = _index_patterns(patterns, keyer)
    item_keys: list[Any] = [_NO_KEY] * n
    heads: dict[Any, int] = {}
    wild_head = 0

    def first_free(candidates: list[int], start: int, i: int) -> tuple[int | None, int]:
        while start < len(candidates) and item_of[candidates[start]] is not None:
            start += 1
        for position in range(start, len(candidates)):
            j = candidates[position]
            if item_of[j] is None and test(items[i], patterns[j]):
                return j, start
        return None, start

    for i, item in enumerate(items):
        found: int | None = None
        if buckets and keyer is not None:
            key = keyer.item_key(item)
            item_keys[i] = key
            try:
                bucket = buckets.get(key) if key is not _NO_KEY else None
            except TypeError:
                bucket = None
            if bucket:
                found, heads[key] = first_free(bucket, heads.get(key, 0), i)
        if found is None and wild:
            found, wild_head = first_free(wild, wild_head, i)
        if found is not None:
            pattern_of[i] = found
            item_of[found] = i
    if all(i is not None for i in item_of) or all(j is not None for j in pattern_of):
        return pattern_of, item_of
    _augment(items, patterns, test, pattern_of, item_of, pattern_keys, item_keys)
    return pattern_of, item_of


def _index_patterns(
    patterns: Sequence[Any], keyer: Keyer | None
) -> tuple[dict[Any, list[int]], list[int], list[Any]]:
    """``(buckets, wild, pattern_keys)``: the patterns' indexes by key, then unkeyed.

    ``buckets`` maps a key to the indexes of the patterns under it, in order; ``wild``
    lists the patterns any item may match (no key, or an unhashable one); ``pattern_keys``
    is each pattern's key, ``WILD`` for those in ``wild``.
    """
    buckets: dict[Any, list[int]] = {}
    wild: list[int] = []
    pattern_keys: list[Any] = [_WILD] * len(patterns)
    for j, pattern in enumerate(patterns):
        key = keyer.pattern_key(pattern) if keyer is not None else _WILD
        if key is not _WILD:
            try:
                buckets.setdefault(key, []).append(j)
            except TypeError:
                key = _WILD
        pattern_keys[j] = key
        if key is _WILD:
            wild.append(j)
    return buckets, wild, pattern_keys


def _items_by_key(item_keys: Sequence[Any]) -> dict[Any, list[int]]:
    """The indexes of the items under each hashable key (items without a key left out)."""
    by_key: dict[Any, list[int]] = {}
    for i, key in enumerate(item_keys):
        if key is not _NO_KEY:
            try:
                by_key.setdefault(key, []).append(i)
            except TypeError:
                continue
    return by_key


def _flip_path(
    reached: Mapping[int, int],
    i: int,
    start: int,
    pattern_of: list[int | None],
    item_of: list[int | None],
) -> None:
    """Pair the free item ``i`` along the augmenting path back to the pattern ``start``."""
    while True:
        owner = reached[i]
        previous = item_of[owner]
        item_of[owner] = i
        pattern_of[i] = owner
        if owner == start or previous is None:
            break
        i = previous


def _augment(
    items: Sequence[Any],
    patterns: Sequence[Any],
    test: Callable[[Any, Any], bool],
    pattern_of: list[int | None],
    item_of: list[int | None],
    pattern_keys: list[Any],
    item_keys: list[Any],
) -> None:
    """Improve a greedy assignment along augmenting paths until it is maximum."""
    by_key = _items_by_key(item_keys)
    everyone = list(range(len(items)))
    cache: dict[tuple[int, int], bool] = {}

    def ok(i: int, j: int) -> bool:
        result = cache.get((i, j))
        if result is None:
            result = cache[(i, j)] = test(items[i], patterns[j])
        return result

    def candidates(j: int) -> list[int]:
        key = pattern_keys[j]
        if key is _WILD:
            return everyone
        return by_key.get(key, [])

    for start in range(len(patterns)):
        if item_of[start] is not None:
            continue
        reached: dict[int, int] = {}
        queue = [start]
        augmented = False
        while queue and not augmented:
            j = queue.pop(0)
            for i in candidates(j):
                if i in reached or not ok(i, j):
                    continue
                reached[i] = j
                if pattern_of[i] is None:
                    _flip_path(reached, i, start, pattern_of, item_of)
                    augmented = True
                    break
                queue.append(pattern_of[i])  # type: ignore[arg-type]
