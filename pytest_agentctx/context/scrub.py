"""Values scrubbed of secrets: every string of a context, a model, a mapping, a sequence or
a dataclass, with a redactor's secrets replaced by ``REDACTED``.

:func:`redact` walks the context's own immutable containers (:class:`~._seq.Seq`,
:class:`~._seq.FrozenDict`) as well as Python's, and builds them again only where a
string changed. Snapshots and report records pass what they write through it with the
active redactor (:mod:`pytest_agentctx.redaction.active`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

from pydantic import BaseModel

from pytest_agentctx.context._seq import FrozenDict, Seq

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from pytest_agentctx.redaction.redactor import Redactor

T = TypeVar("T")


def redact(value: T, redactor: Redactor) -> T:
    """``value`` with every string in it scrubbed of the redactor's secrets.

    Strings, mapping keys and values, lists, tuples, sets, the context's sequences,
    pydantic models (copied with their changed fields) and dataclass instances (copied
    likewise) are walked; containers and models in which nothing changed are returned as
    they are, so a value without secrets costs one pass and no copy. Other objects are
    returned unchanged.
    """
    if not redactor.secret_values:
        return value
    # the scrubber returns a value of the kind it was given (a mapping as a dict)
    return _Scrubber(redactor).value(value)  # type: ignore[return-value]


class _Scrubber:
    def __init__(self, redactor: Redactor) -> None:
        self.text = redactor.text
        self.model_type = BaseModel
        self.frozen_dict = FrozenDict
        self.seq = Seq

    def value(self, value: object) -> object:
        kind = type(value)
        if kind is str:
            return self.text(cast(str, value))
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if isinstance(value, self.model_type):
            return self.model(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if kind is list or kind is tuple or kind is self.seq:
            return self.sequence(cast("Sequence[object]", value))
        if isinstance(value, str):
            scrubbed = self.text(value)
            return value if scrubbed == value else scrubbed
        if isinstance(value, set | frozenset):
            items = [self.value(item) for item in value]
            return value if all(map(_same, items, value)) else type(value)(items)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.dataclass(value)
        return value

    def model(self, value: BaseModel) -> BaseModel:
        changed: dict[str, object] = {}
        for name, item in value.__dict__.items():
            scrubbed = self.value(item)
            if scrubbed is not item:
                changed[name] = scrubbed
        return value.model_copy(update=changed) if changed else value

    def mapping(self, value: Mapping[object, object]) -> object:
        changed = False
        scrubbed: dict[object, object] = {}
        for key, item in value.items():
            new_key = self.value(key) if isinstance(key, str) else key
            new_item = self.value(item)
            changed = changed or new_key is not key or new_item is not item
            scrubbed[new_key] = new_item
        if not changed:
            return value
        return self.frozen_dict(scrubbed) if isinstance(value, self.frozen_dict) else scrubbed

    def sequence(self, value: Sequence[object]) -> object:
        items = cast("Seq[object]", value).to_list() if type(value) is self.seq else value
        scrubbed = [self.value(item) for item in items]
        if all(map(_same, scrubbed, items)):
            return value
        if type(value) is self.seq:
            return self.seq(scrubbed)
        return tuple(scrubbed) if type(value) is tuple else scrubbed

    def dataclass(self, value: DataclassInstance) -> object:
        changed: dict[str, object] = {}
        for item in dataclasses.fields(value):
            current = getattr(value, item.name, None)
            scrubbed = self.value(current)
            if scrubbed is not current:
                changed[item.name] = scrubbed
        if not changed:
            return value
        new = copy.copy(value)
        for name, scrubbed in changed.items():
            object.__setattr__(new, name, scrubbed)
        return new


def _same(a: object, b: object) -> bool:
    return a is b
