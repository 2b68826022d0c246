"""`evolve`: `dataclasses.replace` for the records a game action copies several times (issue 44).

`dataclasses.replace` walks the class's fields on every call and builds the copy through `__init__`, which
a frozen dataclass writes field by field through `object.__setattr__`: for a game's 26-field record or its
state that was a few per cent of an action's CPU. A dataclass whose `__init__` does nothing but store its
fields (no `__post_init__`, no `InitVar`, every field set by `__init__`) can be copied without it: its
fields read in one go, the copy's slots or `__dict__` filled directly. The copy is the one `replace` makes,
field for field; anything else (a class that validates in `__post_init__`, an unknown field's name) goes to
`dataclasses.replace` itself, which then does and raises what it always did.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any, TypeVar

Record = TypeVar("Record")


@dataclasses.dataclass(frozen=True)
class _Copying:
    names: frozenset[str]
    read: attrgetter[Any]
    """All the fields' values of a record, in field order, as one tuple."""
    ordered: tuple[str, ...]
    slots: bool


_COPYING: dict[type, _Copying | None] = {}


def evolve(record: Record, /, **changes: Any) -> Record:
    """`dataclasses.replace(record, **changes)`, cheaper where the class allows it (see the module)."""
    kind = type(record)
    try:
        copying = _COPYING[kind]
    except KeyError:
        copying = _COPYING[kind] = _copying(kind)
    if copying is None or not changes.keys() <= copying.names:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    copy: Any = object.__new__(kind)
    if copying.slots:
        store = object.__setattr__
        for name, value in zip(copying.ordered, copying.read(record), strict=True):
            store(copy, name, value)
        for name, value in changes.items():
            store(copy, name, value)
        return copy  # type: ignore[no-any-return]
    state = record.__dict__
    if len(state) != len(copying.ordered):  # something beside the fields (a cached value): replace's way
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    fields = copy.__dict__
    fields.update(state)
    fields.update(changes)
    return copy  # type: ignore[no-any-return]


def _copying(kind: type) -> _Copying | None:
    """How to copy `kind`'s records, or None where only `__init__` may make one."""
    if "__dataclass_fields__" not in kind.__dict__ or hasattr(kind, "__post_init__"):
        return None  # a subclass that is no dataclass of its own, or one that checks its fields
    ordered = tuple(field.name for field in dataclasses.fields(kind))
    init = kind.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if (
        len(ordered) < 2
        or code is None
        or code.co_filename != "<string>"  # not the `__init__` dataclasses wrote: one of the class's own
        or code.co_varnames[1 : 1 + code.co_argcount - 1 + code.co_kwonlyargcount] != ordered
    ):
        return None  # or one that takes an InitVar, or leaves a field out
    slots = "__slots__" in kind.__dict__ and not any(
        "__dict__" in base.__dict__ for base in kind.__mro__ if base is not object
    )
    return _Copying(frozenset(ordered), attrgetter(*ordered), ordered, slots)
