"""Comparing the items of requests, per-turn annotations aside.

A request continues a conversation when the items of the conversation's last request are
a prefix of its own. Clients move some annotations from one request to the next without
changing the conversation (Anthropic's ``cache_control`` marker, and a text turned into a
one-block content list to carry it; Bedrock's ``cachePoint`` blocks):
:func:`without_annotations` drops them, and
:func:`same_items` compares the items fast, dropping them only where the items differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def item_hash(item: object) -> int:
    """The hash of a request item, annotations aside (the key of the builder's index)."""
    return hash(repr(without_annotations(item)))


#: Keys a client may move from one request to the next without changing the conversation:
#: Anthropic's prompt-caching marker (also accepted by OpenAI-compatible gateways), which
#: clients put on the newest message of every call and take off the older ones.
_ANNOTATIONS = frozenset({"cache_control"})
#: Bedrock Converse's prompt-caching marker: a content block of its own
#: (``{"cachePoint": {"type": "default"}}``) that clients move to the newest message.
_MARKER_BLOCKS = frozenset({"cachePoint"})
#: Content blocks that hold only a text; ``[{"type": "text", "text": t}]`` is ``t``.
_TEXT_BLOCKS = frozenset({"text", "input_text"})


def without_annotations(value: object) -> object:
    """``value`` without per-turn annotations, for comparing requests.

    ``cache_control`` keys and ``cachePoint`` blocks are dropped at any depth, and a
    content list of one text block reads as its text (clients turn a string into a block
    to mark it, then back). Returns ``value`` itself when there is nothing to drop, so the
    common case copies nothing.
    """
    if isinstance(value, Mapping):
        changed = False
        result: dict[object, object] = {}
        for key, item in value.items():
            if key in _ANNOTATIONS:
                changed = True
                continue
            canonical = without_annotations(item)
            if key == "content":
                canonical = _single_text(canonical)
            changed = changed or canonical is not item
            result[key] = canonical
        return result if changed else value
    if isinstance(value, list):
        kept = [item for item in value if not _marker_block(item)]
        items = [without_annotations(item) for item in kept]
        if len(kept) != len(value) or any(
            new is not old for new, old in zip(items, kept, strict=True)
        ):
            return items
    return value


def _marker_block(item: object) -> bool:
    return isinstance(item, Mapping) and len(item) == 1 and next(iter(item)) in _MARKER_BLOCKS


def _single_text(content: object) -> object:
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if (
            isinstance(block, Mapping)
            and block.keys() == {"type", "text"}
            and block["type"] in _TEXT_BLOCKS
            and isinstance(block["text"], str)
        ):
            return block["text"]
    return content


def same_items(previous: Sequence[object], items: Sequence[object], length: int) -> bool:
    """Whether ``previous`` is ``items[:length]``, annotations aside (see
    :func:`without_annotations`). The items are compared in C first, stopping at the first
    difference; only the items that differ are compared again without annotations."""
    if previous is items or previous == items[:length]:
        return True
    return len(previous) == length and all(
        old == new or without_annotations(old) == without_annotations(new)
        for old, new in zip(previous, items, strict=False)
    )


def tools_hash(tools: object) -> int:
    """The hash of a request's tools, annotations aside."""
    text = repr(tools)
    if any(key in text for key in _ANNOTATIONS | _MARKER_BLOCKS):
        text = repr(without_annotations(tools))
    return hash(text)
